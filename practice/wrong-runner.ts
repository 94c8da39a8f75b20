/**
 * The runner of a chapter's wrong versions (proof.ts, `ChapterSpec.wrong`): one vitest instance,
 * started once in one folder written once (the chapter's snapshot), runs every wrong version in
 * turn: write the file with the wrong text, tell vitest it changed, run only the test files that
 * name the lab, with the lab's `-t` pattern, stopping at the first failure (`bail`), then write
 * the file back and tell vitest again. Starting vitest and writing a folder cost more than most
 * labs' tests (~2 s and ~1 s on a loaded 2-core machine): paid once per chapter, not per version.
 *
 * The test files run in a kept worker process (kept-forks.ts), one file at a time, from one
 * version to the next: a new process per version (vitest's own pools end theirs with each run)
 * was most of a version's CPU. "Tell vitest it changed" is two public calls: `invalidateFile`
 * (its server reads the file again) and `watcher.invalidates` (the next run's worker fetches it
 * again instead of its cached code); the worker evaluates every module of the folder afresh in
 * every run anyway (`isolate`, vitest's default), so a file that imports the changed one (test →
 * a → b, b changed) never holds the old one. Each version's name pattern is given with its test
 * files (`createSpecification`'s `testNamePattern`): a kept worker keeps the config it started
 * with. A new kept worker first runs an empty test (kept-fork-warm-up.ts), after which the process
 * is as every run must leave it; a version whose run leaves it otherwise (a server or timer left
 * running, a listener, a variable), or that shows trouble a probe cannot see (a test that ran out
 * of time may still be running; an error escaped), ends it: the next version gets a new one. An
 * error that escapes a version run in a worker that ran an earlier version is checked again in a
 * new worker, so an error left behind by an earlier version is never blamed on this one.
 *
 * When the first failure does not report `failsWith`, the version runs once more without `bail`
 * (some other test of the lab may be the one that names it), in a second vitest instance.
 *
 * Input: the path of a JSON file holding `WrongJob[]` (argument 1); the folder is the working
 * directory. Output: one line `@@wrong <json WrongResult>` per job on stdout, in order, then one
 * `@@spent <json WrongSpent>`. A job whose run does not end within its limit (a test that blocks
 * its worker's event loop) is answered `{hung: true}`, its file written back, its workers ended,
 * and the runner exits: the proof starts a new one for the jobs after it.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createVitest, type TestModule } from "vitest/node";
import { keptForks, type KeptForks } from "./kept-forks.js";

export interface WrongJob {
  /** Folder-relative file to change. */
  file: string;
  find: string;
  replace: string;
  /** The `-t` pattern of the tests that must catch it. */
  pattern: string;
  /** Folder-relative test files to run (those naming the lab). */
  testFiles: string[];
  /** The text the failure must report: decides whether the `bail` run is enough. */
  failsWith: string;
  limitMs: number;
}

export interface WrongResult {
  hung?: boolean;
  /** Set when the file did not hold `find` exactly once. */
  notFound?: number;
  ms: number;
  files: {
    name: string;
    errors: string[];
    tests: { title: string; fullName: string; state: string; errors: string[] }[];
  }[];
  unhandled: string[];
}

/** What a runner used, printed once at its end (`@@spent`). */
export interface WrongSpent {
  /** CPU time of this process and of the worker processes it ended (user + system). */
  cpuMs: number;
  /** Per vitest instance (the bailing one, then the thorough one if it was needed). */
  workers: { started: number; reused: number; ended: number }[];
}

/**
 * CPU milliseconds of this process and of its ended children: `process.cpuUsage()` for itself,
 * and the children's share from /proc/self/stat (cutime, cstime in clock ticks, 100 a second on
 * Linux); elsewhere only this process's.
 */
