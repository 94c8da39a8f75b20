/**
 * The stdio transport: the server is a child process; messages go to its stdin and come from its
 * stdout, one JSON object per line (`line-decoder.ts`); its stderr is its log, drained (a full
 * pipe would stall the server) and its last lines kept for diagnostics.
 *
 * Anything else on stdout is a broken server: a line that is not JSON-RPC ends the transport
 * with an error that quotes it, so pending calls fail at once instead of waiting for a timeout.
 *
 * Shutdown as servers need it: close stdin (an idle server exits within milliseconds), wait
 * `graceMs`, SIGTERM, wait `graceMs`, SIGKILL. Some servers never exit on their own (after an
 * oversized line, or with timers running), and a busy one finishes its call first. What a server
 * starts ends with it (`spawnServer`).
 */
import { spawn, type ChildProcess } from "node:child_process";
import {
  CALL_MARKER_VARIABLE,
  descendantsOf,
  killGroup,
  killStillRunning,
  killMarkedProcesses,
  newCallMarker,
  trackProcessGroup,
  untrackProcessGroup,
} from "../coding-tools/processes.js";
import type { ProcessStamp } from "../coding-tools/processes.js";
import { readMessage, type JsonRpcMessage } from "./json-rpc.js";
import { DEFAULT_MAX_LINE_BYTES, LineDecoder } from "./line-decoder.js";
import type { McpTransport, TransportHandlers } from "./transport.js";

/** How to start a stdio server. */
export interface StdioServerParameters {
  /** The program, found on `PATH` (e.g. `"npx"`, `"node"`, `"uvx"`). */
  command: string;
  args?: string[];
  /**
   * Variables added to the child's environment. The child does not inherit the whole environment
   * (API keys stay out of servers): only `PATH`, `HOME`, `USER`, `LOGNAME`, `SHELL`, `TERM`,
   * `TMPDIR`, `LANG`, `SystemRoot`, plus these.
   */
  env?: Record<string, string>;
  /** Working directory of the child (default: this process's). */
  cwd?: string;
  /** Refuse a line longer than this (default 10 MiB, as the SDK). */
  maxLineBytes?: number;
  /** Milliseconds between the steps of the shutdown (default 2,000). */
  graceMs?: number;
  /** How many stderr lines to keep (default 50). */
  stderrLines?: number;
}

/** The variables a server inherits from this process (the rest stays here). */
export const INHERITED_ENV = [
  "PATH",
  "HOME",
  "USER",
  "LOGNAME",
  "SHELL",
  "TERM",
  "TMPDIR",
  "LANG",
  "SystemRoot",
  "APPDATA",
];

/** A JSON-RPC transport over a child process's stdin and stdout. */
export class StdioTransport implements McpTransport {
  private child: ChildProcess | undefined;
  private handlers: TransportHandlers | undefined;
  private ended = false;
  private exited: Promise<void> | undefined;
  private readonly tail: string[] = [];
  private stderrPartial = "";
  protocolVersion?: string;

  constructor(readonly params: StdioServerParameters) {}

  /** The last lines the server wrote to stderr. */
  get stderrTail(): readonly string[] {
    return this.stderrPartial === "" ? this.tail : [...this.tail, this.stderrPartial];
  }

