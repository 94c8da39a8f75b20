#!/usr/bin/env node
/**
 * The entry point of `npm start` (see `main.ts`). Ctrl-C aborts the run cleanly (the trace
 * still ends with `agent_end`); a second Ctrl-C exits at once.
 */
import { runMain } from "./main.js";

const controller = new AbortController();
process.on("SIGINT", () => {
  if (controller.signal.aborted) process.exit(130);
  controller.abort();
});

// A reader that goes away (`npm start -s -- --json | head`) ends the run quietly.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code !== "EPIPE") throw error;
  controller.abort();
  process.exit(0);
});

process.exitCode = await runMain(
  process.argv.slice(2),
  { stdout: process.stdout, stderr: process.stderr, env: process.env },
  controller.signal,
);
