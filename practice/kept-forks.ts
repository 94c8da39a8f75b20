/**
 * Kept forks: a vitest pool whose worker processes outlive a run, for the wrong versions' runner
 * (wrong-runner.ts), which starts one run per version, often a hundred in a row in one folder.
 * vitest's own pools end every worker when its run ends (with `isolate: false` too: a worker is
 * shared only with files already queued in the same run), so each version paid a new process,
 * vitest's worker set-up, and the import of every package the tests load (TypeBox's hundreds of
 * modules among them): most of a version's CPU. Here a worker that ends its run clean waits for
 * the next one.
 *
 * What a kept worker keeps, and what it does not: it runs with `isolate: true` (vitest's default),
 * so before each test file vitest's worker marks every module it evaluated as not evaluated, except
 * its own (`resetModules`): the test file, the folder's code and its mocks are evaluated afresh in
 * every run, as in a new process. What stays is what Node itself holds: the packages vitest leaves
 * to Node's loader (node_modules), and the process's global state. A changed file is re-read only
 * when the run names it in `vitest.watcher.invalidates` (wrong-runner.ts does, for the file it
 * changes and for the file it writes back): the worker re-fetches only invalidated modules' code.
 *
 * A worker is kept only if its run leaves the process as it found it. When a runner lets it go
 * (vitest calls `stop`), it is asked for a probe (kept-fork-entry.mjs: active handles and timers by
 * type, process listeners, environment, working directory) and compared with the probe after its
 * first run, which vitest's worker needs to finish its own set-up (wrong-runner.ts makes that an
 * empty test: kept-fork-warm-up.ts). A handle or timer more than then, or another listener count,
 * variable or directory (a server left listening, an interval left ticking, a listener left
 * behind) ends it, and the next run gets a new process. The runner ends them all too (`retire`)
 * after a run that shows trouble a probe cannot see (a test that ran out of time may still be
 * running; an unhandled error).
 *
 * The vitest internals this relies on: that its worker process keeps its evaluated-module cache
 * and its environment between runs (it does between files of one run), and re-fetches a module
 * only when the run's `invalidates` name it; and the path of its forks worker
 * (`<distPath>/workers/forks.js`, where vitest's own `ForksPoolWorker` starts it).
 *
 * Built on vitest's custom pool API (`pool: { name, createPoolWorker }`, experimental in vitest 4)
 * and its public worker message types (`WorkerRequest`, `WorkerResponse`): a kept worker answers a
 * second runner's `start` and a runner's `stop` itself ("started", "stopped"), after the worker's
 * run in flight has finished, instead of passing them on (the worker would tear its environment
 * down on `stop`). Everything else goes to the worker as it is. The process itself is vitest's
 * `ForksPoolWorker`, started on kept-fork-entry.mjs, which loads vitest's forks worker.
 */
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { ForksPoolWorker, type PoolOptions, type PoolWorker, type WorkerRequest } from "vitest/node";

const ENTRY = fileURLToPath(new URL("./kept-fork-entry.mjs", import.meta.url));
/** How long a kept worker may take to answer a probe before it is ended instead. */
const PROBE_LIMIT_MS = 5_000;

interface Probe {
  resources: Record<string, number>;
  listeners: Record<string, number>;
  env: string;
  cwd: string;
}

/** vitest's forks worker process, started on our entry (which loads vitest's). */
class ProbedFork extends ForksPoolWorker {
  protected override readonly entrypoint = ENTRY;
  constructor(options: PoolOptions) {
    super(options);
    this.env = { ...this.env, PI_KEPT_FORK_VITEST_ENTRY: resolve(options.distPath, "workers/forks.js") };
  }
}

/** One kept process and what is known about it. */
interface Kept {
  fork: ProbedFork;
  /** Its `start` message went through: the worker is set up. */
  started: boolean;
  /** The config of that start: every later runner must bring the same. */
  config?: string;
  /** Runs and collects sent and not yet answered with `testfileFinished`. */
  inFlight: number;
  /** Called when `inFlight` drops to 0. */
  whenIdle: (() => void)[];
  /** The probe after its first run (a warm-up): what "left as found" means. */
  baseline?: Probe;
  exited: boolean;
}

export interface KeptForks {
  /** The `pool` option of `createVitest`. */
  pool: { name: string; createPoolWorker: (options: PoolOptions) => PoolWorker };
  /** Whether a kept process waits for the next run (once every runner has let its process go). */
  hasIdle(): Promise<boolean>;
  /** Ends every idle kept process: the next run starts a new one. */
  retire(): Promise<void>;
  /** Processes started, runs that got a kept one, processes ended early (found changed, or retired). */
  counts(): { started: number; reused: number; ended: number };
  /** Ends every process, idle or busy (vitest's stop: SIGTERM, then SIGKILL after 500 ms). */
  close(): Promise<void>;
}

/** `now` holds nothing `baseline` does not: no more handles or timers of any type, the same listeners, environment and directory. */
const leftAsFound = (now: Probe, baseline: Probe): boolean =>
  Object.entries(now.resources).every(([type, count]) => count <= (baseline.resources[type] ?? 0)) &&
  JSON.stringify(now.listeners) === JSON.stringify(baseline.listeners) &&
  now.env === baseline.env &&
  now.cwd === baseline.cwd;

