/**
 * An eval case runs only from inside a worker's suite folders, judged on real paths
 * (`confinedCase`): a folder whose name merely begins with two dots is inside; a path that climbs
 * out, by `..` or by a link, is not.
 */
import { mkdir, mkdtemp, realpath, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { confinedCase, suiteRoots } from "../src/eval-run.js";

let root: string;
let suite: string;

beforeAll(async () => {
  root = await realpath(await mkdtemp(path.join(tmpdir(), "pi-restate-confine-")));
  suite = path.join(root, "suite");
  for (const dir of ["suite/..foo", "suite/...", "suite/a/..b", "suite-other/case", "elsewhere"]) {
    await mkdir(path.join(root, dir), { recursive: true });
  }
  await symlink(path.join(root, "elsewhere"), path.join(suite, "..link"));
});

afterAll(async () => {
  if (root !== undefined) await rm(root, { recursive: true, force: true });
});

const refusal = (caseDir: string) =>
  `EvalRun: ${caseDir} is not a case inside this worker's suite folders; it runs cases only from: ${suite}`;

it("runs a case in a folder whose name begins with two dots, inside a suite", async () => {
  const roots = await suiteRoots([suite]);
  expect(await confinedCase(path.join(suite, "..foo"), roots)).toBe(path.join(suite, "..foo"));
  expect(await confinedCase(path.join(suite, "..."), roots)).toBe(path.join(suite, "..."));
  expect(await confinedCase(path.join(suite, "a", "..b"), roots)).toBe(path.join(suite, "a", "..b"));
  // `..` that stays inside resolves to a folder inside
  expect(await confinedCase(path.join(suite, "a", "..", "..foo"), roots)).toBe(path.join(suite, "..foo"));
});

it("refuses a case that climbs out of the suite, by `..`, by a sibling named like it, by a link, or the suite itself", async () => {
  const roots = await suiteRoots([suite]);
  for (const caseDir of [
    path.join(suite, "..", "elsewhere"),
    path.join(suite, "..", "suite-other", "case"),
    path.join(suite, "..link"), // named like the dotted folder, a link out
    suite,
    path.join(suite, "missing"),
  ]) {
    await expect(confinedCase(caseDir, roots)).rejects.toThrow(refusal(caseDir));
  }
});
