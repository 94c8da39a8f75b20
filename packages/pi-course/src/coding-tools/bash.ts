/**
 * The `bash` tool: runs one shell command in the workspace root, bounded.
 *
 * - Time: after `timeoutMs` the command's whole process group gets SIGTERM, and SIGKILL after a
 *   grace period (a child that ignores SIGTERM still dies).
 * - Output: stdout and stderr share one cap; the tail (where errors usually are) is kept, with
 *   a note saying how much was dropped.
 * - Abort: the signal kills the process group the same way.
 * - Leftovers: processes the command leaves running in the background are killed when it ends,
 *   so nothing holds the output pipes open and the call always returns. That includes processes
 *   that left the command's process group or session (`setsid`, a double fork): every call's
 *   commands carry a variable unique to the call (`PI_COURSE_CALL`), and at the end of the call
 *   every process whose environment holds it gets SIGKILL (`killMarkedProcesses`, Linux only;
 *   it needs no privileges). The limit: a process that also drops that variable from its
 *   environment (`env -i`, `env -u PI_COURSE_CALL`) or is started outside the command (by
 *   systemd, at, cron) can outlive the call.
 * - Bounds: every time bound is a finite number of milliseconds a Node timer can hold (at most
 *   2³¹−1 ms, about 24.8 days; Node fires a larger delay after 1 ms). A larger or non-finite
 *   bound is a caller's mistake and throws a RangeError; a timeout the model asks for above
 *   `maxTimeoutMs` is refused with an error result that names the limit.
 *
 * The command runs in its own process group (`detached`), so `kill(-pid)` reaches every process
 * it started. It is not a sandbox: the shell can reach anything the user can.
 *
 * Secrets: by default the commands get this process's environment without the variables that
 * look like secrets (`OPENAI_API_KEY`, and every name matching `API_KEY`, `APIKEY`, `TOKEN`,
 * `SECRET`, `PASSWORD` or `CREDENTIAL`, case-insensitive), so a model cannot print the key it is
 * called with. An explicit `env` option is used as given.
 */
import { spawn } from "node:child_process";
import { realpathSync } from "node:fs";
import { Type } from "typebox";
import type { AgentTool } from "../types.js";
import {
  CALL_MARKER_VARIABLE,
  commandEnvironment,
  killGroup,
  killLeftovers,
  newCallMarker,
  stopOrphanedCommand,
  trackProcessGroup,
  untrackProcessGroup,
} from "./processes.js";
import { formatSize } from "./read.js";
import type { Workspace } from "./workspace.js";
import { MAX_TIMER_MS } from "../base/timer.js";

/**
 * Returns `ms` when it is a time bound a timer can hold (finite, above 0, at most
 * `MAX_TIMER_MS`); otherwise throws a RangeError naming `name` and the limits.
 */
export function checkTimeBound(name: string, ms: number): number {
  if (typeof ms === "number" && Number.isFinite(ms) && ms > 0 && ms <= MAX_TIMER_MS) return ms;
  throw new RangeError(
    `${name} must be a finite number of milliseconds above 0 and at most ${MAX_TIMER_MS} (about 24.8 days), ` +
      `got ${String(ms)}. A command needs a bound: pass a real one.`,
  );
}

/** Defaults of one command. */
export const BASH_TIMEOUT_MS = 120_000;
export const BASH_MAX_OUTPUT_BYTES = 50 * 1024;
export const BASH_KILL_GRACE_MS = 2_000;
/** The largest timeout the model may ask for, by default. */
export const BASH_MAX_TIMEOUT_MS = 600_000;

export interface RunCommandOptions {
  /** The working folder. */
  cwd: string;
  timeoutMs?: number;
  /** The cap shared by stdout and stderr. */
  maxOutputBytes?: number;
  /** Between SIGTERM and SIGKILL. */
  killGraceMs?: number;
  signal?: AbortSignal;
  /** The shell; defaults to `bash`. */
  shell?: string;
  env?: NodeJS.ProcessEnv;
}

/** How a command ended. */
export interface CommandResult {
  /** The tail of stdout and stderr, interleaved as they arrived, at most the cap. */
  output: string;
  /** The exit code, or null when the command was killed by a signal. */
  exitCode: number | null;
  /** The signal that ended the shell, if any. */
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  aborted: boolean;
  /** True when output was dropped to stay under the cap. */
  truncated: boolean;
  /** All bytes the command wrote, kept or not. */
  totalBytes: number;
  durationMs: number;
  /** The process group id (the shell's pid), for diagnostics. */
  pid: number | undefined;
}

