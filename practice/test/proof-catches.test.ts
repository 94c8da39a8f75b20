/**
 * The proof must fail when the course is broken. A tiny synthetic course (two chapters, one lab
 * each, a chapter-02 region inside chapter 01's file) is written to a temporary repository; the
 * healthy course passes the proof, and each kind of breakage is caught:
 * a broken marker, a lab body leaked outside its region, a test that passes against its site.
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
function course(edit: Partial<Record<"adder" | "test01" | "test02" | "test00", string>> = {}): Sources {
  const root = mkdtempSync(join(tmpdir(), "pi-mini-course-"));
  roots.push(root);
  const pkg = join(root, "packages", "pi-course");
  const files: Record<string, string> = {
    "src/adder.ts": edit.adder ?? ADDER,
    "test/01-adder.test.ts": edit.test01 ?? TEST_01,
    "test/02-twice.test.ts": edit.test02 ?? TEST_02,
    "src/show.ts": SHOW,
    "test/00-show.test.ts": edit.test00 ?? TEST_00,
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

  it("fails for a region that is never closed", async () => {
    const sources = course({ adder: ADDER.replace(/\/\/ #endregion\n$/, "") });
    const report = await proveChapter(catalogue, ch01, { sources, staticOnly: true });
    expect(report.problems).toEqual([expect.stringMatching(/cannot generate: .*adder\.ts:\d+: .*never closed/)]);
  });

  it("fails for a malformed marker", async () => {
    const sources = course({ adder: ADDER.replace("// #region lab 1.1 add", "// #region lab1.1 add") });
    const report = await proveChapter(catalogue, ch01, { sources, staticOnly: true });
    expect(report.problems).toEqual([expect.stringMatching(/cannot generate: .*adder\.ts:3: malformed chapter marker/)]);
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
    expect(report.problems).toContainEqual(expect.stringMatching(/^snapshot\(01\): src\/adder\.ts holds the body of lab 2\.1 twice, a later chapter's/));
  });

  it("fails when a view does not typecheck (chapter 01 code using chapter 02's)", async () => {
    const sources = course({ adder: ADDER + "\nexport const alias = twice;\n" });
    const report = await proveChapter(catalogue, ch01, { sources, views: ["snapshot"] });
    expect(report.problems).toContainEqual(expect.stringMatching(/^snapshot\(01\): tsc --noEmit failed:\n.*Cannot find name 'twice'/));
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
});
