/**
 * Chapter 16: the host side of the codemode sandbox: one warm worker thread, a fresh QuickJS VM
 * per script, and every limit owned by the host.
 *
 * Never on the host thread: a script runs in a worker (worker-source.ts), so a runaway loop,
 * a deep recursion or a memory blow-up can cost at most that worker. The worker is started once
 * and kept (starting one is the expensive part: tens to hundreds of milliseconds); each script
 * still gets a new VM, so nothing a script leaves behind reaches the next one. Scripts of one
 * sandbox run one at a time.
 *
 * Limits: `timeoutMs` (the host raises the interrupt flag; a worker that does not answer within
 * `STOP_GRACE_MS` is terminated and replaced), `memoryBytes` and `maxStackBytes` (QuickJS's own),
 * `maxCalls` and `maxArgChars` (checked on the host for each nested call), `maxOutputChars`
 * (console lines and the returned value). An abort of `signal` stops the script like a timeout.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { startTimer, userDuration } from "../base/timer.js";
import { ScriptCalls } from "./script-calls.js";
import { WORKER_SOURCE } from "./worker-source.js";

/** How long a stopped script's worker may take to answer before it is terminated. */
export const STOP_GRACE_MS = 250;

/**
 * The largest stack limit QuickJS takes (bytes): a larger `maxStackBytes` is capped to it before it
 * is posted (QuickJS refuses more with a RangeError, which would fail every script as its own).
 */
export const MAX_STACK_BYTES = 512 * 1024;

/** The host's limits on one script. */
export interface SandboxLimits {
  /** Wall-clock limit in milliseconds (default 30 000). */
  timeoutMs: number;
  /** QuickJS heap limit in bytes (default 64 MiB). */
  memoryBytes: number;
  /** QuickJS stack limit in bytes (default 256 KiB; at most 512 KiB). Without one, deep recursion crashes the worker. */
  maxStackBytes: number;
  /** Nested tool calls per script (default 200). */
  maxCalls: number;
  /** Characters of one nested call's JSON arguments (default 100 000). */
  maxArgChars: number;
  /** Characters of console output, and of the returned value's JSON (default 40 000). */
  maxOutputChars: number;
}

export const DEFAULT_SANDBOX_LIMITS: Readonly<SandboxLimits> = Object.freeze({
  timeoutMs: 30_000,
  memoryBytes: 64 * 1024 * 1024,
  maxStackBytes: 256 * 1024,
  maxCalls: 200,
  maxArgChars: 100_000,
  maxOutputChars: 40_000,
});

/** Why a script failed: its own error, the time limit, an abort, another limit, or the sandbox itself. */
export type ScriptErrorKind = "script" | "timeout" | "aborted" | "limit" | "sandbox";

/** One nested call a script made, in order. */
export interface NestedCallRecord {
  name: string;
  args: unknown;
  /** Undefined while the call had not finished when the script stopped. */
  isError?: boolean;
  /** Set when the call was still running as the script ended: it was aborted (see script-calls.ts). */
  cancelled?: boolean;
}

/** What one script did. `calls` lists every nested call made, also when the script failed. */
export interface ScriptOutcome {
  ok: boolean;
  /** The returned value (parsed from its JSON), when `ok`. */
  value?: unknown;
  error?: { kind: ScriptErrorKind; message: string };
  /** Console lines in order (`warn: …`, `error: …` for other levels than `log`). */
  logs: string[];
  calls: NestedCallRecord[];
}

/** A nested call's answer: the text the script receives, and whether it is an error (thrown in the script). */
export interface NestedCallAnswer {
  text: string;
  isError: boolean;
}

/** One script to run. */
export interface ScriptRequest {
  code: string;
  /** The names `tools.<name>` offers. */
  tools: readonly string[];
  /**
   * Runs one nested call; never rejects (a failure is `isError`). `signal` fires when the script
   * has ended while the call runs: the call should stop (the agent loop answers it as aborted).
   */
  callTool(name: string, args: unknown, signal: AbortSignal): Promise<NestedCallAnswer>;
  limits?: Partial<SandboxLimits>;
  signal?: AbortSignal;
}

type WorkerMessage =
  | { type: "call"; runId: number; callId: number; name: string; args: string }
  | {
      type: "done";
      runId: number;
      ok: boolean;
      value?: string;
      error?: { kind: ScriptErrorKind; message: string };
      logs: string[];
    };

/** A compiled `WebAssembly.Module` (the library's type check includes no DOM or wasm typings). */
type WasmModule = object;
const wasmApi = (globalThis as unknown as { WebAssembly: { compile(bytes: Uint8Array): Promise<WasmModule> } })
  .WebAssembly;

