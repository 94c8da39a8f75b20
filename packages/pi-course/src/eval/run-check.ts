/**
 * Chapter 14: running a case's `check`, the executable that judges a run.
 *
 * It runs in the workspace the agent left, in a process group of its own, its every process
 * marked (`PI_COURSE_CALL`, as the `bash` tool marks a command's), so that when it ends or its
 * time is up whatever it started goes with it: its group, and a child that left the group
 * (`setsid`, a double fork) found by the mark. stdout and stderr are kept together as the
 * evidence the report shows. Exit 0 passes; anything else, a signal or the time limit fails.
 */
import { spawn } from "node:child_process";
import { CALL_MARKER_VARIABLE, killGroup, killMarkedProcesses, newCallMarker } from "../coding-tools/processes.js";
import { startTimer } from "../base/timer.js";

/** What the check did. */
export interface CheckOutcome {
  /** The exit code, or null when it was killed (by the time limit or a signal). */
  exitCode: number | null;
  /** The signal that ended it, if any. */
  signal: string | null;
  /** Whether the time limit killed it. */
  timedOut: boolean;
  /** stdout and stderr as they came, cut to `MAX_CHECK_OUTPUT` bytes (head and tail kept). */
  output: string;
  /** Wall time, in milliseconds. */
  ms: number;
  /** Set when the check could not be started at all (an infrastructure failure). */
  startError?: string;
}

/** The most output kept from a check (head and tail, each half). */
export const MAX_CHECK_OUTPUT = 64 * 1024;

/**
 * Runs `check` in `cwd` with `env`, killed (its whole group) after `timeLimitMs` (`undefined`: no
 * limit, see `userDuration`). Never rejects.
 */
export function runCheck(
  check: string,
  cwd: string,
  env: NodeJS.ProcessEnv,
  timeLimitMs: number | undefined,
): Promise<CheckOutcome> {
  const started = Date.now();
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let dropped = 0;
    const tail: Buffer[] = [];
    let tailSize = 0;
    const keep = (data: Buffer) => {
      if (size < MAX_CHECK_OUTPUT / 2) {
        chunks.push(data);
        size += data.length;
        return;
      }
      tail.push(data);
      tailSize += data.length;
      while (tailSize - tail[0]!.length >= MAX_CHECK_OUTPUT / 2) {
        dropped += tail[0]!.length;
        tailSize -= tail.shift()!.length;
      }
    };
    let timedOut = false;
    const marker = newCallMarker();
    const child = spawn(check, [], {
      cwd,
      env: { ...env, [CALL_MARKER_VARIABLE]: marker },
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stdout.on("data", keep);
    child.stderr.on("data", keep);
    /** Ends the check's group and every process it started elsewhere (they may hold its output open). */
    const endAll = (): void => {
      if (child.pid === undefined) return; // it never started
      killGroup(child.pid);
      killMarkedProcesses([marker]);
    };
    const timer = startTimer(() => {
      timedOut = true;
      endAll();
    }, timeLimitMs);
    child.on("exit", endAll);
    const text = () => {
      const head = Buffer.concat(chunks).toString("utf8");
      const rest = Buffer.concat(tail).toString("utf8");
      return dropped > 0 ? `${head}\n[… ${dropped} bytes of check output left out …]\n${rest}` : head + rest;
    };
    child.on("error", (error) => {
      clearTimeout(timer);
      resolve({
        exitCode: null,
        signal: null,
        timedOut: false,
        output: "",
        ms: Date.now() - started,
        startError: error.message,
      });
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      endAll(); // anything the check left running goes with it
      resolve({ exitCode: code, signal, timedOut, output: text(), ms: Date.now() - started });
    });
  });
}
