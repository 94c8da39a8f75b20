/**
 * One of the processes of session.lock.test.ts that take one session lock at the same instant.
 * `node lock-taker.js <folder> <rounds> <t0> <spacingMs>` (bundled, bundled-script.ts): round r takes the lock of
 * `<folder>/<r>.jsonl` at `t0 + r * spacingMs` (a timer, then a busy wait for the last
 * milliseconds, so every taker starts within a tick of the others) and prints `r ok` (taken; never
 * released: the process keeps every lock it took until it exits) or `r locked`. After the last
 * round it stays until its stdin ends: a taker that exited would leave stale locks, which a slower
 * taker of the same round could then rightly take over.
 */
import path from "node:path";
import { acquireSessionLock, SessionLockedError } from "../../src/session/session-lock.js";

const [folder, rounds, t0, spacing] = process.argv.slice(2);
if (folder === undefined || rounds === undefined || t0 === undefined || spacing === undefined)
  throw new Error("usage: lock-taker <folder> <rounds> <t0> <spacingMs>");
/** How long before its instant a taker stops sleeping and spins (a timer alone wakes each process at another moment). */
const SPIN_MS = 10;

for (let r = 0; r < Number(rounds); r++) {
  const at = Number(t0) + r * Number(spacing);
  const sleep = at - SPIN_MS - Date.now();
  if (sleep > 0) await new Promise((resolve) => setTimeout(resolve, sleep));
  while (Date.now() < at) {
    // busy for the last milliseconds: six spinning processes for the whole wait (8 s, then 120 ms a round) held both cores
  }
  try {
    await acquireSessionLock(path.join(folder, `${r}.jsonl`));
    process.stdout.write(`${r} ok\n`);
  } catch (error) {
    if (!(error instanceof SessionLockedError)) throw error;
    process.stdout.write(`${r} locked\n`);
  }
}
// hold every lock until the test has heard from every taker
process.stdin.resume();
await new Promise((resolve) => process.stdin.once("end", resolve));
