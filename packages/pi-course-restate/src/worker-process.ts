/**
 * A worker as a child process, for the command line, the tests and the bench: they need processes
 * a SIGKILL can end. Either the worker's script (`worker-main`: under tsx from the sources, where it
 * imports @pi/course from its sources through the root tsconfig's `paths`; under plain Node once
 * built; it loads a setups module by path), or a bundle written by `bundleWorker` under plain Node
 * (setups built in; it starts about 15 times sooner).
 *
 * The child stops with its parent: its standard input is a pipe from the parent and it is started
 * with `--stop-with-stdin`, so when the parent exits, however it ends (a crash, a SIGKILL), the
 * pipe closes and the worker stops as on SIGTERM. `stop()` ends it from the parent.
 */
import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { IDENTITY_KEYS_ENV } from "./identity.js";

const HERE = fileURLToPath(import.meta.url);
/** `.ts` when this runs from the sources (under tsx), `.js` once built. */
const EXT = path.extname(HERE);
const MAIN = path.join(path.dirname(HERE), `worker-main${EXT}`);
/** From the sources: the workspace's root, where `tsx` and the tsconfig's `paths` resolve from. */
const ROOT = path.resolve(path.dirname(HERE), "..", "..", "..");

export interface WorkerProcess {
  child: ChildProcess;
  pid: number;
  port: number;
  url: string;
  /**
   * Stops the worker as SIGTERM does (runs in flight get `graceMs`, default the worker's 5 s, then
   * their connections are cut) and resolves once it exited; SIGKILLs it if it has not exited a second
   * after that.
   */
  stop(graceMs?: number): Promise<void>;
}

/**
 * Starts a worker serving `setups` (a module path; none: eval cases only) on `port` and resolves once it listens; rejects
 * with its error output if it exits first or is not listening within `timeoutMs` (default 120 s: a
 * hang bound; under tsx on a loaded machine a start can take tens of seconds).
 */
export function spawnWorker(options: {
  /** A setups module, loaded by path (not with `bundle`, which has its setups built in). */
  setups?: string;
  /** A file written by `bundleWorker`: run by Node as it is, instead of the worker's script. */
  bundle?: string;
  cases?: number;
  port: number;
  /** Where it listens (default 127.0.0.1). */
  host?: string;
  /** The worker's TMPDIR (default: a new folder of its own, removed when it stops). */
  tmpdir?: string;
  /** Variables added to the worker's environment (this process's is inherited): a model's key, say. */
  env?: Readonly<Record<string, string>>;
  timeoutMs?: number;
  /** How long a SIGTERM lets runs in flight go on before the worker cuts its connections (its default: 5 s). */
  graceMs?: number;
  /** The engine's public keys: handed to the child in its environment, never on its command line. */
  identityKeys: readonly string[];
  /** The workers' secret (`engine.workerCredential`): handed over the same way. */
  workerSecret: string;
  /** The suite folders whose eval cases it runs (`--suites`). */
  suites?: readonly string[];
  /** The name of its code (`--version`). */
  version?: string;
  /** The longest wait between the engine's retries of a run (`--retry-max-ms`). */
  retryMaxMs?: number;
}): Promise<WorkerProcess> {
  if (options.bundle !== undefined && options.setups !== undefined) {
    return Promise.reject(
      new Error("spawnWorker: a bundle has its setups built in; give `bundle` or `setups`, not both"),
    );
  }
  const fromSources = options.bundle === undefined && EXT === ".ts";
  const program =
    options.bundle !== undefined ? [path.resolve(options.bundle)] : fromSources ? ["--import", "tsx", MAIN] : [MAIN];
  const host = options.host ?? "127.0.0.1";
  const child = spawn(
    process.execPath,
    [
      ...program,
      ...(options.setups === undefined ? [] : ["--setups", path.resolve(options.setups)]),
      ...(options.cases === undefined ? [] : ["--cases", String(options.cases)]),
      ...(options.graceMs === undefined ? [] : ["--grace-ms", String(options.graceMs)]),
      ...(options.tmpdir === undefined ? [] : ["--tmpdir", path.resolve(options.tmpdir)]),
      ...(options.host === undefined ? [] : ["--host", options.host]),
      ...(options.suites === undefined ? [] : ["--suites", options.suites.map((dir) => path.resolve(dir)).join(",")]),
      ...(options.version === undefined ? [] : ["--version", options.version]),
      ...(options.retryMaxMs === undefined ? [] : ["--retry-max-ms", String(options.retryMaxMs)]),
      "--port",
      String(options.port),
      "--stop-with-stdin",
    ],
    {
      cwd: fromSources ? ROOT : process.cwd(),
      stdio: ["pipe", "pipe", "pipe"],
      env: {
        ...process.env,
        ...options.env,
        [IDENTITY_KEYS_ENV]: [...options.identityKeys, options.workerSecret].join(","),
      },
    },
  );
  child.stdin?.on("error", () => undefined);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const stop = async (graceMs?: number) => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      const kill = setTimeout(() => child.kill("SIGKILL"), (graceMs ?? options.graceMs ?? 5000) + 1000);
      await exited;
      clearTimeout(kill);
    }
  };
  const where = `${host}:${options.port === 0 ? "(any port)" : options.port}`;
  return new Promise((resolve, reject) => {
    let stderr = "";
    let stdout = "";
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (chunk: string) => {
      stderr = (stderr + chunk).slice(-4000);
    });
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`the worker on ${where} did not start within ${options.timeoutMs ?? 120_000} ms: ${stderr}`));
    }, options.timeoutMs ?? 120_000);
    child.stdout?.setEncoding("utf8");
    const listening = (chunk: string) => {
      stdout += chunk;
      const url = / listening on (\S+).*\n/.exec(stdout)?.[1];
      if (url !== undefined) {
        clearTimeout(timer);
        // what the worker prints from now on is not kept (the pipe still drains, so it never blocks)
        child.stdout?.off("data", listening).resume();
        resolve({ child, pid: child.pid!, port: Number(new URL(url).port), url, stop });
      }
    };
    child.stdout?.on("data", listening);
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`the worker on ${where} exited (${code ?? signal}) before listening: ${stderr}`));
    });
  });
}
