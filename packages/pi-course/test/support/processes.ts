/**
 * Real child processes for the crash tests: start one (a `.ts` script bundled), poll until
 * something holds, read a file that may not exist yet, kill a process that may be gone.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { bundledScript } from "./bundled-script.js";

/** A started process: its exit (code and signal), and what it has written so far. */
export interface StartedProcess {
  child: ChildProcess;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  output(): { stdout: string; stderr: string };
}

/**
 * `node script args` in `cwd` (a `.ts` script bundled first, bundled-script.ts: one process, so a SIGKILL kills it
 * all), with `env` over this process's environment. The child is added to `started`, for the
 * test file's cleanup.
 */
export function startProcess(
  script: string,
  args: readonly string[],
  options: { cwd: string; started: ChildProcess[]; env?: NodeJS.ProcessEnv },
): StartedProcess {
  const child = spawn(process.execPath, [script.endsWith(".ts") ? bundledScript(script) : script, ...args], {
    cwd: options.cwd,
    env: { ...process.env, ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  options.started.push(child);
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (d: Buffer) => (stdout += d.toString("utf8")));
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString("utf8")));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on("close", (code, signal) => resolve({ code, signal })),
  );
  return { child, exit, output: () => ({ stdout, stderr }) };
}

/** Polls `check` until it holds (a real process: no fixed sleep); fails after `ms` with `what()`. */
export async function until(check: () => boolean, what: () => string, ms = 120_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting: ${what()}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** The text of `file`, or "" while it does not exist. */
export function readText(file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return "";
  }
}

/** SIGKILL to `pid`, quietly when it is gone already. */
export function killQuietly(pid: number): void {
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // already gone
  }
}

/** Kills every child of `started` that is still running (a test file's `afterAll`). */
export function killStarted(started: readonly ChildProcess[]): void {
  for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
}

/** Whether `pid` runs (a killed orphan stays a zombie until its reaper collects it: that is not running). */
export function running(pid: number): boolean {
  const stat = readText(`/proc/${pid}/stat`);
  return stat !== "" && stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
}