  /** The child's process id, once spawned. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  start(handlers: TransportHandlers): Promise<void> {
    // #region lab 17.3 StdioTransport.start
    this.handlers = handlers;
    const { command, args = [], env = {}, cwd } = this.params;
    const childEnv: Record<string, string> = {};
    for (const name of INHERITED_ENV) if (process.env[name] !== undefined) childEnv[name] = process.env[name]!;
    Object.assign(childEnv, env);
    // spawnServer (given): what the server starts ends with it, see its comment.
    const child = spawnServer(command, args, { cwd, env: childEnv });
    this.child = child;
    this.exited = new Promise((resolve) => child.once("close", () => resolve()));
    const decoder = new LineDecoder(this.params.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES);
    child.stdout!.on("data", (chunk: Buffer) => {
      if (this.ended) return;
      let lines: string[];
      try {
        lines = decoder.push(chunk);
      } catch (error) {
        this.fail(error as Error, true);
        return;
      }
      for (const line of lines) {
        if (this.ended) return;
        if (line.trim() === "") continue;
        this.line(line);
      }
    });
    child.stderr!.setEncoding("utf8");
    child.stderr!.on("data", (text: string) => this.keepStderr(text));
    child.stdin!.on("error", () => {}); // EPIPE after a crash: the exit says it better
    child.once("close", (code, signal) => {
      const how = signal !== null ? `was killed by ${signal}` : `exited with code ${code}`;
      const last = this.stderrTail.at(-1);
      this.fail(
        new Error(`the server process ${how}${last !== undefined ? ` (last stderr line: ${last})` : ""}`),
        false,
      );
    });
    return new Promise((resolve, reject) => {
      child.once("spawn", () => resolve());
      child.once("error", (error: NodeJS.ErrnoException) => {
        const text =
          error.code === "ENOENT"
            ? `cannot start "${command}": no such program (is it installed and on PATH${cwd !== undefined ? `, or is the cwd ${cwd} missing` : ""}?)`
            : `cannot start "${command}": ${error.message}`;
        const failure = new Error(text);
        this.fail(failure, false);
        reject(failure);
      });
    });
    // #endregion
  }

  send(message: JsonRpcMessage): Promise<void> {
    const stdin = this.child?.stdin;
    if (this.ended || stdin === undefined || stdin === null || !stdin.writable) {
      return Promise.reject(new Error("the server process is not running"));
    }
    const text = `${JSON.stringify(message)}\n`;
    return new Promise((resolve, reject) => {
      // write's callback fires once the data is handed to the OS, or with the write's error
      stdin.write(text, (error) =>
        error ? reject(new Error(`cannot write to the server: ${error.message}`)) : resolve(),
      );
    });
  }

  /**
   * Ends the server: stdin closed, then SIGTERM after `graceMs`, then SIGKILL after `graceMs`.
   * Resolves when the process has exited.
   */
  async close(): Promise<void> {
    // #region lab 17.3 StdioTransport.close
    const child = this.child;
    this.fail(new Error("the connection was closed"), false);
    if (child === undefined || this.exited === undefined) return;
    const grace = this.params.graceMs ?? 2000;
    const exited = this.exited;
    const within = (ms: number) =>
      new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), ms);
        void exited.then(() => {
          clearTimeout(timer);
          resolve(true);
        });
      });
    if (child.exitCode !== null || child.signalCode !== null) return exited;
    child.stdin?.end();
    if (await within(grace)) return;
    signalGroup(child, "SIGTERM");
    if (await within(grace)) return;
    signalGroup(child, "SIGKILL");
    await exited;
    // #endregion
  }

  /** One line of stdout. */
  /**
   * One line of stdout: a JSON-RPC message goes to the connection. A line that is not one (a
   * banner, a careless `console.log`) is skipped with a diagnostic, as the official SDK and pi do:
   * one stray line must not end a server that otherwise speaks the protocol.
   */
  private line(line: string): void {
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      this.handlers!.onDiagnostic?.(
        `skipped a line on stdout that is not JSON: ${quote(line)} (an MCP server writes only JSON-RPC messages to stdout; logs go to stderr)`,
      );
      return;
    }
    const message = readMessage(value);
    if (typeof message === "string") {
      this.handlers!.onDiagnostic?.(
        `skipped a line on stdout that is not a JSON-RPC message (${message}): ${quote(line)}`,
      );
      return;
    }
    this.handlers!.onMessage(message);
  }

  private keepStderr(text: string): void {
    const lines = (this.stderrPartial + text).split("\n");
    this.stderrPartial = lines.pop()!.slice(-4096);
    const keep = this.params.stderrLines ?? 50;
    for (const line of lines) {
      this.tail.push(line.replace(/\r$/, "").slice(0, 4096));
      if (this.tail.length > keep) this.tail.shift();
    }
  }

  /** Ends the transport once; a broken stream also stops the process (it cannot be used). */
  private fail(error: Error, kill: boolean): void {
    if (this.ended) return;
    this.ended = true;
    // every way to end the server passes here before its stdin ends or a signal is sent
    if (this.child !== undefined) noteFamily(this.child);
    if (kill) void this.stop();
    this.handlers?.onClose(error);
  }

  /** Stops a server whose stream is broken: SIGTERM, then SIGKILL after `graceMs`. */
  private async stop(): Promise<void> {
    const child = this.child;
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
    child.stdin?.end();
    signalGroup(child, "SIGTERM");
    const timer = setTimeout(() => signalGroup(child, "SIGKILL"), this.params.graceMs ?? 2000);
    timer.unref();
    await this.exited;
    clearTimeout(timer);
  }
}

