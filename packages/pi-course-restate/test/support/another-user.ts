/** The engine's attack tests act as another local user (`runuser -u nobody`). */
import { spawnSync } from "node:child_process";

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
