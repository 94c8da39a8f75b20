/**
 * practice/folder-runs.ts runs the views of a chapter one after the other in one folder and one
 * vitest instance. These tests show that each run sees exactly its view: a module changed deep
 * in the import graph (not the test file) is seen changed, a test file is seen changed, a file the
 * view drops is gone (and so is what a run left in the folder, or changed in it), a `-t` pattern
 * does not outlive its run, and a different package.json gets a fresh folder and runner. (vitest
 * keeps a transformed module until it is invalidated: without the folder naming the files it
 * wrote, the second run below saw "one".)
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { buildCatalogue, REPO_ROOT } from "../catalogue.js";
import { ChapterFolder, type RunOutcome } from "../folder-runs.js";
import type { View } from "../generate.js";

const text = (s: string) => ({ zh: s, en: s });
const [chapter] = buildCatalogue([
  {
    spec: {
      id: "01",
      slug: "words",
      title: text("words"),
      invariant: text("words"),
      adds: text("words"),
      files: [],
      labs: [{ id: "1.1", title: text("words") }],
      breakIt: text("words"),
    },
    source: "mini/01-words.ts",
  },
]).chapters;

const PACKAGE = (description: string, extra: Record<string, string> = {}) =>
  JSON.stringify({ name: "words", type: "module", description, devDependencies: { vitest: "*", vite: "*", ...extra } });

/** A view of the tiny course: src/deep.ts says `word`, reached through src/mid.ts; each test's title says what it saw. */
function view(word: string, more: Record<string, string> = {}, description = "practice"): View {
  const files: Record<string, string> = {
    "package.json": PACKAGE(description),
    "vitest.config.ts": 'import { defineConfig } from "vitest/config";\nexport default defineConfig({ test: {} });\n',
    "src/deep.ts": `export const word = ${JSON.stringify(word)};\n`,
    "src/mid.ts": 'export { word } from "./deep.js";\n',
    "test/01-words.test.ts": [
      'import { it } from "vitest";',
      'import { writeFileSync } from "node:fs";',
      'import { word } from "../src/mid.js";',
      'it(`Lab 1.1 · saw ${word}`, () => writeFileSync("left-by-a-test.txt", word));',
      'it("Lab 1.2 · another", () => {});',
      "",
    ].join("\n"),
    ...more,
  };
  return {
    chapter: chapter!,
    kind: "practice",
    files: new Map(Object.entries(files)),
    included: [],
    missingTests: [],
    done: [],
  };
}

const root = mkdtempSync(join(tmpdir(), "pi-folder-runs-"));
const folder = new ChapterFolder(join(root, "folder"), join(REPO_ROOT, "node_modules"), {
  ...process.env,
  VITEST: undefined,
  VITEST_POOL_ID: undefined,
  VITEST_WORKER_ID: undefined,
});
afterAll(async () => {
  await folder.close();
  rmSync(root, { recursive: true, force: true });
});

/** The titles of the tests that ran, with their state. */
function seen(outcome: RunOutcome): string[] {
  if ("failed" in outcome) throw new Error(outcome.failed);
  return outcome.report.files.flatMap((f) => f.tests.map((t) => `${f.name.split("/").pop()} › ${t.title}: ${t.state}`));
}

const LIMIT = 240_000;

