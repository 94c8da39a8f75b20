#!/usr/bin/env node
/**
 * The entry point of `npm start` (see `main.ts`).
 *
 * This process is the launcher: it starts the agent apart, without the API key in its
 * environment, and exits with its code (see `launch.ts`). In the agent: Ctrl-C aborts the run
 * (the trace still ends with `agent_end`, the exit code is 130); a second Ctrl-C exits at once.
 * SIGTERM and SIGHUP, or losing the launcher, abort the run, kill the running commands and exit
 * (143, 129) within a second.
 */
import { AGENT_SOCKET_VARIABLE, canLaunchApart, connectToLauncher, launchAgent, type AgentChannel } from "./launch.js";

const socketPath = process.env[AGENT_SOCKET_VARIABLE];
// `export SESSION_FILE` reads one file and writes one: no agent, no key, nothing to launch apart.
const exporting = process.argv[2] === "export";
if (socketPath === undefined && canLaunchApart && !exporting) await launchAgent(process.argv.slice(2));
// Only the agent loads the agent (the launcher stays small). It loads while it connects to the
// launcher below: the two wait on different things (files, the launcher and the middle process).
const loading = Promise.all([import("../coding-tools/processes.js"), import("./main.js")]);
// Until the agent's code has loaded no command runs, so there is none to kill.
let killLiveProcessGroups = (): void => {};

const controller = new AbortController();
let channel: AgentChannel | undefined;
let stoppedWith: number | undefined;
/** Exits at once (the launcher hears the code first). */
const exit = (code: number): void => {
  if (channel === undefined) process.exit(code);
  void channel.sendExit(code).then(() => process.exit(code));
};
const stop = (signal: "SIGINT" | "SIGTERM" | "SIGHUP", number: number) => {
  channel?.acknowledge(signal);
  if (signal === "SIGINT" && !controller.signal.aborted) {
    controller.abort("Ctrl-C (SIGINT)");
    return;
  }
  // A second Ctrl-C, SIGTERM or SIGHUP: no grace.
  controller.abort(signal);
  killLiveProcessGroups();
  stoppedWith ??= 128 + number;
  if (signal === "SIGINT") exit(130);
  else setTimeout(() => exit(stoppedWith!), 1000);
};
process.on("SIGINT", () => stop("SIGINT", 2));
process.on("SIGTERM", () => stop("SIGTERM", 15));
process.on("SIGHUP", () => stop("SIGHUP", 1));

// A reader that goes away (`npm start -s -- --json | head`, a closed terminal) ends the run quietly.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code !== "EPIPE" && error.code !== "EIO") throw error;
  controller.abort("a closed output");
  killLiveProcessGroups();
  exit(stoppedWith ?? 0);
});

let env = process.env;
if (socketPath !== undefined) {
  channel = await connectToLauncher(socketPath, () => stop("SIGHUP", 1)).catch((error: Error) => {
    process.stderr.write(`error: the launcher of this agent is gone (${error.message}).\n`);
    return process.exit(1);
  });
  env = { ...process.env, ...channel.handover };
}
const [processes, { runMain }] = await loading;
killLiveProcessGroups = processes.killLiveProcessGroups;
const stdin = process.stdin.isTTY === true ? process.stdin : undefined;
const code = await runMain(
  process.argv.slice(2),
  { stdout: process.stdout, stderr: process.stderr, env, ...(stdin && { stdin }) },
  controller.signal,
);
// Stopped by SIGTERM or SIGHUP: that signal's code, not the 130 of an interrupted run.
await channel?.sendExit(stoppedWith ?? code);
process.exitCode = stoppedWith ?? code;