/**
 * Whether a server gets a session of its own. On Linux a new session is also a new scheduling
 * group (the kernel's autogroup, on by default): every message then waits until the scheduler
 * switches groups, which on a loaded machine doubled the time of a round trip (bench/17-mcp:
 * 1,000 calls took 2x the SDK's wall time at the same CPU time). There the server stays in the
 * agent's session and its processes carry a marker (`PI_COURSE_CALL`) instead, found in `/proc`;
 * elsewhere it leads a process group (and session) of its own. In the agent's process group, a
 * Ctrl-C at a terminal in cooked mode (a `--print` run) reaches the server as it reaches the
 * agent, whose run ends then anyway; the interactive mode reads Ctrl-C as a key.
 */
const OWN_SESSION = process.platform !== "linux";

/**
 * Each server spawned in the agent's session: its marker, and the processes seen descending from
 * it (`noteFamily`) before it was asked to end.
 */
const marked = new WeakMap<ChildProcess, { marker: string; family: Map<number, ProcessStamp> }>();

/**
 * Notes what the server has started, by parentage: a process that scrubbed its environment has
 * no marker, and in the agent's session its process group is the agent's, so that is how it is
 * found. Runs before each step that may end the server (`fail`, before stdin's end; a signal), while the links hold.
 */
function noteFamily(child: ChildProcess): void {
  const entry = marked.get(child);
  if (entry === undefined || child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  for (const found of descendantsOf(child.pid)) entry.family.set(found.pid, found);
}

/**
 * Starts a server so that whatever it starts ends with it: at its exit (what it left behind gets
 * SIGKILL), at `signalGroup`, and when this process exits (`trackProcessGroup`). In the agent's
 * session a process is found by its marker or, with a scrubbed environment, as a descendant the
 * server still had when it was asked to end (`noteFamily`). One that scrubs the marker and whose
 * parent ended before that (a daemon's double fork) escapes; elsewhere one that leaves the group
 * (a new session) and the marker escapes, as a `bash` command's does.
 */
function spawnServer(
  command: string,
  args: string[],
  { cwd, env }: { cwd: string | undefined; env: Record<string, string> },
): ChildProcess {
  const marker = OWN_SESSION ? undefined : newCallMarker();
  const child = spawn(command, args, {
    cwd,
    env: marker === undefined ? env : { ...env, [CALL_MARKER_VARIABLE]: marker },
    stdio: ["pipe", "pipe", "pipe"],
    detached: OWN_SESSION,
    windowsHide: true,
  });
  const pid = child.pid;
  if (pid === undefined) return child; // it did not start: the error event says why
  const family = new Map<number, ProcessStamp>();
  if (marker !== undefined) marked.set(child, { marker, family });
  trackProcessGroup(pid, marker);
  // Before the transport's own listener: what it left is gone when `exited` resolves. (Not
  // `kill(-pid)` for a marked server: its pid is free now, and may lead someone else's group.)
  child.once("close", () => {
    if (marker === undefined) killGroup(pid);
    else {
      killMarkedProcesses([marker]);
      killStillRunning(family.values());
    }
    untrackProcessGroup(pid);
  });
  return child;
}

/** `signal` to the server and what it started (its process group, or the processes carrying its marker). */
function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  const entry = marked.get(child);
  if (entry === undefined) killGroup(child.pid, signal);
  else {
    noteFamily(child);
    child.kill(signal);
    killMarkedProcesses([entry.marker], signal);
  }
}

function quote(line: string): string {
  return JSON.stringify(line.length > 200 ? `${line.slice(0, 200)}…` : line);
}