let compiled: Promise<{ module: WasmModule; url: string }> | undefined;

/** The QuickJS wasm module, compiled once per process, and the URL the worker imports QuickJS from. */
function quickjs(): Promise<{ module: WasmModule; url: string }> {
  compiled ??= (async () => {
    const require = createRequire(import.meta.url);
    const wasm = readFileSync(require.resolve("quickjs-wasi/quickjs.wasm"));
    return { module: await wasmApi.compile(wasm), url: pathToFileURL(require.resolve("quickjs-wasi")).href };
  })();
  return compiled;
}

/** A sandbox: a warm worker that runs scripts one at a time, each in a fresh VM. */
export class CodeSandbox {
  private worker: Worker | undefined;
  private readonly interrupt = new Int32Array(new SharedArrayBuffer(4));
  private runs = 0;
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;

  /** Runs one script after the ones already queued. Never rejects. */
  run(request: ScriptRequest): Promise<ScriptOutcome> {
    const outcome = this.queue.then(() => this.runNow(request));
    this.queue = outcome.then(
      (o) => o.released,
      () => {},
    );
    return outcome.then(
      (o) => o.outcome,
      (error) => ({
        ok: false,
        error: { kind: "sandbox" as const, message: `the sandbox failed: ${String(error)}` },
        logs: [],
        calls: [],
      }),
    );
  }

  /** Terminates the worker; later runs fail. */
  async close(): Promise<void> {
    this.closed = true;
    const worker = this.worker;
    this.worker = undefined;
    if (worker !== undefined) await worker.terminate();
  }

  /** Starts the worker ahead of the first script (optional: `run` starts it when needed). */
  async warm(): Promise<void> {
    await this.ensureWorker();
  }

  private async ensureWorker(): Promise<Worker> {
    if (this.closed) throw new Error("the sandbox is closed");
    if (this.worker !== undefined) return this.worker;
    const { module, url } = await quickjs();
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { module, quickjsUrl: url, interrupt: this.interrupt.buffer },
      stdout: true,
      stderr: true,
    });
    worker.unref();
    worker.on("exit", () => {
      if (this.worker === worker) this.worker = undefined;
    });
    worker.on("error", () => {}); // reported to the run that is waiting, below
    this.worker = worker;
    return worker;
  }

  private async runNow(request: ScriptRequest): Promise<{ outcome: ScriptOutcome; released: Promise<void> }> {
    // #region lab 16.2 CodeSandbox.runNow
    const limits = { ...DEFAULT_SANDBOX_LIMITS, ...request.limits };
    const timeoutMs = userDuration(limits.timeoutMs, "codemode timeoutMs"); // undefined: no limit
    const calls = new ScriptCalls<NestedCallRecord>();
    if (request.signal?.aborted) {
      const outcome = failed("aborted", "the run was aborted before the script started", [], calls.records);
      return { outcome, released: Promise.resolve() };
    }
    const worker = await this.ensureWorker();
    const runId = ++this.runs;
    worker.ref();
    let settle!: (outcome: ScriptOutcome) => void;
    let release!: () => void;
    const outcome = new Promise<ScriptOutcome>((resolve) => (settle = resolve));
    const released = new Promise<void>((resolve) => (release = resolve));
    let finished = false;
    let grace: ReturnType<typeof setTimeout> | undefined;
    const cleanup = (): void => {
      clearTimeout(timer);
      clearTimeout(grace);
      request.signal?.removeEventListener("abort", onAbort);
      worker.off("message", onMessage);
      worker.off("error", onError);
      worker.off("exit", onExit);
      worker.unref();
      release();
    };
    const finish = (result: ScriptOutcome): void => {
      if (finished) return;
      finished = true;
      void calls.end(STOP_GRACE_MS).then(() => settle(result)); // no call outlives the script
    };
    /** Stops the script: interrupt flag, cancel message, and termination if the worker stays silent. */
    const stop = (kind: ScriptErrorKind, message: string): void => {
      if (finished) return;
      finish(failed(kind, message, [], calls.records));
      Atomics.store(this.interrupt, 0, runId);
      worker.postMessage({ type: "cancel", runId });
      grace = setTimeout(() => {
        if (this.worker === worker) this.worker = undefined;
        cleanup();
        void worker.terminate();
      }, STOP_GRACE_MS);
    };
    const onMessage = (message: WorkerMessage): void => {
      if (message.runId !== runId) return;
      if (message.type === "done") {
        if (!finished) finish(doneOutcome(message, limits, calls.records));
        cleanup();
        return;
      }
      if (finished) return;
      if (calls.records.length >= limits.maxCalls) {
        return stop("limit", `the script made more than ${limits.maxCalls} tool calls (maxCalls) and was stopped`);
      }
      if (message.args.length > limits.maxArgChars) {
        return stop(
          "limit",
          `the arguments of tools.${message.name} are ${message.args.length} characters long, more than ` +
            `${limits.maxArgChars} (maxArgChars); the script was stopped`,
        );
      }
      forwardCall(worker, runId, message, request, calls, () => finished);
    };
    const onError = (error: Error): void => {
      finish(failed("sandbox", `the sandbox's worker crashed: ${error.message}`, [], calls.records));
      if (this.worker === worker) this.worker = undefined;
      cleanup();
    };
    const onExit = (): void => {
      finish(failed("sandbox", "the sandbox's worker exited", [], calls.records));
      cleanup();
    };
    const onAbort = (): void => stop("aborted", "the run was aborted; the script was stopped");
    const timer = startTimer(
      () => stop("timeout", `the script ran longer than ${limits.timeoutMs} ms (timeoutMs) and was stopped`),
      timeoutMs,
    );
    worker.on("message", onMessage);
    worker.on("error", onError);
    worker.on("exit", onExit);
    request.signal?.addEventListener("abort", onAbort, { once: true });
    worker.postMessage({
      type: "run",
      runId,
      code: request.code,
      names: [...request.tools],
      limits: {
        memoryBytes: limits.memoryBytes,
        maxStackBytes: Math.min(limits.maxStackBytes, MAX_STACK_BYTES),
        maxOutputChars: limits.maxOutputChars,
      },
    });
    return { outcome: await outcome, released };
    // #endregion
  }
}