function cpuMs(): number {
  const own = process.cpuUsage();
  let children = 0;
  try {
    const stat = readFileSync("/proc/self/stat", "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    children = (Number(fields[13]) + Number(fields[14])) * 10;
  } catch {}
  return Math.round((own.user + own.system) / 1000 + children);
}

const WARM_UP = fileURLToPath(new URL("./kept-fork-warm-up.ts", import.meta.url));

const text = (e: { message?: string; stack?: string; diff?: string }) =>
  [e.message, e.stack, e.diff].filter(Boolean).join("\n");

function report(modules: readonly TestModule[]): WrongResult["files"] {
  return modules.map((m) => ({
    name: m.moduleId,
    errors: m.errors().map(text),
    tests: [...m.children.allTests()].map((t) => {
      const r = t.result();
      return { title: t.name, fullName: t.fullName, state: r.state, errors: (r.errors ?? []).map(text) };
    }),
  }));
}

/** A test or hook that ran out of time may still be running in its worker. */
const TIMED_OUT = /(Test|Hook) timed out in \d+ms/;

/** A run that leaves its worker in doubt: the next run gets a new one. */
function troubled(result: WrongResult): boolean {
  return (
    result.unhandled.length > 0 ||
    result.files.some((f) => f.errors.length > 0 || f.tests.some((t) => t.errors.some((e) => TIMED_OUT.test(e))))
  );
}

type Vitest = Awaited<ReturnType<typeof createVitest>>;

/** One vitest instance and its kept worker processes. */
interface Runner {
  vitest: Vitest;
  kept: KeptForks;
}

async function open(folder: string, bail: number): Promise<Runner> {
  const kept = keptForks();
  const vitest = await createVitest(
    "test",
    {
      root: folder,
      watch: false,
      cache: false,
      reporters: [{ onInit() {} }],
      bail,
      passWithNoTests: true,
      pool: kept.pool,
      // One file at a time, so one kept worker serves them all.
      maxWorkers: 1,
    },
    { logLevel: "silent" },
  );
  return { vitest, kept };
}

/** The first run of a new kept worker: an empty test, after which the process is as every run must leave it. */
async function warmUp({ vitest }: Runner): Promise<void> {
  const spec = vitest.getRootProject().createSpecification(WARM_UP);
  const result = await vitest.runTestSpecifications([spec]);
  const module = result.testModules.find((m) => resolve(m.moduleId) === WARM_UP);
  if (module?.state() !== "passed") {
    const why = [...(module?.errors() ?? []), ...result.unhandledErrors].map((e) => text(e as Error)).join("\n");
    throw new Error(`the kept worker's warm-up run (${WARM_UP}) did not pass: ${why || module?.state()}`);
  }
}

/** Tells the runner's vitest that `path` changed: its server re-reads it, its worker re-fetches it. */
function changed({ vitest }: Runner, path: string): void {
  vitest.invalidateFile(path);
  vitest.watcher.invalidates.add(path);
}

async function main(): Promise<void> {
  const jobs = JSON.parse(readFileSync(process.argv[2]!, "utf8")) as WrongJob[];
  const folder = process.cwd();
  const bailing = await open(folder, 1);
  let thorough: Runner | undefined;
  const runners = () => [bailing, ...(thorough ? [thorough] : [])];
  const emit = (result: WrongResult) => process.stdout.write(`@@wrong ${JSON.stringify(result)}\n`);
  for (const job of jobs) {
    const path = resolve(folder, job.file);
    const original = readFileSync(path, "utf8");
    const count = original.split(job.find).length - 1;
    if (count !== 1) {
      emit({ notFound: count, ms: 0, files: [], unhandled: [] });
      continue;
    }
    const started = Date.now();
    writeFileSync(
      path,
      original.replace(job.find, () => job.replace),
    );
    const once = async ({ vitest }: Runner): Promise<WrongResult | undefined> => {
      const pattern = new RegExp(job.pattern);
      const specs = job.testFiles.map((f) =>
        vitest.getRootProject().createSpecification(resolve(folder, f), { testNamePattern: pattern }),
      );
      let timer: NodeJS.Timeout | undefined;
      const hung = new Promise<undefined>((done) => {
        timer = setTimeout(() => done(undefined), job.limitMs);
      });
      const result = await Promise.race([vitest.runTestSpecifications(specs), hung]);
      clearTimeout(timer);
      if (result === undefined) return undefined;
      // The state holds every module run so far: keep this job's.
      const mine = new Set(job.testFiles.map((f) => resolve(folder, f)));
      return {
        ms: Date.now() - started,
        files: report(result.testModules.filter((m) => mine.has(resolve(m.moduleId)))),
        unhandled: result.unhandledErrors.map((e) => text(e as Error)),
      };
    };
    const run = async (runner: Runner): Promise<WrongResult | undefined> => {
      changed(runner, path);
      const fresh = !(await runner.kept.hasIdle());
      if (fresh) await warmUp(runner);
      let result = await once(runner);
      if (result === undefined || !troubled(result)) return result;
      await runner.kept.retire();
      // An error that escaped may be an earlier version's, left running in the kept worker: a new
      // worker decides whose it is.
      if (!fresh && result.unhandled.length > 0) {
        await warmUp(runner);
        result = await once(runner);
        if (result !== undefined && troubled(result)) await runner.kept.retire();
      }
      return result;
    };
    try {
      let result = await run(bailing);
      const named = (r: WrongResult) =>
        r.files.some((f) =>
          f.tests.some((t) => t.state === "failed" && t.errors.some((e) => e.includes(job.failsWith))),
        );
      if (
        result !== undefined &&
        !named(result) &&
        result.files.some((f) => f.tests.some((t) => t.state === "failed"))
      ) {
        thorough ??= await open(folder, 0);
        result = await run(thorough);
      }
      if (result === undefined) {
        writeFileSync(path, original);
        // A hung worker does not end by itself when this process does.
        await Promise.all(runners().map((r) => r.kept.close()));
        emit({ hung: true, ms: Date.now() - started, files: [], unhandled: [] });
        process.exit(3);
      }
      emit(result);
    } finally {
      writeFileSync(path, original);
      for (const runner of runners()) changed(runner, path);
    }
  }
  await Promise.all(runners().map((r) => r.vitest.close()));
  await Promise.all(runners().map((r) => r.kept.close()));
  const spent: WrongSpent = { cpuMs: cpuMs(), workers: runners().map((r) => r.kept.counts()) };
  process.stdout.write(`@@spent ${JSON.stringify(spent)}\n`);
  process.exit(0);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