/**
 * Runs `command` with `shell -c`; never rejects (a failure to start is an exit code 127).
 * Throws a RangeError at once when `timeoutMs` or `killGraceMs` is not a bound a timer can hold
 * (see `checkTimeBound`).
 */
export function runCommand(command: string, options: RunCommandOptions): Promise<CommandResult> {
  // #region lab 8.5 runCommand
  const started = Date.now();
  const cap = options.maxOutputBytes ?? BASH_MAX_OUTPUT_BYTES;
  const timeoutMs = checkTimeBound("timeoutMs", options.timeoutMs ?? BASH_TIMEOUT_MS);
  const grace = checkTimeBound("killGraceMs", options.killGraceMs ?? BASH_KILL_GRACE_MS);
  const signal = options.signal;
  return new Promise((resolve) => {
    const base = { timedOut: false, aborted: false, truncated: false, totalBytes: 0, pid: undefined };
    if (signal?.aborted) {
      resolve({ ...base, output: "", exitCode: null, signal: null, aborted: true, durationMs: 0 });
      return;
    }
    const tail = new OutputTail(cap);
    let timedOut = false;
    let aborted = false;
    let killTimer: NodeJS.Timeout | undefined;
    let finished = false;

    // Every process this call starts inherits the marker, even one that leaves the group.
    const marker = newCallMarker();
    const child = spawn(options.shell ?? "bash", ["-c", command], {
      cwd: options.cwd,
      env: { ...(options.env ?? process.env), [CALL_MARKER_VARIABLE]: marker },
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    if (child.pid !== undefined) trackProcessGroup(child.pid, marker);
    const terminate = () => {
      if (child.pid === undefined) return;
      const pid = child.pid;
      killGroup(pid, "SIGTERM");
      killTimer ??= setTimeout(() => killGroup(pid), grace);
    };
    const collect = (data: Buffer) => tail.add(data);
    child.stdout!.on("data", collect);
    child.stderr!.on("data", collect);

    const timer = setTimeout(() => {
      timedOut = true;
      terminate();
    }, timeoutMs);
    const onAbort = () => {
      aborted = true;
      terminate();
    };
    signal?.addEventListener("abort", onAbort, { once: true });

    const finish = (exitCode: number | null, exitSignal: NodeJS.Signals | null, extra = "") => {
      if (finished) return;
      finished = true;
      if (child.pid !== undefined) untrackProcessGroup(child.pid);
      clearTimeout(timer);
      clearTimeout(killTimer);
      signal?.removeEventListener("abort", onAbort);
      const { output, truncated } = tail.text();
      resolve({
        output: output + extra,
        exitCode,
        signal: exitSignal,
        timedOut,
        aborted,
        truncated,
        totalBytes: tail.totalBytes,
        durationMs: Date.now() - started,
        pid: child.pid,
      });
    };
    child.on("error", (error) => finish(127, null, `${error.message}\n`));
    child.on("exit", (code, exitSignal) => {
      // Kill what the command left behind (in its group or not), then let the pipes drain.
      if (child.pid !== undefined) killLeftovers(child.pid, marker);
      let closed = false;
      child.on("close", () => {
        closed = true;
        finish(code, exitSignal);
      });
      setTimeout(() => {
        if (closed) return;
        child.stdout!.destroy();
        child.stderr!.destroy();
        finish(code, exitSignal);
      }, 200).unref();
    });
  });
  // #endregion
}

/** The last `cap` bytes of a command's output, gathered chunk by chunk. */
class OutputTail {
  private chunks: Buffer[] = [];
  private kept = 0;
  /** Every byte the command wrote, kept or not. */
  totalBytes = 0;

  constructor(private readonly cap: number) {}

  add(data: Buffer): void {
    // #region lab 8.5 OutputTail.add
    this.totalBytes += data.length;
    this.chunks.push(data);
    this.kept += data.length;
    while (this.kept - this.chunks[0]!.length >= this.cap) this.kept -= this.chunks.shift()!.length;
    // #endregion
  }

  /** The kept output as text; `truncated` when its head was cut. */
  text(): { output: string; truncated: boolean } {
    // #region lab 8.5 OutputTail.text
    let buffer = Buffer.concat(this.chunks);
    // Counted from the total: the chunks kept after a drop may add up to exactly the cap.
    const truncated = this.totalBytes > this.cap;
    if (truncated) buffer = buffer.subarray(buffer.length - this.cap);
    // Cutting the head may split a UTF-8 sequence: drop the broken first character.
    let output = buffer.toString("utf8");
    if (truncated) output = output.replace(/^\uFFFD+/, "");
    return { output, truncated };
    // #endregion
  }
}

const bashParameters = Type.Object({
  command: Type.String({ description: "A bash command, run in the workspace root." }),
  timeout: Type.Optional(Type.Number({ exclusiveMinimum: 0, description: "Timeout in seconds." })),
});

/** What `bash` reports to programs. */
export type BashDetails = Omit<CommandResult, "output"> & { command: string };

export interface BashToolOptions {
  /** The default timeout, when the model gives none. */
  timeoutMs?: number;
  /** The largest timeout the model may ask for; a larger request is refused. Defaults to 10 minutes. */
  maxTimeoutMs?: number;
  maxOutputBytes?: number;
  killGraceMs?: number;
  shell?: string;
  /**
   * The commands' environment, used as given. Defaults to `commandEnvironment()`: this
   * process's environment without the variables that look like secrets.
   */
  env?: NodeJS.ProcessEnv;
}

const seconds = (ms: number) => Math.round(ms / 100) / 10;

/**
 * The `bash` tool, run in the workspace root. Throws a RangeError when a time bound in `options`
 * is not one a timer can hold (see `checkTimeBound`), e.g. `maxTimeoutMs: Infinity`.
 */
export function createBashTool(
  workspace: Workspace,
  options: BashToolOptions = {},
): AgentTool<typeof bashParameters, BashDetails> {
  const cap = options.maxOutputBytes ?? BASH_MAX_OUTPUT_BYTES;
  const defaultTimeout = checkTimeBound("bash timeoutMs", options.timeoutMs ?? BASH_TIMEOUT_MS);
  const maxTimeout = checkTimeBound("bash maxTimeoutMs", options.maxTimeoutMs ?? BASH_MAX_TIMEOUT_MS);
  if (options.killGraceMs !== undefined) checkTimeBound("bash killGraceMs", options.killGraceMs);
  return {
    name: "bash",
    label: "Run command",
    description:
      `Run a bash command in the workspace root. stdout and stderr are combined; only the last ` +
      `${formatSize(cap)} are kept. Default timeout ${seconds(defaultTimeout)} s, at most ` +
      `${seconds(maxTimeout)} s. Everything the command starts, in the background too, is killed ` +
      `when it ends, unless it removes ${CALL_MARKER_VARIABLE} from its environment.`,
    parameters: bashParameters,
    executionMode: "sequential",
    async execute(_toolCallId, params, signal) {
      let timeoutMs = defaultTimeout;
      if (params.timeout !== undefined) {
        timeoutMs = Math.round(params.timeout * 1000);
        if (!(timeoutMs > 0 && timeoutMs <= maxTimeout)) {
          throw new Error(
            `timeout ${params.timeout} s is outside what this tool allows (more than 0, at most ` +
              `${seconds(maxTimeout)} s). Ask for at most ${seconds(maxTimeout)} s, or split the work into shorter commands.`,
          );
        }
      }
      const result = await runCommand(params.command, {
        cwd: workspace.root,
        timeoutMs,
        maxOutputBytes: cap,
        ...(options.killGraceMs !== undefined && { killGraceMs: options.killGraceMs }),
        ...(options.shell !== undefined && { shell: options.shell }),
        env: options.env ?? commandEnvironment(),
        ...(signal !== undefined && { signal }),
      });
      const { output, ...rest } = result;
      const lines: string[] = [];
      if (result.truncated) {
        lines.push(`[output cut: showing the last ${Buffer.byteLength(output, "utf8")} of ${result.totalBytes} bytes]`);
      }
      lines.push(output === "" ? "(no output)" : output.replace(/\n$/, ""));
      if (result.aborted) lines.push("[aborted: the command was killed]");
      else if (result.timedOut) lines.push(`[timed out after ${timeoutMs / 1000} s: the command was killed]`);
      else if (result.exitCode !== 0) lines.push(`[exit code ${result.exitCode ?? result.signal}]`);
      return {
        content: [{ type: "text", text: lines.join("\n") }],
        details: { command: params.command, ...rest },
        isError: result.aborted || result.timedOut || result.exitCode !== 0,
      };
    },
    settleInterrupted(_toolCallId, args) {
      const command = (args as { command?: unknown } | undefined)?.command;
      if (typeof command !== "string") return undefined;
      const stopped = stopOrphanedCommand(options.shell ?? "bash", command, realpathSync(workspace.root));
      return stopped > 0
        ? `Its command was still running after the crash (${stopped} process${stopped === 1 ? "" : "es"}); it was stopped now.`
        : "Its command is no longer running.";
    },
  };
}