/**
 * Runs one of the script's tool calls on the host through `request.callTool` (under the signal of
 * `calls`, which fires when the script ends), records it in `calls`, and posts the answer back to
 * the worker, unless the run has `finished` by then.
 */
function forwardCall(
  worker: Worker,
  runId: number,
  message: Extract<WorkerMessage, { type: "call" }>,
  request: ScriptRequest,
  calls: ScriptCalls<NestedCallRecord>,
  finished: () => boolean,
): void {
  // #region lab 16.2 forwardCall
  let args: unknown;
  try {
    args = JSON.parse(message.args);
  } catch {
    args = message.args;
  }
  const record: NestedCallRecord = { name: message.name, args };
  const reply = (ok: boolean, text: string): void => {
    if (!finished()) worker.postMessage({ type: "reply", runId, callId: message.callId, ok, text });
  };
  void calls.add(record, request.callTool(message.name, args, calls.signal)).then(
    (answer) => {
      record.isError = answer.isError;
      reply(!answer.isError, answer.text);
    },
    (error) => {
      record.isError = true;
      reply(false, String(error));
    },
  );
  // #endregion
}

function failed(kind: ScriptErrorKind, message: string, logs: string[], calls: NestedCallRecord[]): ScriptOutcome {
  return { ok: false, error: { kind, message }, logs, calls };
}

/** The worker's `done`, read into an outcome (the value parsed; an over-long value is a limit failure). */
function doneOutcome(
  message: Extract<WorkerMessage, { type: "done" }>,
  limits: SandboxLimits,
  calls: NestedCallRecord[],
): ScriptOutcome {
  const logs = Array.isArray(message.logs) ? message.logs.map(String) : [];
  if (!message.ok) {
    const error = message.error ?? { kind: "script", message: "the script failed" };
    return failed(classify(error), capped(String(error.message), limits.maxOutputChars), logs, calls);
  }
  if (message.value === undefined) return { ok: true, logs, calls };
  if (message.value.length > limits.maxOutputChars) {
    return failed(
      "limit",
      `the returned value is ${message.value.length} characters of JSON, more than ${limits.maxOutputChars} (maxOutputChars)`,
      logs,
      calls,
    );
  }
  try {
    return { ok: true, value: JSON.parse(message.value), logs, calls };
  } catch {
    // The script can replace its own JSON.stringify: what it returned is then its error, never the host's.
    return failed("script", "the script's return value is not JSON (was JSON.stringify replaced?)", logs, calls);
  }
}

/** `text` cut to `max` characters, saying how much was left out (a thrown error is output too). */
function capped(text: string, max: number): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max)}… [${text.length - max} more characters cut: output limit reached]`;
}

/** QuickJS's own limits surface as script errors: name them. */
function classify(error: { kind: ScriptErrorKind; message: string }): ScriptErrorKind {
  if (error.kind !== "script") return error.kind;
  if (/out of memory|stack overflow|Maximum call stack/i.test(error.message)) return "limit";
  return "script";
}
