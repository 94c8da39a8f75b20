/**
 * A worker as a child process, for the command line, the tests and the bench: they need processes
 * a SIGKILL can end. Either `worker-main.ts` under tsx (importing @pi/course from its sources
 * through the root tsconfig's `paths`; it loads a setups module by path), or a bundle written by
 * `bundleWorker` under plain Node (setups built in; it starts about 15 times sooner).
 */
import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { IDENTITY_KEYS_ENV } from "./identity.js";

const HERE = path.dirname(fileURLToPath(import.meta.url));
/** The workspace's root: where `tsx` resolves from. */
const ROOT = path.resolve(HERE, "..", "..", "..");
const MAIN = path.join(HERE, "worker-main.ts");

export interface WorkerProcess {
  child: ChildProcess;
  pid: number;
  port: number;
  url: string;
}

/**
 * Starts a worker serving `setups` (a module path; none: eval cases only) on `port` and resolves once it listens; rejects
 * with its error output if it exits first or is not listening within `timeoutMs` (default 30 s).
 */
export function spawnWorker(options: {
  /** A setups module, loaded by path (not with `bundle`, which has its setups built in). */
  setups?: string;
  /** A file written by `bundleWorker`: run by Node as it is, instead of `worker-main.ts` under tsx. */
  bundle?: string;
  cases?: number;
  port: number;
  /** The worker's TMPDIR (default: this process's): workers on one machine running eval cases need one each. */
  tmpdir?: string;
  timeoutMs?: number;
  /** How long a SIGTERM lets runs in flight go on before the worker cuts its connections (its default: 5 s). */
  graceMs?: number;
  /** The engine's identity keys: handed to the child in its environment, never on its command line. */
  identityKeys: readonly string[];
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
  const program = options.bundle === undefined ? ["--import", "tsx", MAIN] : [path.resolve(options.bundle)];
  const child = spawn(
    process.execPath,
    [
      ...program,
      ...(options.setups === undefined ? [] : ["--setups", path.resolve(options.setups)]),
      ...(options.cases === undefined ? [] : ["--cases", String(options.cases)]),
      ...(options.graceMs === undefined ? [] : ["--grace-ms", String(options.graceMs)]),
      ...(options.suites === undefined ? [] : ["--suites", options.suites.map((dir) => path.resolve(dir)).join(",")]),
      ...(options.version === undefined ? [] : ["--version", options.version]),
      ...(options.retryMaxMs === undefined ? [] : ["--retry-max-ms", String(options.retryMaxMs)]),
      "--port",
      String(options.port),
    ],
    {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "pipe"],
      env: {
        ...process.env,
        [IDENTITY_KEYS_ENV]: options.identityKeys.join(","),
        ...(options.tmpdir !== undefined && { TMPDIR: options.tmpdir }),
      },
    },
  );
  return new Promise((resolve, reject) => {
    let stderr = "";
    let stdout = "";
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (chunk: string) => {
      stderr = (stderr + chunk).slice(-4000);
    });
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`the worker on port ${options.port} did not start in time: ${stderr}`));
    }, options.timeoutMs ?? 30_000);
    child.stdout?.setEncoding("utf8");
    const listening = (chunk: string) => {
      stdout += chunk;
      if (stdout.includes("listening on")) {
        clearTimeout(timer);
        // what the worker prints from now on is not kept (the pipe still drains, so it never blocks)
        child.stdout?.off("data", listening).resume();
        resolve({ child, pid: child.pid!, port: options.port, url: `http://127.0.0.1:${options.port}` });
      }
    };
    child.stdout?.on("data", listening);
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`the worker on port ${options.port} exited (${code ?? signal}) before listening: ${stderr}`));
    });
  });
}
