/**
 * The worker processes of a test that kills them: started on their ports, a killed one started
 * again on its port (as a supervisor would), a referee polling the test's kill points, and all of
 * it ended by `stop` (every start still under way waited for first, so none is left behind).
 *
 * The workers run from a bundle (`bundleWorker`): a restart then takes a fraction of a second, not
 * the seconds (tens of seconds on a loaded machine) of compiling and loading @pi/course again,
 * while every run waits on it when all workers were killed.
 */
import { rm } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { type EngineConnection, engineVersions, type VersionState } from "../../src/engine-client.js";
import { type Engine, startEngine } from "../../src/engine.js";
import type { WorkerCredential } from "../../src/identity.js";
import { freePort } from "../../src/restate-server.js";
import { bundleWorker } from "../../src/worker-bundle.js";
import { spawnWorker, type WorkerProcess } from "../../src/worker-process.js";

/** Where the tests write their bundles: inside the package, so the bundle finds its node_modules. */
const BUILD = fileURLToPath(new URL("../../.test-build/", import.meta.url));

/** Bundles a worker with `setups` (none: eval cases only) for this test file; `remove` deletes it. */
export async function testBundle(setups?: string): Promise<{ file: string; remove(): Promise<void> }> {
  const file = path.join(BUILD, `worker-${process.pid}-${Date.now()}.mjs`);
  await bundleWorker({ ...(setups !== undefined && { setups }), outfile: file });
  return { file, remove: () => rm(file, { force: true }) };
}

/**
 * The engine (its files in `dir`, workers expected on `ports`) with `fleet`'s workers started on
 * `ports` once its identity keys exist; resolves when their version serves.
 */
export async function engineWithFleet(
  fleet: Fleet,
  dir: string,
  ports: readonly number[],
  options: { watchMs?: number; log?: (line: string) => void } = {},
): Promise<Engine> {
  const engine = await startEngine({
    dir,
    workers: ports.map((port) => `http://127.0.0.1:${port}`),
    watchMs: options.watchMs ?? 100,
    log: options.log ?? (() => undefined),
  });
  fleet.credential = engine.workerCredential;
  try {
    await Promise.all(ports.map((port) => fleet.start(port)));
    await versionsUntil(engine, (versions) => versions.some((v) => v.state === "serving"));
  } catch (error) {
    await fleet.stop();
    await engine.stop();
    throw error;
  }
  return engine;
}

/** Polls the engine's versions until `done` says so; resolves with them. */
export async function versionsUntil(
  engine: EngineConnection,
  done: (versions: VersionState[]) => boolean,
): Promise<VersionState[]> {
  for (;;) {
    const versions = await engineVersions(engine);
    if (done(versions)) return versions;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export class Fleet {
  /** Every worker started, killed or not, in order. */
  readonly workers: WorkerProcess[] = [];
  private readonly starting: Promise<void>[] = [];
  private referee: NodeJS.Timeout | undefined;
  /** The engine's credential for workers, for every worker started from now on. */
  credential: WorkerCredential = { identityKeys: [], workerSecret: "" };

  constructor(private readonly spawn: (port: number, credential: WorkerCredential) => Promise<WorkerProcess>) {}

  /** Starts a worker on `port` and resolves once it listens. */
  async start(port: number): Promise<void> {
    this.workers.push(await this.spawn(port, this.credential));
  }

  /** The worker of `pid`, if its start is recorded. */
  byPid(pid: number): WorkerProcess | undefined {
    return this.workers.find((w) => w.pid === pid);
  }

  /** Whether `worker` was neither killed nor has exited. */
  alive(worker: WorkerProcess): boolean {
    return !worker.child.killed && worker.child.exitCode === null && worker.child.signalCode === null;
  }

  /**
   * SIGKILLs `worker` (then calls `alongside`, for what goes down with it), waits for its exit and
   * starts a new one on its port (not waited for).
   */
  async killAndRestart(worker: WorkerProcess, alongside?: () => void): Promise<void> {
    worker.child.kill("SIGKILL");
    alongside?.();
    await new Promise((resolve) => worker.child.once("exit", resolve));
    this.starting.push(this.start(worker.port));
  }

  /** Calls `judge` every 5 ms, one call at a time. */
  watch(judge: () => Promise<void>): void {
    let judging = false;
    this.referee = setInterval(() => {
      if (judging) return;
      judging = true;
      judge().finally(() => {
        judging = false;
      });
    }, 5);
  }

  /** Stops the referee, waits for starts under way, kills every worker still running. */
  async stop(): Promise<void> {
    if (this.referee !== undefined) clearInterval(this.referee);
    await Promise.allSettled(this.starting);
    for (const worker of this.workers) if (this.alive(worker)) worker.child.kill("SIGKILL");
  }
}

/** An engine and one bundled worker, its version serving. */
export interface EngineAndWorker {
  engine: Engine;
  worker: WorkerProcess;
  /** The worker's bundle (to start another worker of it). */
  bundle: string;
  /** Ends the worker (the current one), the engine, and removes the bundle. */
  stop(): Promise<void>;
}

/**
 * Starts an engine (its files in `dir`) and one worker bundled with `setups` (none: eval cases
 * only; `env` added to its environment, `suites` its suite folders) on a free port, and waits for
 * its version to serve. If either fails to start, what did start is stopped before the failure is
 * thrown.
 */
export async function engineAndWorker(
  dir: string,
  options: { setups?: string; env?: Record<string, string>; suites?: readonly string[] } = {},
): Promise<EngineAndWorker> {
  const bundle = await testBundle(options.setups);
  const port = await freePort();
  const started: Partial<EngineAndWorker> & { stop(): Promise<void> } = {
    bundle: bundle.file,
    async stop() {
      await started.worker?.stop(0);
      await started.engine?.stop();
      await bundle.remove();
    },
  };
  try {
    started.engine = await startEngine({
      dir,
      workers: [`http://127.0.0.1:${port}`],
      watchMs: 100,
      log: () => undefined,
    });
    started.worker = await spawnWorker({
      bundle: bundle.file,
      port,
      ...started.engine.workerCredential,
      ...(options.env !== undefined && { env: options.env }),
      ...(options.suites !== undefined && { suites: options.suites }),
    });
    await versionsUntil(started.engine, (versions) => versions.some((v) => v.state === "serving"));
  } catch (error) {
    await started.stop();
    throw error;
  }
  return started as EngineAndWorker;
}
