/**
 * Unit tests of the course machinery: markers, the catalogue, writing a folder, the target
 * rules of `npm run practice`. The per-chapter proof is in chapters.test.ts.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { buildCatalogue, loadCatalogue, REPO_ROOT, type ChapterSpec } from "../catalogue.js";
import { resolveTarget } from "../cli.js";
import { buildView, labsOf, packageSpecifiers, scanSources, writeView } from "../generate.js";
import { focusedCommand, renderCard } from "../learning.js";
import { renderFile, scanFile } from "../markers.js";

const SOURCE = [
  "import { a } from './a.js';",
  "// #region ch03",
  "import { b } from './b.js';",
  "// #endregion",
  "export function f(x: number): number {",
  "  // #region lab 2.1 f",
  "  const y = x + 1;",
  "  // #region ch05",
  "  log(y);",
  "  // #endregion",
  "  return y;",
  "  // #endregion",
  "}",
  "",
].join("\n");

describe("markers", () => {
  it("snapshot(N) keeps the lines of chapters <= N and drops every marker", () => {
    expect(renderFile(SOURCE, "f.ts", 2, { upTo: 2 })).toBe(
      [
        "import { a } from './a.js';",
        "export function f(x: number): number {",
        "  const y = x + 1;",
        "  return y;",
        "}",
        "",
      ].join("\n"),
    );
    expect(renderFile(SOURCE, "f.ts", 2, { upTo: 5 })).toBe(
      [
        "import { a } from './a.js';",
        "import { b } from './b.js';",
        "export function f(x: number): number {",
        "  const y = x + 1;",
        "  log(y);",
        "  return y;",
        "}",
        "",
      ].join("\n"),
    );
  });

  it("practice(N) replaces each lab body of N with one construction site at the marker's indent", () => {
    expect(renderFile(SOURCE, "f.ts", 2, { upTo: 2, cut: 2 })).toBe(
      [
        "import { a } from './a.js';",
        "export function f(x: number): number {",
        '  throw new Error("Lab 2.1 f：尚未实现 (not implemented yet)");',
        "}",
        "",
      ].join("\n"),
    );
    // A later practice view keeps the earlier lab's reference body.
    expect(renderFile(SOURCE, "f.ts", 2, { upTo: 3, cut: 3 })).toContain("  const y = x + 1;");
  });

  it("records lab bodies and regions as they stand in their own chapter", () => {
    const scan = scanFile(SOURCE, "f.ts", 2);
    expect(scan.labs).toEqual([
      { lab: "2.1", chapter: 2, symbol: "f", file: "f.ts", line: 6, body: ["  const y = x + 1;", "  return y;"] },
    ]);
    expect(scan.regions.map((r) => [r.chapter, r.line, r.body])).toEqual([
      [3, 2, ["import { b } from './b.js';"]],
      [5, 8, ["  log(y);"]],
    ]);
  });

  it.each([
    ["// #region ch02\nx\n// #endregion", /region ch02 inside code of chapter 02/],
    ["// #region ch03\n// #region ch03\n// #endregion\n// #endregion", /:2: region ch03 inside code of chapter 03/],
    ["// #region lab 3.1 f\n// #endregion", /lab 3\.1 sits in code of chapter 02/],
    ["// #region lab 2.1 f\n// #region lab 2.2 g\n// #endregion\n// #endregion", /lab 2\.2 inside lab 2\.1/],
    ["x\n// #endregion", /:2: `\/\/ #endregion` without an open region/],
    ["// #region ch04\nx", /:1: region ch04 is never closed/],
    ["// #region chapter 4\n// #endregion", /:1: malformed chapter marker/],
    ["x(); // #region ch04", /:1: malformed chapter marker/],
    ["//#region ch04\n// #endregion", /:1: malformed chapter marker/],
  ])("refuses %j", (source, message) => {
    expect(() => scanFile(source, "f.ts", 2)).toThrow(message);
  });
});

const text = (s: string) => ({ zh: s, en: s });
const spec = (over: Partial<ChapterSpec>): ChapterSpec => ({
  id: "05",
  slug: "provider",
  title: text("t"),
  invariant: text("i"),
  adds: text("a"),
  files: [],
  labs: [{ id: "5.1", title: text("l") }],
  breakIt: text("b"),
  ...over,
});

describe("the catalogue", () => {
  it("refuses a chapter file whose name does not match its id and slug", () => {
    expect(() => buildCatalogue([{ spec: spec({}), source: "x/05-providers.ts" }])).toThrow(/must be 05-provider\.ts/);
  });

  it("refuses a file owned twice, a lab of another chapter, and a rebuild chapter without labs", () => {
    expect(() =>
      buildCatalogue([
        { spec: spec({ files: ["src/a.ts"] }), source: "x/05-provider.ts" },
        {
          spec: spec({ id: "06", slug: "tools", files: ["src/a.ts"], labs: [{ id: "6.1", title: text("l") }] }),
          source: "x/06-tools.ts",
        },
      ]),
    ).toThrow(/src\/a\.ts is already owned by x\/05-provider\.ts/);
    expect(() =>
      buildCatalogue([{ spec: spec({ labs: [{ id: "6.1", title: text("l") }] }), source: "x/05-provider.ts" }]),
    ).toThrow(/lab "6\.1" must be "5\.M"/);
    expect(() => buildCatalogue([{ spec: spec({ labs: [] }), source: "x/05-provider.ts" }])).toThrow(
      /at least one lab/,
    );
  });

  it("accepts 3 and 03, refuses a malformed number and an unknown chapter with the valid list", async () => {
    const catalogue = await loadCatalogue();
    const ids = catalogue.chapters.map((c) => c.id);
    const [first] = catalogue.chapters;
    expect(catalogue.get(String(first!.number)).id).toBe(first!.id);
    expect(catalogue.get(first!.id).id).toBe(first!.id);
    for (const bad of ["3a", "", "003", "-1", "3.1"]) {
      expect(() => catalogue.get(bad)).toThrow(new RegExp(`not a chapter number.*one of: ${ids.join(", ")}\\.`));
    }
    expect(() => catalogue.get("99")).toThrow(`no chapter 99). Valid chapters: ${ids.join(", ")}.`);
  });

  it("the real catalogue agrees with the markers in the sources", async () => {
    const catalogue = await loadCatalogue();
    expect(() => scanSources(catalogue)).not.toThrow();
  });
});

const temp = mkdtempSync(join(tmpdir(), "pi-practice-unit-"));
afterAll(() => rmSync(temp, { recursive: true, force: true }));

describe("the guides' commands", () => {
  it("every lab shows its fast focused run in LEARNING.md and on the card, with --reporter=verbose; a lab that uses others says so", async () => {
    const catalogue = await loadCatalogue();
    const scan = scanSources(catalogue);
    for (const chapter of catalogue.rebuild) {
      const learning = String(buildView(catalogue, chapter, "practice", undefined, { scan }).files.get("LEARNING.md"));
      const card = renderCard(chapter, labsOf(chapter, scan), scan.regions);
      expect(learning).toContain("--reporter=verbose");
      expect(card).toContain("--reporter=verbose");
      expect(learning).not.toContain('npm test -- -t "');
      for (const lab of chapter.labs) {
        expect(focusedCommand(chapter.id, lab.id)).toBe(
          `npx vitest run test/${chapter.id}- -t "Lab ${lab.id.replace(".", "\\.")}\\b"`,
        );
        expect(learning).toContain(focusedCommand(chapter.id, lab.id));
        expect(card).toContain(focusedCommand(chapter.id, lab.id));
        for (const used of lab.uses ?? []) {
          const line = learning.split("\n").find((l) => l.includes("依赖") && l.includes(`Lab ${used}`));
          expect(line, `LEARNING.md of ${chapter.id} says that Lab ${lab.id} needs Lab ${used}`).toBeDefined();
        }
      }
    }
  });
});

describe("writing a folder", () => {
  it("leaves nothing behind when writing fails, not even the parent folders it made", async () => {
    const catalogue = await loadCatalogue();
    const view = buildView(catalogue, catalogue.rebuild[0]!, "practice");
    const target = join(temp, "made", "by", "me", "ch");
    expect(() =>
      writeView(view, target, {
        beforeCommit: (staging) => {
          expect(existsSync(join(staging, "LEARNING.md"))).toBe(true);
          throw new Error("disk full");
        },
      }),
    ).toThrow("disk full");
    expect(existsSync(join(temp, "made"))).toBe(false);
    expect(readdirSync(temp)).toEqual([]);
  });

  it("writes the whole folder, and refuses to write over an existing one", async () => {
    const catalogue = await loadCatalogue();
    const view = buildView(catalogue, catalogue.rebuild[0]!, "practice");
    const target = join(temp, "ok");
    writeView(view, target);
    expect(readdirSync(target).sort()).toEqual(
      // Chapter 01's code is course material in kit/, not library code in src/.
      [".gitignore", "LEARNING.md", "kit", "package.json", "test", "tsconfig.json", "vitest.config.ts"].sort(),
    );
    expect(() => writeView(view, target)).toThrow(/already exists/);
    rmSync(target, { recursive: true });
  });

  it("a view pins the extra dev packages of every chapter whose tests it holds (chapter 08's tests spawn tsx)", async () => {
    const catalogue = await loadCatalogue();
    const scan = scanSources(catalogue); // once: every view reads the same sources
    for (const chapter of catalogue.chapters) {
      for (const kind of ["snapshot", "practice"] as const) {
        const view = buildView(catalogue, chapter, kind, undefined, { scan });
        const pkg = JSON.parse(view.files.get("package.json") as string);
        for (const held of view.included) {
          for (const name of held.devDependencies ?? []) {
            expect(
              pkg.devDependencies[name],
              `${kind}(${chapter.id}) holds chapter ${held.id}'s tests, which need ${name}`,
            ).toBeDefined();
          }
        }
      }
    }
  });

  it("a view's package.json lists every package its code reaches, also through require.resolve (chapter 16's sandbox loads quickjs-wasi's wasm)", async () => {
    expect(packageSpecifiers('const wasm = require.resolve("quickjs-wasi/quickjs.wasm");\nrequire( "yaml" )')).toEqual([
      "quickjs-wasi/quickjs.wasm",
      "yaml",
    ]);
    const catalogue = await loadCatalogue();
    const scan = scanSources(catalogue);
    for (const id of ["16", "19"]) {
      const chapter = catalogue.chapters.find((c) => c.id === id)!;
      const pkg = JSON.parse(
        buildView(catalogue, chapter, "practice", undefined, { scan }).files.get("package.json") as string,
      );
      expect(pkg.dependencies["quickjs-wasi"], `chapter ${id}`).toBeDefined();
    }
    const before = catalogue.chapters.find((c) => c.id === "15")!;
    const pkg15 = JSON.parse(
      buildView(catalogue, before, "practice", undefined, { scan }).files.get("package.json") as string,
    );
    expect(pkg15.dependencies?.["quickjs-wasi"]).toBeUndefined();
  });

  it("carries the repository's allowScripts, which cover every installed package with an install script", async () => {
    const catalogue = await loadCatalogue();
    const root = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8"));
    const scan = scanSources(catalogue);
    for (const chapter of catalogue.rebuild) {
      const pkg = JSON.parse(
        buildView(catalogue, chapter, "practice", undefined, { scan }).files.get("package.json") as string,
      );
      expect(pkg.allowScripts, `chapter ${chapter.id}`).toEqual(root.allowScripts);
    }
    // npm 11 warns at install about any install script allowScripts does not decide.
    const listed = execFileSync("npm", ["install-scripts", "ls"], { cwd: REPO_ROOT, encoding: "utf8" });
    expect(listed).toMatch(/No packages with unreviewed install scripts/);
  }, 30_000);
});

describe("where `npm run practice` writes", () => {
  it("resolves a relative folder against the directory npm was run from", async () => {
    const catalogue = await loadCatalogue();
    expect(resolveTarget("../my-03", "03", catalogue, "/home/learner/repo")).toBe("/home/learner/my-03");
    expect(resolveTarget(undefined, "03", catalogue, "/anywhere")).toBe(join(REPO_ROOT, "..", "pi-practice-03"));
  });

  it("refuses an existing path and a folder anywhere inside the repository", async () => {
    const catalogue = await loadCatalogue();
    mkdirSync(join(temp, "exists"));
    expect(() => resolveTarget(join(temp, "exists"), "03", catalogue, "/")).toThrow(/already exists/);
    for (const inside of ["packages/pi-course/x", "practice/x", "x", "docs/new/x"]) {
      expect(() => resolveTarget(inside, "03", catalogue, REPO_ROOT)).toThrow(/is inside the repository/);
    }
    expect(resolveTarget(join(temp, "fresh"), "03", catalogue, REPO_ROOT)).toBe(join(temp, "fresh"));
    rmSync(join(temp, "exists"), { recursive: true });
  });
});
