/** The engine's attack tests act as another local user (`runuser -u nobody`). */
import { spawnSync } from "node:child_process";
import { chmod, copyFile, mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";

/** Fails (never skips) when this machine cannot run a process as another user; `what` names the test and what it does so. */
export function requireAnotherUser(what: string): void {
  if (process.getuid?.() !== 0) {
    throw new Error(`${what} as another local user (runuser -u nobody), which needs root: run it as root (CI does).`);
  }
  const probe = spawnSync("runuser", ["-u", "nobody", "--", "true"], { encoding: "utf8" });
  if (probe.error !== undefined || probe.status !== 0) {
    throw new Error(
      `runuser -u nobody does not work here (${probe.error?.message ?? probe.stderr}): install util-linux's runuser ` +
        "and keep the user `nobody`; this test acts as another local user and must not be skipped.",
    );
  }
}

/**
 * A folder of its own (0777, prefix `prefix`) that another user writes its logs in, holding a copy
 * of `script` (0644, by its base name) for that user to run: the folder's path.
 */
export async function folderForAnotherUser(prefix: string, script: string): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  await chmod(dir, 0o777);
  const copy = path.join(dir, path.basename(script));
  await copyFile(script, copy);
  await chmod(copy, 0o644);
  return dir;
}

/** Runs `command` as `nobody` and waits for it; fails (never skips) when this machine cannot, or it fails. */
export function asNobody(...command: string[]): void {
  if (process.getuid?.() !== 0)
    throw new Error("this attack is made as another local user (runuser -u nobody): run it as root (CI does).");
  const done = spawnSync("runuser", ["-u", "nobody", "--", ...command], { encoding: "utf8" });
  if (done.error !== undefined || done.status !== 0) {
    throw new Error(`runuser -u nobody ${command.join(" ")} failed (${done.error?.message ?? done.stderr})`);
  }
}
