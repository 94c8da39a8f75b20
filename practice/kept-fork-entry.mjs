/**
 * The process of a kept fork (kept-forks.ts): vitest's own forks worker, loaded as it is, plus an
 * answer to one message of ours, `{ __piProbe__: true }`, with what a test could leave behind in
 * the process: active handles and timers by type, the process's listeners by event, the
 * environment and the working directory (once vitest's own timer of the run has fired). vitest's
 * worker ignores messages that are not its own.
 */
import { createHash } from "node:crypto";

const entry = process.env.PI_KEPT_FORK_VITEST_ENTRY;
// The tests of this process never see the variable.
delete process.env.PI_KEPT_FORK_VITEST_ENTRY;
if (!entry) throw new Error("kept-fork-entry.mjs: PI_KEPT_FORK_VITEST_ENTRY (vitest's forks worker) is not set");

/** Events whose listeners outlive a test file when a test forgets to remove them. */
const EVENTS = [
  "uncaughtException",
  "unhandledRejection",
  "rejectionHandled",
  "warning",
  "exit",
  "beforeExit",
  "SIGINT",
  "SIGTERM",
];

function probe() {
  const resources = {};
  for (const type of process.getActiveResourcesInfo()) resources[type] = (resources[type] ?? 0) + 1;
  const listeners = Object.fromEntries(EVENTS.map((event) => [event, process.listenerCount(event)]));
  // vitest sets VITEST_WORKER_ID / VITEST_POOL_ID per run: not a test's doing.
  const env = Object.entries(process.env)
    .filter(([name]) => !name.startsWith("VITEST_"))
    .sort(([a], [b]) => (a < b ? -1 : 1));
  const envHash = createHash("sha1").update(JSON.stringify(env)).digest("hex");
  return { resources, listeners, env: envHash, cwd: process.cwd() };
}

// vitest's worker first: the channel reads only once a listener is there, and a message read
// before vitest's listener exists (its "start") would reach only ours.
await import(entry);
/** vitest's runner sends task updates throttled: a timer of up to 100 ms outlives every run. */
const THROTTLE_MS = 150;

process.on("message", (message) => {
  if (message?.__piProbe__ !== true) return;
  const now = probe();
  if (!now.resources.Timeout) process.send({ __piProbe__: now });
  else setTimeout(() => process.send({ __piProbe__: probe() }), THROTTLE_MS);
});