describe("a chapter's views in one folder and one vitest", () => {
  it("each run sees its own view: a changed module deep in the graph, a changed or dropped test file, no leftovers, no stale pattern", async () => {
    const first = await folder.run(view("one"), ["test/01-words.test.ts"], undefined, LIMIT);
    expect(seen(first)).toEqual([
      "01-words.test.ts › Lab 1.1 · saw one: passed",
      "01-words.test.ts › Lab 1.2 · another: passed",
    ]);
    expect(existsSync(join(folder.folder, "left-by-a-test.txt"))).toBe(true);

    // Only src/deep.ts changed; the test file and src/mid.ts are the same text.
    const second = await folder.run(view("two"), ["test/01-words.test.ts"], "Lab 1\\.1\\b", LIMIT);
    expect(seen(second)).toEqual([
      "01-words.test.ts › Lab 1.1 · saw two: passed",
      "01-words.test.ts › Lab 1.2 · another: skipped",
    ]);

    // A second test file appears, then the view drops it again; the pattern of the run before is gone.
    const extra = { "test/01-more.test.ts": 'import { it } from "vitest";\nit("Lab 1.1 · more", () => {});\n' };
    const third = await folder.run(
      view("three", extra),
      ["test/01-more.test.ts", "test/01-words.test.ts"],
      undefined,
      LIMIT,
    );
    expect(seen(third)).toEqual([
      "01-more.test.ts › Lab 1.1 · more: passed",
      "01-words.test.ts › Lab 1.1 · saw three: passed",
      "01-words.test.ts › Lab 1.2 · another: passed",
    ]);
    const fourth = await folder.run(view("four"), ["test/01-words.test.ts"], undefined, LIMIT);
    expect(seen(fourth)).toEqual([
      "01-words.test.ts › Lab 1.1 · saw four: passed",
      "01-words.test.ts › Lab 1.2 · another: passed",
    ]);
    // The folder holds the view and what its own run wrote, nothing of the runs before.
    expect(readdirSync(join(folder.folder, "test")).sort()).toEqual(["01-words.test.ts"]);

    // A test that changes a file of the view changes it for its own run only.
    writeFileSync(join(folder.folder, "src", "deep.ts"), 'export const word = "changed by a test";\n');
    const again = await folder.run(view("four"), ["test/01-words.test.ts"], "Lab 1\\.1\\b", LIMIT);
    expect(seen(again)).toEqual([
      "01-words.test.ts › Lab 1.1 · saw four: passed",
      "01-words.test.ts › Lab 1.2 · another: skipped",
    ]);
  }, 600_000);

  it("a view whose packages differ gets a fresh folder and runner, linking its packages", async () => {
    const before = await folder.run(view("five", {}, "snapshot"), ["test/01-words.test.ts"], undefined, LIMIT);
    expect(seen(before)).toContain("01-words.test.ts › Lab 1.1 · saw five: passed");
    const other = view("six", { "package.json": PACKAGE("snapshot", { typescript: "*" }) });
    const fresh = await folder.run(other, ["test/01-words.test.ts"], undefined, LIMIT);
    expect(seen(fresh)).toContain("01-words.test.ts › Lab 1.1 · saw six: passed");
    expect(
      readdirSync(join(folder.folder, "node_modules"))
        .filter((name) => !name.startsWith("."))
        .sort(),
    ).toEqual(["typescript", "vite", "vitest"]);
  }, 600_000);

  it("a run that never ends is stopped with the runner's workers, reported, and the next run gets a fresh runner", async () => {
    const pidFile = join(root, "spinning-worker.pid");
    const spin = {
      "test/01-spin.test.ts": [
        'import { it } from "vitest";',
        'import { writeFileSync } from "node:fs";',
        `it("Lab 1.1 · never ends", () => { writeFileSync(${JSON.stringify(pidFile)}, String(process.pid)); for (;;) {} });`,
        "",
      ].join("\n"),
    };
    // Long enough for a loaded machine to start the test; the test itself never ends.
    const hung = await folder.run(view("seven", spin), ["test/01-spin.test.ts"], undefined, 30_000);
    expect(hung).toMatchObject({ failed: expect.stringContaining("the test run did not end in 30 s (stopped)") });
    const pid = Number(readFileSync(pidFile, "utf8"));
    const alive = () => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    for (let i = 0; i < 100 && alive(); i++) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(alive()).toBe(false);
    const after = await folder.run(view("eight"), ["test/01-words.test.ts"], undefined, LIMIT);
    expect(seen(after)).toContain("01-words.test.ts › Lab 1.1 · saw eight: passed");
    // A runner was stopped: the CPU of the folder's runs is not known.
    expect(await folder.close()).toBeUndefined();
  }, 600_000);
});
