/**
 * The runner of a chapter's test runs (proof.ts): one vitest instance, started once in one folder,
 * runs the tests of each view of the chapter in turn: practice(N), its progress views, snapshot(N).
 * Consecutive views differ by a lab's bodies, so the proof writes only the files that changed and
 * names them here; they are invalidated in vitest's module graph before the run, and every test
 * file runs in a fresh worker (vitest's default isolation), so no run sees a module of an earlier
 * view. Starting vitest (its config, its vite server, its pool) and transforming the library's
 * modules were paid once per view before; now once per chapter.
 *
 * Protocol: stdin carries one `FolderRun` (JSON) per line; stdout answers each with one line
 * `@@run <json RunReport>`, in order. When stdin ends: vitest is closed (its workers awaited), one
 * line `@@cpu <ms>` says the CPU this process and its reaped workers used (Linux; otherwise this
 * process's only), and the process exits. The working directory is the folder. A run that never
 * ends is the proof's to stop: it kills this process's group and starts a new runner.
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { createInterface } from "node:readline";
import { createVitest, type TestModule } from "vitest/node";

/** One run: the view's files are on disk already. */
export interface FolderRun {
  /** Folder-relative files written (or removed) since the previous run: invalidated first. */
  changed: string[];
  /** Folder-relative test files to run. */
  testFiles: string[];
  /** The `-t` pattern, if any. */
  pattern?: string;
}

/** What one run found: each test file's outcomes with its errors' message, stack and diff. */
export interface RunReport {
  files: {
    name: string;
    errors: string[];
    tests: { title: string; fullName: string; state: string; errors: string[] }[];
  }[];
  unhandled: string[];
  /** vitest's verdict on the run (`passed` when `vitest run` would exit 0). */
  state: string;
}

/** An error's message, stack and diff: a construction site's error may show only in the diff (e.g. inside an error event a test compared with toEqual). */
export const errorText = (e: { message?: string; stack?: string; diff?: string }) =>
  [e.message, e.stack, e.diff].filter(Boolean).join("\n");

/** Each test module's outcomes, as the proof reads them (wrong-runner.ts reports the same shape). */
export function moduleReports(modules: readonly TestModule[]): RunReport["files"] {
  return modules.map((m) => ({
    name: m.moduleId,
    errors: m.errors().map(errorText),
    tests: [...m.children.allTests()].map((t) => {
      const r = t.result();
      return { title: t.name, fullName: t.fullName, state: r.state, errors: (r.errors ?? []).map(errorText) };
    }),
  }));
}

/** CPU milliseconds of this process and of the children it has reaped (vitest's workers). */
function cpuMs(): number {
  const own = process.cpuUsage();
  let children = 0;
  try {
    // /proc/self/stat after the command's name: field 14 and 15 (cutime, cstime) are at 13 and 14, in ticks of 10 ms.
    const fields = readFileSync("/proc/self/stat", "utf8").split(") ")[1]!.split(" ");
    children = (Number(fields[13]) + Number(fields[14])) * 10;
  } catch {
    // not Linux: this process's own CPU only
  }
  return Math.round((own.user + own.system) / 1000 + children);
}

async function main(): Promise<void> {
  const folder = process.cwd();
  type End = { modules: readonly TestModule[]; errors: readonly unknown[]; state: string };
  let ended: End | undefined;
  const reporter = {
    onInit() {},
    onTestRunEnd(modules: readonly TestModule[], errors: readonly unknown[], state: string) {
      ended = { modules, errors, state };
    },
  };
  // As `vitest run --no-cache` in the folder: its own vitest.config.ts, nothing printed.
  const vitest = await createVitest(
    "test",
    { root: folder, watch: false, cache: false, reporters: [reporter] },
    { logLevel: "silent" },
  );
  for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
    if (line.trim() === "") continue;
    const run = JSON.parse(line) as FolderRun;
    for (const file of run.changed) vitest.invalidateFile(resolve(folder, file));
    if (run.pattern !== undefined) vitest.setGlobalTestNamePattern(run.pattern);
    else vitest.resetGlobalTestNamePattern();
    const specs = run.testFiles.map((f) => vitest.getRootProject().createSpecification(resolve(folder, f)));
    ended = undefined;
    await vitest.runTestSpecifications(specs);
    // The run's own modules, as its reporter heard them (vitest's state holds every module run so far).
    const end = ended as End | undefined;
    if (end === undefined) throw new Error("vitest did not report the end of the run");
    const report: RunReport = {
      files: moduleReports(end.modules),
      unhandled: end.errors.map((e) => errorText(e as Error)),
      state: end.state,
    };
    process.stdout.write(`@@run ${JSON.stringify(report)}\n`);
  }
  await vitest.close();
  process.stdout.write(`@@cpu ${cpuMs()}\n`);
  process.exit(0);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
