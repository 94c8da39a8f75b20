/**
 * The `bash` tool: runs one shell command in the workspace root, bounded.
 *
 * - Time: after `timeoutMs` the command's whole process group gets SIGTERM, and SIGKILL after a
 *   grace period (a child that ignores SIGTERM still dies).
 * - Output: stdout and stderr share one cap; the tail (where errors usually are) is kept, with
 *   a note saying how much was dropped.
 * - Abort: the signal kills the process group the same way.
 * - Leftovers: processes the command leaves running in the background are killed when it ends,
 *   so nothing holds the output pipes open and the call always returns.
 *
 * The command runs in its own process group (`detached`), so `kill(-pid)` reaches every process
 * it started. It is not a sandbox: the shell can reach anything the user can, and a command can
 * leave its group on purpose (`setsid`, `nohup … &` under another session) and outlive the call.
 *
 * Secrets: by default the commands get this process's environment without the variables that
 * look like secrets (`OPENAI_API_KEY`, and every name matching `API_KEY`, `APIKEY`, `TOKEN`,
 * `SECRET`, `PASSWORD` or `CREDENTIAL`, case-insensitive), so a model cannot print the key it is
 * called with. An explicit `env` option is used as given.
 */
import { spawn } from "node:child_process";
import { Type } from "typebox";
import type { AgentTool } from "../types.js";
import { formatSize } from "./read.js";
import type { Workspace } from "./workspace.js";

/** Names of variables `commandEnvironment` leaves out (besides `OPENAI_API_KEY`). */
export const SECRET_NAME_PATTERN = /(API_?KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL)/i;

/**
 * `env` (default: `process.env`) without the variables that look like secrets (see the file
 * comment) and without the names in `alsoDrop` (e.g. the variable an API key was read from).
 */
export function commandEnvironment(
  env: NodeJS.ProcessEnv = process.env,
  alsoDrop: readonly string[] = [],
): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(env)) {
    if (name === "OPENAI_API_KEY" || SECRET_NAME_PATTERN.test(name) || alsoDrop.includes(name)) continue;
    out[name] = value;
  }
  return out;
}

/**
 * Process groups of commands that are still running. When this process exits (`process.exit`
 * on a second Ctrl-C or a closed pipe, or the end of the program) there is no time left for a
 * grace period, so every one still alive gets SIGKILL: a child that ignores SIGTERM does not
 * outlive the agent.
 */
const liveGroups = new Set<number>();
let exitHookInstalled = false;

/** Remembers a running command's process group (call right after the spawn). */
export function trackProcessGroup(pid: number): void {
  liveGroups.add(pid);
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.on("exit", killLiveProcessGroups);
  }
}

/** Forgets a process group once its command has ended (and its leftovers were killed). */
export function untrackProcessGroup(pid: number): void {
  liveGroups.delete(pid);
}

/** Sends SIGKILL to every tracked process group; runs on process `exit`. */
export function killLiveProcessGroups(): void {
  for (const pid of liveGroups) {
    try {
      process.kill(-pid, "SIGKILL");
    } catch {
      // ESRCH: the group is already gone.
    }
  }
  liveGroups.clear();
}

/** Defaults of one command. */
export const BASH_TIMEOUT_MS = 120_000;
export const BASH_MAX_OUTPUT_BYTES = 50 * 1024;
export const BASH_KILL_GRACE_MS = 2_000;

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

/** Runs `command` with `shell -c`; never rejects (a failure to start is an exit code 127). */
export function runCommand(command: string, options: RunCommandOptions): Promise<CommandResult> {
  // #region lab 8.5 runCommand
  const started = Date.now();
  const cap = options.maxOutputBytes ?? BASH_MAX_OUTPUT_BYTES;
  const grace = options.killGraceMs ?? BASH_KILL_GRACE_MS;
  const signal = options.signal;
  return new Promise((resolve) => {
    const base = { timedOut: false, aborted: false, truncated: false, totalBytes: 0, pid: undefined };
    if (signal?.aborted) {
      resolve({ ...base, output: "", exitCode: null, signal: null, aborted: true, durationMs: 0 });
      return;
    }
    const chunks: Buffer[] = [];
    let kept = 0;
    let totalBytes = 0;
    let timedOut = false;
    let aborted = false;
    let killTimer: NodeJS.Timeout | undefined;
    let finished = false;

    const child = spawn(options.shell ?? "bash", ["-c", command], {
      cwd: options.cwd,
      env: options.env ?? process.env,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    if (child.pid !== undefined) trackProcessGroup(child.pid);
    const killGroup = (sig: NodeJS.Signals) => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, sig);
      } catch {
        // ESRCH: the group is already gone.
      }
    };
    const terminate = () => {
      killGroup("SIGTERM");
      killTimer ??= setTimeout(() => killGroup("SIGKILL"), grace);
    };
    const collect = (data: Buffer) => {
      totalBytes += data.length;
      chunks.push(data);
      kept += data.length;
      while (kept - chunks[0]!.length >= cap) kept -= chunks.shift()!.length;
    };
    child.stdout!.on("data", collect);
    child.stderr!.on("data", collect);

    const timer = setTimeout(() => {
      timedOut = true;
      terminate();
    }, options.timeoutMs ?? BASH_TIMEOUT_MS);
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
      let buffer = Buffer.concat(chunks);
      const truncated = buffer.length > cap;
      if (truncated) buffer = buffer.subarray(buffer.length - cap);
      // Cutting the head may split a UTF-8 sequence: drop the broken first character.
      let output = buffer.toString("utf8");
      if (truncated) output = output.replace(/^\uFFFD+/, "");
      resolve({
        output: output + extra,
        exitCode,
        signal: exitSignal,
        timedOut,
        aborted,
        truncated,
        totalBytes,
        durationMs: Date.now() - started,
        pid: child.pid,
      });
    };
    child.on("error", (error) => finish(127, null, `${error.message}\n`));
    child.on("exit", (code, exitSignal) => {
      // Kill what the command left behind, then give the pipes a moment to drain.
      killGroup("SIGKILL");
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

const bashParameters = Type.Object({
  command: Type.String({ description: "A bash command, run in the workspace root." }),
  timeout: Type.Optional(Type.Number({ exclusiveMinimum: 0, description: "Timeout in seconds." })),
});

/** What `bash` reports to programs. */
export type BashDetails = Omit<CommandResult, "output"> & { command: string };

export interface BashToolOptions {
  /** The default timeout, when the model gives none. */
  timeoutMs?: number;
  /** The largest timeout the model may ask for. Defaults to 10 minutes. */
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

/** The `bash` tool, run in the workspace root. */
export function createBashTool(
  workspace: Workspace,
  options: BashToolOptions = {},
): AgentTool<typeof bashParameters, BashDetails> {
  const cap = options.maxOutputBytes ?? BASH_MAX_OUTPUT_BYTES;
  return {
    name: "bash",
    label: "Run command",
    description:
      `Run a bash command in the workspace root. stdout and stderr are combined; only the last ` +
      `${formatSize(cap)} are kept. Default timeout ${Math.round((options.timeoutMs ?? BASH_TIMEOUT_MS) / 1000)} s.`,
    parameters: bashParameters,
    executionMode: "sequential",
    async execute(_toolCallId, params, signal) {
      const maxTimeout = options.maxTimeoutMs ?? 600_000;
      const timeoutMs =
        params.timeout === undefined
          ? (options.timeoutMs ?? BASH_TIMEOUT_MS)
          : Math.min(Math.round(params.timeout * 1000), maxTimeout);
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
  };
}