/** A pool of kept forks for one vitest instance. `name` must not be one of vitest's pools. */
export function keptForks(name = "kept-forks"): KeptForks {
  const idle: Kept[] = [];
  const all = new Set<Kept>();
  /**
   * One promise per runner holding a process, settled once it has let it go (kept or ended).
   * vitest stops a runner after its run has resolved, without waiting: the next run must wait
   * for that, or it would start a new process while the kept one is on its way back.
   */
  const held = new Set<Promise<void>>();
  const settled = async () => {
    while (held.size > 0) await Promise.all(held);
  };
  const counts = { started: 0, reused: 0, ended: 0 };

  async function end(kept: Kept): Promise<void> {
    all.delete(kept);
    if (!kept.exited) await kept.fork.stop().catch(() => {});
  }

  function probe(kept: Kept): Promise<Probe | undefined> {
    return new Promise((done) => {
      if (kept.exited) return done(undefined);
      const timer = setTimeout(() => finish(undefined), PROBE_LIMIT_MS);
      const onMessage = (message: unknown) => {
        const answer = (message as { __piProbe__?: Probe } | null)?.__piProbe__;
        if (answer !== undefined) finish(answer);
      };
      const finish = (answer: Probe | undefined) => {
        clearTimeout(timer);
        kept.fork.off("message", onMessage);
        done(answer);
      };
      kept.fork.on("message", onMessage);
      try {
        kept.fork.send({ __piProbe__: true } as unknown as WorkerRequest);
      } catch {
        finish(undefined);
      }
    });
  }

  async function spawnKept(options: PoolOptions): Promise<Kept> {
    const fork = new ProbedFork(options);
    const kept: Kept = { fork, started: false, inFlight: 0, whenIdle: [], exited: false };
    await fork.start();
    counts.started++;
    all.add(kept);
    const wake = () => {
      for (const callback of kept.whenIdle.splice(0)) callback();
    };
    fork.on("exit", () => {
      kept.exited = true;
      all.delete(kept);
      const at = idle.indexOf(kept);
      if (at >= 0) idle.splice(at, 1);
      wake();
    });
    fork.on("message", (message: { __vitest_worker_response__?: boolean; type?: string }) => {
      if (message?.__vitest_worker_response__ && message.type === "testfileFinished") {
        kept.inFlight = Math.max(0, kept.inFlight - 1);
        if (kept.inFlight === 0) wake();
      }
    });
    return kept;
  }

  /** What vitest's pool sees: one per runner, lending it a kept process. */
  class KeptWorker implements PoolWorker {
    readonly name = name;
    readonly cacheFs = true;
    private kept: Kept | undefined;
    private letGo: (() => void) | undefined;
    private readonly listeners: [string, (arg: any) => void][] = [];
    constructor(private readonly options: PoolOptions) {}

    async start(): Promise<void> {
      await settled();
      const holding: Promise<void> = new Promise<void>((resolve) => (this.letGo = resolve)).then(() => {
        held.delete(holding);
      });
      held.add(holding);
      const reused = idle.pop();
      if (reused) counts.reused++;
      this.kept = reused ?? (await spawnKept(this.options));
    }

    on(event: string, callback: (arg: any) => void): void {
      this.listeners.push([event, callback]);
      this.kept!.fork.on(event, callback);
    }

    off(event: string, callback: (arg: any) => void): void {
      const at = this.listeners.findIndex(([e, c]) => e === event && c === callback);
      if (at >= 0) this.listeners.splice(at, 1);
      this.kept?.fork.off(event, callback);
    }

    /** Tells this runner's listeners what the worker would have answered. */
    private answer(type: "started" | "stopped", error?: Error): void {
      const message = { __vitest_worker_response__: true, type, error };
      for (const [event, callback] of [...this.listeners]) if (event === "message") callback(message);
    }

    send(message: WorkerRequest): void {
      const kept = this.kept!;
      if (message.__vitest_worker_request__ === true) {
        if (message.type === "start") {
          const config = JSON.stringify(message.context.config);
          if (kept.started) {
            // The worker keeps the config of its first start for every run: a run that needs
            // another (a global test name pattern, another bail) cannot use it.
            const error =
              config === kept.config
                ? undefined
                : new Error(
                    "kept-forks: this run's config differs from the one its kept worker started with; " +
                      "give each specification its test name pattern (createSpecification's testNamePattern), not setGlobalTestNamePattern",
                  );
            setImmediate(() => this.answer("started", error));
            return;
          }
          kept.started = true;
          kept.config = config;
        } else if (message.type === "stop") {
          // The worker would finish its run, then answer: so do we, and it stays set up.
          const stopped = () => setImmediate(() => this.answer("stopped"));
          if (kept.inFlight === 0 || kept.exited) stopped();
          else kept.whenIdle.push(stopped);
          return;
        } else if (message.type === "run" || message.type === "collect") {
          kept.inFlight++;
        }
      }
      kept.fork.send(message);
    }

    async stop(): Promise<void> {
      const kept = this.kept;
      if (!kept) return;
      this.kept = undefined;
      try {
        await this.release(kept);
      } finally {
        this.letGo?.();
      }
    }

    /** Keeps `kept` for the next run if it is idle and left as found; else ends it. */
    private async release(kept: Kept): Promise<void> {
      for (const [event, callback] of this.listeners.splice(0)) kept.fork.off(event, callback);
      // A forced stop (a cancelled or failed task) may come with a run still in flight.
      if (kept.exited || kept.inFlight > 0 || !kept.started) return end(kept);
      const now = await probe(kept);
      kept.baseline ??= now;
      if (now === undefined || !leftAsFound(now, kept.baseline!)) {
        counts.ended++;
        return end(kept);
      }
      idle.push(kept);
    }

    deserialize(data: unknown): unknown {
      return data;
    }
  }

  return {
    pool: { name, createPoolWorker: (options) => new KeptWorker(options) },
    async hasIdle() {
      await settled();
      return idle.length > 0;
    },
    async retire() {
      await settled();
      counts.ended += idle.length;
      await Promise.all(idle.splice(0).map(end));
    },
    counts: () => ({ ...counts }),
    async close() {
      idle.length = 0;
      await Promise.all([...all].map(end));
    },
  };
}
