/**
 * The wrong versions' runner (practice/wrong-runner.ts) keeps its vitest worker process from one
 * version to the next (practice/kept-forks.ts). These tests run it, as the proof does, on a small
 * folder whose test imports a file that imports the file a version changes (test → a → b), and
 * check that a kept worker never runs a version against another version's code: each version is
 * caught in its own run, and the version after it (on the same file or another) sees the original
 * text. They also check that the worker really is kept (else they would prove nothing), that the
 * name pattern is each version's own, and that a version that leaves something running in the
 * worker gets it ended, so the next version starts in a new process.
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { REPO_ROOT } from "../catalogue.js";
import { compiledWrongRunner } from "../compiled-wrong-runner.js";
import type { WrongJob, WrongResult } from "../wrong-runner.js";

const B = "export const b = (): number => 1;\n";
const A = 'import { b } from "./b.js";\n\nexport const a = (): number => b() + 1;\n';
const TEST = `import { expect, it } from "vitest";
import { a } from "../src/a.js";
import { b } from "../src/b.js";

it("Lab 1.1 · a is b plus one", () => {
  expect(a()).toBe(2);
});

it("Lab 1.2 · b is one", () => {
  expect(b()).toBe(1);
});
`;

const roots: string[] = [];
afterAll(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

/** A folder holding src/a.ts, src/b.ts and test/chain.test.ts, its node_modules the repository's. */
function folder(): string {
  const root = mkdtempSync(join(tmpdir(), "pi-wrong-runner-"));
  roots.push(root);
  const dir = join(root, "folder");
  mkdirSync(join(dir, "src"), { recursive: true });
  mkdirSync(join(dir, "test"));
  writeFileSync(join(dir, "src", "b.ts"), B);
  writeFileSync(join(dir, "src", "a.ts"), A);
  writeFileSync(join(dir, "test", "chain.test.ts"), TEST);
  symlinkSync(join(REPO_ROOT, "node_modules"), join(dir, "node_modules"));
  return dir;
}

const job = (file: string, find: string, replace: string, lab: string, failsWith = ""): WrongJob => ({
  file,
  find,
  replace,
  pattern: `Lab ${lab.replace(".", "\\.")}\\b`,
  testFiles: ["test/chain.test.ts"],
  failsWith,
  limitMs: 60_000,
});

interface Ran {
  results: WrongResult[];
  workers: { started: number; reused: number; ended: number }[];
  output: string;
}

/** Runs the runner on `jobs` in `dir`, as practice/proof.ts does. */
function runRunner(dir: string, jobs: WrongJob[]): Promise<Ran> {
  const input = join(dir, "..", "jobs.json");
  writeFileSync(input, JSON.stringify(jobs));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [compiledWrongRunner(), input], {
      cwd: dir,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.setEncoding("utf8").on("data", (text: string) => (output += text));
    child.stderr.setEncoding("utf8").on("data", (text: string) => (output += text));
    child.on("error", reject);
    child.on("close", () => {
      const lines = output.split("\n");
      const parsed = (tag: string) =>
        lines.filter((l) => l.startsWith(`${tag} `)).map((l) => JSON.parse(l.slice(tag.length + 1)));
      resolve({ results: parsed("@@wrong"), workers: parsed("@@spent")[0]?.workers ?? [], output });
    });
  });
}

/** Each result's tests as "state title", and the first line of each failure. */
const outcome = (result: WrongResult) =>
  result.files.flatMap((f) => [
    ...f.errors.map((e) => `file error: ${e.split("\n")[0]}`),
    ...f.tests
      .filter((t) => t.state !== "skipped")
      .map((t) => [`${t.state} ${t.title}`, ...t.errors.map((e) => `  ${e.split("\n")[0]}`)].join("\n")),
  ]);

it("a kept worker runs each version against its own code: a change at the bottom of an import chain is caught, and the next version, on another file or the same one, sees the original text", async () => {
  const dir = folder();
  const ran = await runRunner(dir, [
    // b, at the bottom of test → a → b, made wrong: a() is 6.
    job("src/b.ts", "=> 1", "=> 5", "1.1", "expected 6 to be 2"),
    // A harmless change to a: passes only if b is back to 1 in the worker (a kept b or a kept a that holds the old b would give 6).
    job("src/a.ts", "b() + 1", "1 + b()", "1.1"),
    // b made wrong again, caught by the other lab's test only: the pattern is this version's.
    job("src/b.ts", "=> 1", "=> 7", "1.2", "expected 7 to be 1"),
    // A harmless change to b itself: its original text, in a worker that ran two wrong versions of it.
    job("src/b.ts", "(): number", "(): 1 | number", "1.1"),
  ]);
  expect(ran.results.map(outcome), ran.output).toEqual([
    ["failed Lab 1.1 · a is b plus one\n  expected 6 to be 2 // Object.is equality"],
    ["passed Lab 1.1 · a is b plus one"],
    ["failed Lab 1.2 · b is one\n  expected 7 to be 1 // Object.is equality"],
    ["passed Lab 1.1 · a is b plus one"],
  ]);
  // One process ran all four versions (after its warm-up run), so the above proves the invalidation.
  expect(ran.workers, ran.output).toEqual([{ started: 1, reused: 4, ended: 0 }]);
  // Every file is written back.
  expect(readFileSync(join(dir, "src", "b.ts"), "utf8")).toBe(B);
  expect(readFileSync(join(dir, "src", "a.ts"), "utf8")).toBe(A);
}, 120_000);

it("a version that leaves a timer running in its worker gets the worker ended: the next version runs in a new process", async () => {
  const dir = folder();
  const ran = await runRunner(dir, [
    // Wrong, and it leaves an interval in the process that would tick through every later version.
    job(
      "src/b.ts",
      "export const b = (): number => 1;",
      "setInterval(() => {}, 60_000);\nexport const b = (): number => 3;",
      "1.2",
      "expected 3 to be 1",
    ),
    job("src/a.ts", "b() + 1", "1 + b()", "1.1"),
  ]);
  expect(ran.results.map(outcome), ran.output).toEqual([
    ["failed Lab 1.2 · b is one\n  expected 3 to be 1 // Object.is equality"],
    ["passed Lab 1.1 · a is b plus one"],
  ]);
  expect(ran.workers, ran.output).toEqual([{ started: 2, reused: 2, ended: 1 }]);
}, 120_000);
