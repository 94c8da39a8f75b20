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
import { type Proxy, startProxy } from "../../src/proxy.js";
import { type RestateServer, startRestateServer } from "../../src/restate-server.js";
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
 * A Restate server (its files in `dir`) with `fleet`'s workers started on `ports`, all behind one
 * proxy that the server knows as its deployment.
 */
export async function startEngine(
  fleet: Fleet,
  dir: string,
  ports: readonly number[],
): Promise<{ server: RestateServer; proxy: Proxy }> {
  const [server] = await Promise.all([startRestateServer({ dir }), ...ports.map((port) => fleet.start(port))]);
  const proxy = await startProxy({ workers: ports.map((port) => `http://127.0.0.1:${port}`) });
  await server.register(proxy.url);
  return { server, proxy };
}

export class Fleet {
  /** Every worker started, killed or not, in order. */
  readonly workers: WorkerProcess[] = [];
  private readonly starting: Promise<void>[] = [];
  private referee: NodeJS.Timeout | undefined;

  constructor(private readonly spawn: (port: number) => Promise<WorkerProcess>) {}

  /** Starts a worker on `port` and resolves once it listens. */
  async start(port: number): Promise<void> {
    this.workers.push(await this.spawn(port));
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

/** A Restate server and one bundled worker, the worker registered as the server's deployment. */
export interface EngineAndWorker {
  server: RestateServer;
  worker: WorkerProcess;
  /** The worker's bundle (to start another worker of it). */
  bundle: string;
  /** Ends the worker (the current one), the server, and removes the bundle. */
  stop(): Promise<void>;
}

/**
 * Starts a Restate server (its files in `dir`) and one worker bundled with `setups` (none: eval
 * cases only; `env` added to its environment) together, and registers the worker. If either
 * fails to start, what did start is stopped before the failure is thrown.
 */
export async function engineAndWorker(
  dir: string,
  options: { setups?: string; env?: Record<string, string> } = {},
): Promise<EngineAndWorker> {
  const bundle = await testBundle(options.setups);
  const [s, w] = await Promise.allSettled([
    startRestateServer({ dir }),
    spawnWorker({ bundle: bundle.file, port: 0, ...(options.env !== undefined && { env: options.env }) }),
  ]);
  const started: EngineAndWorker = {
    server: s.status === "fulfilled" ? s.value : (undefined as never),
    worker: w.status === "fulfilled" ? w.value : (undefined as never),
    bundle: bundle.file,
    async stop() {
      await started.worker?.stop(0);
      await started.server?.stop(1000);
      await bundle.remove();
    },
  };
  try {
    if (s.status === "rejected") throw s.reason;
    if (w.status === "rejected") throw w.reason;
    await started.server.register(started.worker.url);
  } catch (error) {
    await started.stop();
    throw error;
  }
  return started;
}
