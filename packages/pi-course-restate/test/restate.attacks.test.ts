/**
 * Attacks on the engine package that its own security test does not make (issue 55, items 2–4):
 * a folder another local user planted where the engine is told to live, credentials the journal
 * guard missed under other names, and a retry backoff that would not back off.
 *
 * The folder attack needs root (to make a folder as `nobody`); it fails, saying so, without it.
 */
import { spawnSync } from "node:child_process";
import { chmod, mkdtemp, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startEngine } from "../src/engine.js";

let root: string;

beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), "pi-restate-attacks-"));
  await chmod(root, 0o1777); // like /tmp: anyone may make a folder here
});

afterAll(async () => {
  if (root !== undefined) await rm(root, { recursive: true, force: true });
});

/** Runs `command` as `nobody`; fails (never skips) when this machine cannot. */
function asNobody(...command: string[]): void {
  if (process.getuid?.() !== 0)
    throw new Error("this attack is made as another local user (runuser -u nobody): run it as root (CI does).");
  const done = spawnSync("runuser", ["-u", "nobody", "--", ...command], { encoding: "utf8" });
  if (done.error !== undefined || done.status !== 0) {
    throw new Error(`runuser -u nobody ${command.join(" ")} failed (${done.error?.message ?? done.stderr})`);
  }
}

it("refuses an engine folder another local user made (they would know its token, or swap its keys)", async () => {
  const dir = path.join(root, "planted");
  // another user makes the folder first and leaves a credential whose token they know
  asNobody("mkdir", "-m", "0777", dir);
  asNobody("sh", "-c", `printf '{"url":"http://127.0.0.1:1","token":"known-to-nobody"}' > ${dir}/client.json`);
  const started = startEngine({ dir, workers: [], log: () => undefined });
  const engine = await started.catch(() => undefined);
  await engine?.stop();
  await expect(started).rejects.toThrow(
    `the engine's folder ${dir} belongs to another user (uid 65534); whoever owns it can read or replace its credential and keys. ` +
      "Give --dir a folder of your own (it is made 0700 when missing).",
  );
}, 60_000);

it("refuses an engine folder that is a symbolic link (planted where the engine would make its folder)", async () => {
  const theirs = path.join(root, "theirs");
  asNobody("mkdir", "-m", "0777", theirs);
  const dir = path.join(root, "linked");
  await symlink(theirs, dir);
  const started = startEngine({ dir, workers: [], log: () => undefined });
  const engine = await started.catch(() => undefined);
  await engine?.stop();
  await expect(started).rejects.toThrow(`the engine's folder ${dir} is a symbolic link`);
}, 60_000);
