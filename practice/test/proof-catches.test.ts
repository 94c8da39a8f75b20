/**
 * The proof must fail when the course is broken. A tiny synthetic course (two chapters, one lab
 * each, a chapter-02 region inside chapter 01's file) is written to a temporary repository; the
 * healthy course passes the proof, and each kind of breakage is caught:
 * a broken marker, a lab body leaked outside its region, a test that passes against its site.
 * A second mini course (one chapter, three labs) shows the lab-order check: a test that needs a
 * later lab than the one it is named after is caught, and so is a test file not in lab order.
 */
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { buildCatalogue, REPO_ROOT, type ChapterSpec } from "../catalogue.js";
import { buildView, type Sources } from "../generate.js";
import { proveChapter } from "../proof.js";

const ADDER = `/** Adds. */
export function add(a: number, b: number): number {
  // #region lab 1.1 add
  return a + b;
  // #endregion
}
// #region ch02

/** Doubles. */
export function twice(x: number): number {
  // #region lab 2.1 twice
  const doubled = add(x, x);
  return doubled;
  // #endregion
}
// #endregion
`;

const TEST_01 = `import { expect, it } from "vitest";
import { add } from "../src/adder.js";

it("Lab 1.1 · adds two numbers", () => {
  expect(add(2, 3)).toBe(5);
});
`;

const TEST_02 = `import { expect, it } from "vitest";
import { twice } from "../src/adder.js";

it("Lab 2.1 · doubles a number", () => {
  expect(twice(4)).toBe(8);
});
`;

const SHOW = `import { twice } from "./adder.js";

/** What the observe chapter runs. */
export function show(): string {
  return \`twice(21) = \${twice(21)}\`;
}
`;

const TEST_00 = `import { expect, it } from "vitest";
import { show } from "../src/show.js";

it("Prologue · shows the whole library at work", () => {
  expect(show()).toBe("twice(21) = 42");
});
`;

const text = (s: string) => ({ zh: s, en: s });
const spec = (id: string, slug: string, files: string[], lab: string): ChapterSpec => ({
  id,
  slug,
  title: text(slug),
  invariant: text("it adds up"),
  adds: text("a function"),
  files,
  labs: [{ id: lab, title: text(slug) }],
  breakIt: text("break it"),
});

const observe: ChapterSpec = {
  ...spec("00", "show", ["src/show.ts"], "0.1"),
  mode: "observe",
  labs: [],
  observe: [{ command: "npm test", text: text("predict the number") }],
};
const catalogue = buildCatalogue([
  { spec: observe, source: "mini/00-show.ts" },
  { spec: spec("01", "adder", ["src/adder.ts"], "1.1"), source: "mini/01-adder.ts" },
  { spec: spec("02", "twice", [], "2.1"), source: "mini/02-twice.ts" },
]);
type Chapter = (typeof catalogue.chapters)[0];
const [ch00, ch01, ch02] = catalogue.chapters as [Chapter, Chapter, Chapter];

