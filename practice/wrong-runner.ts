/**
 * The runner of a chapter's wrong versions (proof.ts, `ChapterSpec.wrong`): one vitest instance,
 * started once in one folder written once (the chapter's snapshot), runs every wrong version in
 * turn: write the file with the wrong text, invalidate it in vitest's module graph, run only the
 * test files that name the lab, with the lab's `-t` pattern, stopping at the first failure
 * (`bail`), then write the file back. Starting vitest and writing a folder cost more than most
 * labs' tests (~2 s and ~1 s on a loaded 2-core machine): paid once per chapter, not per version.
 *
 * When the first failure does not report `failsWith`, the version runs once more without `bail`
 * (some other test of the lab may be the one that names it).
 *
 * Input: the path of a JSON file holding `WrongJob[]` (argument 1); the folder is the working
 * directory. Output: one line `@@wrong <json WrongResult>` per job on stdout, in order. A job whose
 * run does not end within its limit (a test that blocks its worker's event loop) is answered
 * `{hung: true}`, its file written back, and the runner exits: the proof starts a new one for the
 * jobs after it.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { createVitest, type TestModule } from "vitest/node";

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

async function main(): Promise<void> {
  const jobs = JSON.parse(readFileSync(process.argv[2]!, "utf8")) as WrongJob[];
  const folder = process.cwd();
  const quiet = { onInit() {} };
  const start = (bail: number) =>
    createVitest(
      "test",
      { root: folder, watch: false, cache: false, reporters: [quiet], bail, passWithNoTests: true },
      { logLevel: "silent" },
    );
  const bailing = await start(1);
  let thorough: Awaited<ReturnType<typeof start>> | undefined;
  const emit = (result: WrongResult) => process.stdout.write(`@@wrong ${JSON.stringify(result)}\n`);
  for (const job of jobs) {
    const path = join(folder, job.file);
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
    const run = async (vitest: Awaited<ReturnType<typeof start>>): Promise<WrongResult | undefined> => {
      vitest.invalidateFile(resolve(path));
      vitest.setGlobalTestNamePattern(job.pattern);
      const specs = job.testFiles.flatMap((f) => vitest.getRootProject().createSpecification(resolve(folder, f)));
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
        thorough ??= await start(0);
        result = await run(thorough);
      }
      if (result === undefined) {
        writeFileSync(path, original);
        emit({ hung: true, ms: Date.now() - started, files: [], unhandled: [] });
        process.exit(3);
      }
      emit(result);
    } finally {
      writeFileSync(path, original);
    }
  }
  await Promise.all([bailing.close(), thorough?.close()]);
  process.exit(0);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