const roots: string[] = [];
afterAll(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

/** A temporary repository holding the mini course, with `edit` applied to its files. */
function course(
  edit: Partial<Record<"adder" | "test01" | "test02" | "test00", string>> = {},
  extra: Record<string, string> = {},
): Sources {
  const root = mkdtempSync(join(tmpdir(), "pi-mini-course-"));
  roots.push(root);
  const pkg = join(root, "packages", "pi-course");
  const files: Record<string, string> = {
    "src/adder.ts": edit.adder ?? ADDER,
    "test/01-adder.test.ts": edit.test01 ?? TEST_01,
    "test/02-twice.test.ts": edit.test02 ?? TEST_02,
    "src/show.ts": SHOW,
    "test/00-show.test.ts": edit.test00 ?? TEST_00,
    ...extra,
  };
  for (const [file, content] of Object.entries(files)) {
    mkdirSync(dirname(join(pkg, file)), { recursive: true });
    writeFileSync(join(pkg, file), content);
  }
  cpSync(join(REPO_ROOT, "package.json"), join(root, "package.json"));
  cpSync(join(REPO_ROOT, "tsconfig.base.json"), join(root, "tsconfig.base.json"));
  writeFileSync(join(pkg, "package.json"), readFileSync(join(REPO_ROOT, "packages", "pi-course", "package.json")));
  return { packageDir: pkg, repoRoot: root };
}

describe("the proof catches a broken course", () => {
  it("passes the healthy mini course (so the failures below are the breakages')", async () => {
    const sources = course();
    const [zero, one, two] = await Promise.all([
      proveChapter(catalogue, ch00, { sources }),
      proveChapter(catalogue, ch01, { sources, staticOnly: true }),
      proveChapter(catalogue, ch02, { sources }),
    ]);
    expect(zero.problems).toEqual([]);
    expect(one.problems).toEqual([]);
    expect(two.problems).toEqual([]);
  }, 300_000);

  it("an observe chapter shows the whole library plus its own files, which no rebuild view holds", () => {
    const sources = course();
    const show = buildView(catalogue, ch00, "practice", sources);
    expect([...show.files.keys()].filter((f) => f.startsWith("src/") || f.startsWith("test/")).sort()).toEqual([
      "src/adder.ts",
      "src/show.ts",
      "test/00-show.test.ts",
      "test/01-adder.test.ts",
      "test/02-twice.test.ts",
    ]);
    expect(show.files.get("src/adder.ts")).toContain("return doubled;");
    expect(show.files.get("LEARNING.md")).toContain("模式：**观察 (observe)**");
    expect(show.files.get("LEARNING.md")).toContain("1. `npm test`");
    const two = buildView(catalogue, ch02, "snapshot", sources);
    expect(two.files.has("src/show.ts")).toBe(false);
    expect(two.files.has("test/00-show.test.ts")).toBe(false);
  });

  it("fails for an exact text a test requires that neither the guide nor src/ says, naming the test, the text and where to say it", async () => {
    const strict = ADDER.replace(
      "  return a + b;\n",
      "  if (!Number.isFinite(a + b)) throw new RangeError(`add: the sum of ${a} and ${b} is not finite`);\n  return a + b;\n",
    );
    const test = TEST_01.replace(
      "expect(add(2, 3)).toBe(5);",
      "expect(add(2, 3)).toBe(5);\n  expect(() => add(Infinity, 1)).toThrow(/add: the sum of Infinity and 1 is not finite/);",
    );
    const sources = course({ adder: strict, test01: test });
    const report = await proveChapter(catalogue, ch01, { sources, staticOnly: true });
    expect(report.problems).toEqual([
      "practice(01): test/01-adder.test.ts:6 › Lab 1.1 · adds two numbers requires the text " +
        '"/add: the sum of Infinity and 1 is not finite/", but "add: the sum of", "is not finite" is said neither ' +
        "in the guide nor in src/ of the practice folder: quote it in the hint of lab 1.1 in mini/01-adder.ts or in the " +
        "doc comment of add (src/adder.ts); or make the test check only what matters (ids, numbers, paths, key phrases the guide names)",
    ]);
    // said in the guide (the lab's `says`), or in the doc comment kept above the construction site: told
    const said = buildCatalogue([
      {
        spec: {
          ...spec("01", "adder", ["src/adder.ts"], "1.1"),
          labs: [{ id: "1.1", title: text("adder"), says: ["add: the sum of ${a} and ${b} is not finite"] }],
        },
        source: "mini/01-adder.ts",
      },
    ]);
    expect((await proveChapter(said, said.chapters[0]!, { sources, staticOnly: true })).problems).toEqual([]);
    const documented = strict.replace(
      "/** Adds. */",
      "/** Adds. Throws a RangeError `add: the sum of ${a} and ${b} is not finite` for an infinite sum. */",
    );
    const withDoc = course({ adder: documented, test01: test });
    expect((await proveChapter(catalogue, ch01, { sources: withDoc, staticOnly: true })).problems).toEqual([]);
  });

  it("reads a sentence wherever an assertion expects it: an error field, a constant only assertions use; not a constant given to the code", async () => {
    const checked = ADDER.replace(
      "/** Adds. */\nexport function add(a: number, b: number): number {",
      "/** Checks a sum. */\nexport function check(sum: number): { error?: string } {\n  // #region lab 1.1 check\n" +
        '  return Number.isFinite(sum) ? {} : { error: "the sum is not finite, so nothing was added" };\n  // #endregion\n}\n\n' +
        "/** Adds. */\nexport function add(a: number, b: number): number {",
    );
    const test = TEST_01.replace(
      'import { add } from "../src/adder.js";',
      'import { add, check } from "../src/adder.js";',
    )
      .replace(
        "expect(add(2, 3)).toBe(5);",
        "expect(add(2, 3)).toBe(5);\n" +
          '  expect(check(Infinity)).toEqual({ error: "the sum is not finite, so nothing was added" });\n' +
          "  expect([check(NaN).error]).toEqual(EXPECTED);\n" +
          "  expect(add(GIVEN.length, 0)).toBe(GIVEN.length);\n" +
          "  expect(GIVEN).toBe(GIVEN);",
      )
      .concat(
        '\nconst EXPECTED = ["the sum is not finite, so nothing was added"];\n' +
          'const GIVEN = "a sentence the test gives the code";\n',
      );
    const sources = course({ adder: checked, test01: test });
    const report = await proveChapter(catalogue, ch01, { sources, staticOnly: true });
    expect(
      report.problems.map((p) =>
        /^practice\(01\): test\/01-adder\.test\.ts:(\d+) ›.*?requires the text (".*?")/.exec(p)?.slice(1),
      ),
    ).toEqual([
      ["6", '"the sum is not finite, so nothing was added"'],
      ["12", '"the sum is not finite, so nothing was added"'],
    ]);
    const said = checked.replace(
      "/** Checks a sum. */",
      "/** Checks a sum: `the sum is not finite, so nothing was added`. */",
    );
    const told = await proveChapter(catalogue, ch01, {
      sources: course({ adder: said, test01: test }),
      staticOnly: true,
    });
    expect(told.problems).toEqual([]);
  });

  it("fails for a region that is never closed", async () => {
    const sources = course({ adder: ADDER.replace(/\/\/ #endregion\n$/, "") });
    const report = await proveChapter(catalogue, ch01, { sources, staticOnly: true });
    expect(report.problems).toEqual([expect.stringMatching(/cannot generate: .*adder\.ts:\d+: .*never closed/)]);
  });

  it("fails for a malformed marker", async () => {
    const sources = course({ adder: ADDER.replace("// #region lab 1.1 add", "// #region lab1.1 add") });
    const report = await proveChapter(catalogue, ch01, { sources, staticOnly: true });
    expect(report.problems).toEqual([
      expect.stringMatching(/cannot generate: .*adder\.ts:3: malformed chapter marker/),
    ]);
  });

  it("fails when a lab body leaks into practice (a copy outside the lab region)", async () => {
    const leak = "\nexport function plus(a: number, b: number): number {\n  return a + b;\n}\n";
    const sources = course({ adder: ADDER + leak });
    const report = await proveChapter(catalogue, ch01, { sources, staticOnly: true });
    expect(report.problems).toEqual([
      expect.stringMatching(/^practice\(01\): src\/adder\.ts holds the reference body of lab 1\.1 add/),
    ]);
  });

  it("fails when later-chapter lines leak into an earlier view (a copy outside the chNN region)", async () => {
    const leak = "\nexport function twice2(x: number): number {\n  const doubled = add(x, x);\n  return doubled;\n}\n";
    const sources = course({ adder: ADDER + leak });
    const report = await proveChapter(catalogue, ch01, { sources, staticOnly: true });
    expect(report.problems).toContainEqual(
      expect.stringMatching(/^snapshot\(01\): src\/adder\.ts holds the body of lab 2\.1 twice, a later chapter's/),
    );
  });

  it("fails when a view does not typecheck (chapter 01 code using chapter 02's)", async () => {
    const sources = course({ adder: ADDER + "\nexport const alias = twice;\n" });
    const report = await proveChapter(catalogue, ch01, { sources, views: ["snapshot"] });
    expect(report.problems).toContainEqual(
      expect.stringMatching(/^snapshot\(01\): tsc --noEmit failed:\n.*Cannot find name 'twice'/),
    );
  }, 300_000);

  it("fails when the code loads a package its folder's package.json does not declare (as npm install of that folder would)", async () => {
    // A form of loading the generator's scan does not see, so package.json lacks "yaml"; the repository has it.
    const loads = `import { createRequire } from "node:module";\nexport const yaml = createRequire(import.meta.url)("yaml");\n`;
    const sources = course({ adder: loads + ADDER });
    expect(
      JSON.parse(buildView(catalogue, ch01, "snapshot", sources).files.get("package.json") as string),
    ).not.toHaveProperty("dependencies.yaml");
    const report = await proveChapter(catalogue, ch01, { sources, views: ["snapshot"] });
    expect(report.problems).toContainEqual(expect.stringMatching(/^snapshot\(01\):[^]*Cannot find module 'yaml'/));
  }, 300_000);

  it("fails when a chapter's test would pass against the construction site", async () => {
    const weak = TEST_01.replace("expect(add(2, 3)).toBe(5);", 'expect(typeof add).toBe("function");');
    const sources = course({ test01: weak });
    const report = await proveChapter(catalogue, ch01, { sources, views: ["practice"] });
    expect(report.problems).toEqual([
      "practice(01): test/01-adder.test.ts › Lab 1.1 · adds two numbers PASSES against the construction sites; " +
        "it must fail until lab 1.1 is written",
    ]);
  }, 300_000);

  it("runs each wrong version in one folder and one vitest, reverted after each: reports one not caught, one caught with other words, an escaping error, a missing text", async () => {
    const wrong = (what: string, replace: string, failsWith = "expected -1 to be 5", find = "return a + b;") => ({
      lab: "1.1",
      what,
      file: "src/adder.ts",
      find,
      replace,
      failsWith,
    });
    const wrongs = buildCatalogue([
      {
        spec: {
          ...spec("01", "adder", ["src/adder.ts"], "1.1"),
          wrong: [
            wrong("subtracts", "return a - b;"),
            // caught only if the previous version was written back and vitest re-read the file
            wrong("the operands swapped", "return b + a;"),
            wrong("subtracts, said otherwise", "return a - b;", "the sum is wrong"),
            wrong("throws later", 'setTimeout(() => { throw new Error("late boom"); });\n  return a - b;'),
            wrong("not there", "return 0;", "x", "return a * b;"),
          ],
        },
        source: "mini/01-adder.ts",
      },
    ]);
    const report = await proveChapter(wrongs, wrongs.chapters[0]!, { sources: course(), views: ["snapshot"] });
    expect(report.problems).toEqual([
      "wrong(01: not there): src/adder.ts must hold the text to replace exactly once, found 0 time(s); fix `find` in mini/01-adder.ts",
      "wrong(01: the operands swapped): every test of lab 1.1 PASSES on a wrong implementation (the operands swapped); add a test that catches it",
      'wrong(01: subtracts, said otherwise): the tests of lab 1.1 fail on a wrong implementation (subtracts, said otherwise), but none says "the sum is wrong" in an assertion: Lab 1.1 · adds two numbers: expected -1 to be 5 // Object.is equality',
      "wrong(01: throws later): an error escapes the tests of lab 1.1, unhandled, on a wrong implementation (throws later); " +
        "in a full run it fails whatever test runs next: late boom",
    ]);
    expect(report.counts["wrong versions"]).toBe(4);
  }, 300_000);
});

const CALC = `/** Adds. */
export function add(a: number, b: number): number {
  // #region lab 1.1 add
  return a + b;
  // #endregion
}

/** Subtracts. */
export function sub(a: number, b: number): number {
  // #region lab 1.2 sub
  return a - b;
  // #endregion
}

/** Negates. */
export function neg(a: number): number {
  // #region lab 1.3 neg
  return -a;
  // #endregion
}
`;

const CALC_TEST = `import { expect, it } from "vitest";
import { add, neg, sub } from "../src/calc.js";

it("Lab 1.1 · adds", () => {
  expect(add(2, 3)).toBe(5);
});

it("Lab 1.2 · subtracts", () => {
  expect(sub(5, 3)).toBe(2);
});

it("Lab 1.3 · negates", () => {
  expect(neg(5)).toBe(-5);
});
`;

const calcCatalogue = buildCatalogue([
  {
    spec: {
      ...spec("01", "calc", ["src/calc.ts"], "1.1"),
      labs: ["1.1", "1.2", "1.3"].map((id) => ({ id, title: text(`lab ${id}`) })),
    },
    source: "mini/01-calc.ts",
  },
]);
const calc = calcCatalogue.chapters[0]!;
const calcCourse = (test: string) => course({}, { "src/calc.ts": CALC, "test/01-calc.test.ts": test });

describe("the lab-order check: labs can be done in the catalogue's order", () => {
  it("passes the healthy three-lab course, and LEARNING.md names the first red the first test really hits", async () => {
    const report = await proveChapter(calcCatalogue, calc, { sources: calcCourse(CALC_TEST) });
    expect(report.problems).toEqual([]);
    expect(report.folders.filter((f) => f.includes("-progress-"))).toHaveLength(2);
  }, 300_000);

  it.concurrent("fails when a lab's test needs a LATER lab (its test is red after its own lab is written)", async () => {
    const early = CALC_TEST.replace(
      "expect(add(2, 3)).toBe(5);",
      "expect(add(2, 3)).toBe(5);\n  expect(neg(add(2, 3))).toBe(-5);",
    );
    const report = await proveChapter(calcCatalogue, calc, { sources: calcCourse(early), views: ["practice"] });
    // Said once, in the view right after lab 1.1 (a later view runs only its last lab and its next).
    expect([...report.problems].sort()).toEqual([
      "progress(01: 1.1 written, 1.2 next): test/01-calc.test.ts › Lab 1.1 · adds fails with lab 1.3 neg's construction site, " +
        "a LATER lab than 1.1: a learner doing the labs in order cannot make it pass (name the test after the lab it needs, " +
        "reorder the labs, or move the region)",
    ]);
  }, 300_000);

  it.concurrent("fails when a lab's test is red with a later lab's error", async () => {
    const wrong = CALC_TEST.replace("expect(sub(5, 3)).toBe(2);", "expect(sub(neg(-5), 3)).toBe(2);");
    const report = await proveChapter(calcCatalogue, calc, { sources: calcCourse(wrong), views: ["practice"] });
    // In the order of sort(): the views finish in any order.
    expect([...report.problems].sort()).toEqual([
      expect.stringMatching(
        /^practice\(01\): test\/01-calc\.test\.ts › Lab 1\.2 · subtracts fails, but not with lab 1\.2's not-implemented error: .*Lab 1\.3 neg：尚未实现/,
      ),
      expect.stringMatching(
        /^progress\(01: 1\.1 written, 1\.2 next\): test\/01-calc\.test\.ts › Lab 1\.2 · subtracts fails, but not with lab 1\.2's not-implemented error \(it hits lab 1\.3 neg's site\)/,
      ),
      expect.stringMatching(
        /^progress\(01: 1\.1, 1\.2 written, 1\.3 next\): test\/01-calc\.test\.ts › Lab 1\.2 · subtracts fails with lab 1\.3 neg's construction site, a LATER lab/,
      ),
    ]);
  }, 300_000);

  it.concurrent("fails when LEARNING.md's first red is not the error the first test of lab 1 really hits", async () => {
    // Lab 1.1 has two sites; its first test calls twice( by name, but reaches add's site first.
    const two =
      CALC +
      "\n/** Doubles. */\nexport function twice(a: number): number {\n  // #region lab 1.1 twice\n  return a * 2;\n  // #endregion\n}\n";
    const test = CALC_TEST.replace(
      'import { add, neg, sub } from "../src/calc.js";',
      'import { add, neg, sub, twice } from "../src/calc.js";',
    ).replace(
      "expect(add(2, 3)).toBe(5);",
      "expect([add].map((f) => f(2, 3))).toEqual([5]);\n  expect(twice(2)).toBe(4);",
    );
    const sources = course({}, { "src/calc.ts": two, "test/01-calc.test.ts": test });
    const report = await proveChapter(calcCatalogue, calc, { sources, views: ["practice"], progress: false });
    expect(report.problems).toEqual([
      'practice(01): LEARNING.md predicts the first red "Lab 1.1 twice：尚未实现 (not implemented yet)", but the first test of ' +
        'lab 1.1 (Lab 1.1 · adds) fails with "Lab 1.1 add：尚未实现 (not implemented yet)"',
    ]);
  }, 300_000);

  it.concurrent('fails when a describe name holds a lab id (-t "Lab 1.1" would run the Lab 1.2 test inside)', async () => {
    const wrapped = CALC_TEST.replace(
      'it("Lab 1.2 · subtracts", () => {\n  expect(sub(5, 3)).toBe(2);\n});',
      'describe("Lab 1.1 · more", () => {\n  it("Lab 1.2 · subtracts", () => {\n    expect(sub(5, 3)).toBe(2);\n  });\n});',
    ).replace("import { expect, it }", "import { describe, expect, it }");
    expect(wrapped).toContain('describe("Lab 1.1 · more"');
    const report = await proveChapter(calcCatalogue, calc, { sources: calcCourse(wrapped), views: ["snapshot"] });
    expect(report.problems).toEqual([
      'snapshot(01): test/01-calc.test.ts › Lab 1.2 · subtracts sits in a describe named "Lab 1.1 …"; keep lab ids out of describe names',
    ]);
  }, 300_000);

  it.concurrent("fails when a test file is not in lab order, and for a test-order waiver once the order is right", async () => {
    const adds = 'it("Lab 1.1 · adds", () => {\n  expect(add(2, 3)).toBe(5);\n});\n\n';
    const late = CALC_TEST.replace(adds, "") + "\n" + adds.trimEnd() + "\n";
    expect(late.indexOf("Lab 1.1 ·")).toBeGreaterThan(late.indexOf("Lab 1.3 ·"));
    const waived = buildCatalogue([
      { spec: { ...calcCatalogue.chapters[0]!, testOrderWaiver: "not yet" }, source: "mini/01-calc.ts" },
    ]);
    // (A waiver that excuses a file out of order is what keeps chapters 07 and 08 green for now.)
    const [unordered, stale] = await Promise.all([
      proveChapter(calcCatalogue, calc, { sources: calcCourse(late), views: ["snapshot"] }),
      proveChapter(waived, waived.chapters[0]!, { sources: calcCourse(CALC_TEST), views: ["snapshot"] }),
    ]);
    expect(unordered.problems).toEqual([
      'snapshot(01): test/01-calc.test.ts is not in lab order: "Lab 1.1 · adds" comes after "Lab 1.3 · negates"; ' +
        "put each lab's tests after the earlier labs' tests",
    ]);
    expect(stale.problems).toEqual([
      "snapshot(01): the tests of chapter 01 are in lab order now; remove testOrderWaiver in mini/01-calc.ts",
    ]);
  }, 300_000);

  it.concurrent("fails when a lab's test is red with another lab's error (hidden in practice(N) by `uses`)", async () => {
    // Lab 1.2's test reaches lab 1.3 before its own lab; `uses` silences practice(01), not the order.
    const wrong = CALC_TEST.replace("expect(sub(5, 3)).toBe(2);", "expect(sub(neg(-5), 3)).toBe(2);");
    const used = buildCatalogue([
      {
        spec: {
          ...spec("01", "calc", ["src/calc.ts"], "1.1"),
          labs: [
            { id: "1.1", title: text("add") },
            { id: "1.2", title: text("sub"), uses: ["1.3"] },
            { id: "1.3", title: text("neg") },
          ],
        },
        source: "mini/01-calc.ts",
      },
    ]);
    const report = await proveChapter(used, used.chapters[0]!, { sources: calcCourse(wrong), views: ["practice"] });
    expect(report.problems).toEqual([
      "progress(01: 1.1, 1.2 written, 1.3 next): test/01-calc.test.ts › Lab 1.2 · subtracts fails with lab 1.3 neg's construction site, " +
        "a LATER lab than 1.2: a learner doing the labs in order cannot make it pass (name the test after the lab it needs, " +
        "reorder the labs, or move the region)",
    ]);
  }, 300_000);
});
