/**
 * `npm run mutants -- NN [NN...]`: mutation testing of a chapter's labs. StrykerJS changes the
 * code inside the chapter's lab regions one small change at a time (a `<` for a `<=`, a removed
 * call, a flipped condition…) and runs the chapter's own tests against each change: a change no
 * test notices ("survived") is behaviour the chapter's tests do not pin down, which a learner's
 * wrong version could also get away with.
 *
 * For each chapter: the lab regions' lines are the `mutate` ranges, the tests are the test files
 * the chapter owns (its focused test and the test files it lists), run by vitest with a config of
 * their own, with `PI_COURSE_MUTANTS=1` set: a test that reads a lab's source text (which Stryker
 * rewrites) skips itself then. A second run is incremental (`reports/mutants/NN.incremental.json`):
 * only mutants whose code or covering tests changed run again; delete that file for a fresh run. The summary is printed per lab (score, killed, survived) with every surviving mutant
 * at its line; the whole report is `reports/mutants/NN.json` (mutation-testing-report-schema).
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { loadCatalogue, PACKAGE_DIR, REPO_ROOT, UsageError, type Chapter } from "./catalogue.js";
import { labsOf, scanSources } from "./generate.js";
import type { LabRegion } from "./markers.js";

/** Where the reports go (and the generated vitest configs), relative to the repository. */
export const MUTANTS_DIR = "reports/mutants";
/** Where the generated vitest configs go while Stryker runs (git ignores it). */
const MUTANTS_CONFIG_DIR = "practice/.mutants";

/** A lab region as lines to mutate: the lines between its markers. */
export interface LabRange {
  lab: string;
  symbol: string;
  /** Relative to the repository: packages/pi-course/src/…. */
  file: string;
  /** 1-based, inclusive. */
  from: number;
  to: number;
}

/**
 * The lines of `lab`'s body as its chapter has them: between its opening marker and the
 * `// #endregion` that closes it, without the lines of later chapters nested in it (`#region chNN`:
 * those are not in the chapter's files, and later chapters' tests check them). One range per run
 * of lines.
 */
export function labRanges(lab: LabRegion, source: string): LabRange[] {
  const lines = source.split("\n");
  const ranges: LabRange[] = [];
  let depth = 0;
  let from: number | undefined = lab.line + 1;
  const close = (to: number) => {
    if (from !== undefined && to >= from) ranges.push({ lab: lab.lab, symbol: lab.symbol, file: lab.file, from, to });
    from = undefined;
  };
  for (let i = lab.line; i < lines.length; i++) {
    const line = lines[i]!; // line number i + 1
    if (/^\s*\/\/ #region\b/.test(line)) {
      if (depth === 0) close(i);
      depth++;
    } else if (/^\s*\/\/ #endregion\b/.test(line)) {
      if (depth === 0) {
        close(i);
        return ranges;
      }
      depth--;
      if (depth === 0) from = i + 2;
    }
  }
  throw new Error(`${lab.file}:${lab.line}: lab ${lab.lab} has no matching // #endregion`);
}

/** One mutant as the JSON report has it (the fields used here). */
interface ReportMutant {
  id: string;
  mutatorName: string;
  replacement?: string;
  status: string;
  location: { start: { line: number; column: number }; end: { line: number; column: number } };
}

/** What one chapter's run found, per lab. */
export interface LabScore {
  lab: string;
  symbol: string;
  killed: number;
  survived: number;
  /** Timed out, or ran no test (NoCoverage): counted as detected / undetected as Stryker does. */
  timeout: number;
  noCoverage: number;
  /** Survivors: `file:line mutator: replacement`. */
  survivors: string[];
}

/** Scores per lab of a Stryker JSON report over `ranges`. */
export function scoresOf(
  report: { files: Record<string, { source: string; mutants: ReportMutant[] }> },
  ranges: LabRange[],
): LabScore[] {
  const labs = [...new Map(ranges.map((range) => [`${range.lab} ${range.symbol}`, range])).values()];
  const scores = labs.map((range) => ({
    lab: range.lab,
    symbol: range.symbol,
    killed: 0,
    survived: 0,
    timeout: 0,
    noCoverage: 0,
    survivors: [] as string[],
  }));
  for (const [file, { source, mutants }] of Object.entries(report.files)) {
    const rel = relative(REPO_ROOT, join(REPO_ROOT, file));
    const lines = source.split("\n");
    for (const mutant of mutants) {
      const range = ranges.find(
        (range) =>
          range.file === rel && mutant.location.start.line >= range.from && mutant.location.start.line <= range.to,
      );
      if (range === undefined) continue;
      // a lab split by a later chapter's nested lines has several ranges and one score
      const score = scores.find((lab) => lab.lab === range.lab && lab.symbol === range.symbol)!;
      switch (mutant.status) {
        case "Killed":
          score.killed++;
          break;
        case "Timeout":
          score.timeout++;
          break;
        case "NoCoverage":
          score.noCoverage++;
          score.survivors.push(describe(rel, lines, mutant, "no test ran it"));
          break;
        case "Survived":
          score.survived++;
          score.survivors.push(describe(rel, lines, mutant));
      }
    }
  }
  return scores;
}

function describe(file: string, lines: string[], mutant: ReportMutant, note?: string): string {
  const { start, end } = mutant.location;
  const original =
    start.line === end.line
      ? lines[start.line - 1]!.slice(start.column - 1, end.column - 1)
      : `${lines[start.line - 1]!.slice(start.column - 1)}…`;
  const shown = (text: string) => (text.length > 70 ? `${text.slice(0, 69)}…` : text).replace(/\s+/g, " ");
  return `${file}:${start.line} ${mutant.mutatorName}: ${shown(original)} → ${shown(mutant.replacement ?? "")}${note === undefined ? "" : ` (${note})`}`;
}

/** Mutation score: detected (killed or timed out) of all that were judged. */
export function scoreOf(score: Pick<LabScore, "killed" | "survived" | "timeout" | "noCoverage">): number {
  const all = score.killed + score.survived + score.timeout + score.noCoverage;
  return all === 0 ? 100 : (100 * (score.killed + score.timeout)) / all;
}

/** Runs Stryker over `chapter`'s labs against its own tests; returns the scores per lab. */
export async function mutateChapter(chapter: Chapter, ranges: LabRange[], testFiles: string[]): Promise<LabScore[]> {
  const dir = join(REPO_ROOT, MUTANTS_DIR);
  mkdirSync(dir, { recursive: true });
  // inside the copy Stryker runs in (reports/ is not copied)
  mkdirSync(join(REPO_ROOT, MUTANTS_CONFIG_DIR), { recursive: true });
  const config = join(REPO_ROOT, MUTANTS_CONFIG_DIR, `vitest.${chapter.id}.config.mjs`);
  writeFileSync(
    config,
    `// Generated by practice/mutants.ts: chapter ${chapter.id}'s own tests.\n` +
      'import { defineConfig } from "vitest/config";\n' +
      `export default defineConfig({ test: { include: ${JSON.stringify(testFiles)}, testTimeout: 20_000, hookTimeout: 60_000, env: { PI_COURSE_MUTANTS: "1" } } });\n`,
  );
  const reportFile = join(dir, `${chapter.id}.json`);
  const { Stryker } = await import("@stryker-mutator/core");
  const stryker = new Stryker({
    testRunner: "vitest",
    plugins: ["@stryker-mutator/vitest-runner"],
    vitest: { configFile: relative(REPO_ROOT, config), related: false },
    mutate: ranges.map((range) => `${range.file}:${range.from}-${range.to}`),
    coverageAnalysis: "perTest",
    concurrency: Number(process.env.MUTANTS_CONCURRENCY ?? 2),
    // a mutant that makes a test loop forever is detected (Timeout) once it runs this much past the plain run
    timeoutMS: 3_000,
    reporters: ["json", "progress"],
    jsonReporter: { fileName: relative(REPO_ROOT, reportFile) },
    // a second run reuses what the first judged where neither the mutant nor its tests changed
    incremental: true,
    incrementalFile: relative(REPO_ROOT, join(dir, `${chapter.id}.incremental.json`)),
    tempDirName: ".stryker-tmp",
    cleanTempDir: "always",
    ignorePatterns: ["bench", "reports", ".test-build", "**/.test-build", "docs", "evals"],
    disableTypeChecks: true,
    // the enum's value (LogLevel.Warning), without importing Stryker's api package
    logLevel: "warn" as never,
    allowEmpty: true,
  });
  // Stryker reads the project from the working folder (this script is its own process: npm run mutants)
  process.chdir(REPO_ROOT);
  try {
    await stryker.runMutationTest();
  } finally {
    rmSync(config, { force: true });
  }
  return scoresOf(JSON.parse(readFileSync(reportFile, "utf8")), ranges);
}

/** The lab ranges and the test files (relative to the repository) of `chapter`. */
export async function chapterTargets(
  id: string,
): Promise<{ chapter: Chapter; ranges: LabRange[]; testFiles: string[] }> {
  const catalogue = await loadCatalogue();
  const chapter = catalogue.get(id);
  if (chapter.labs.length === 0) throw new UsageError(`chapter ${id} has no labs to mutate (an observe chapter).`);
  const scan = scanSources(catalogue);
  const ranges = labsOf(chapter, scan).flatMap((lab) =>
    labRanges(lab, readFileSync(join(REPO_ROOT, lab.file), "utf8")),
  );
  const testFiles = [...scan.owners]
    .filter(([file, owner]) => owner === chapter && file.endsWith(".test.ts"))
    .map(([file]) => relative(REPO_ROOT, join(PACKAGE_DIR, file)))
    .sort();
  return { chapter, ranges, testFiles };
}

/** The printed summary of one chapter. */
export function summary(chapter: Chapter, scores: LabScore[]): string {
  const total = scores.reduce(
    (sum, s) => ({
      killed: sum.killed + s.killed,
      survived: sum.survived + s.survived,
      timeout: sum.timeout + s.timeout,
      noCoverage: sum.noCoverage + s.noCoverage,
    }),
    { killed: 0, survived: 0, timeout: 0, noCoverage: 0 },
  );
  const lines = [
    `chapter ${chapter.id} (${chapter.slug}): mutation score ${scoreOf(total).toFixed(1)}% ` +
      `(${total.killed} killed, ${total.timeout} timed out, ${total.survived} survived, ${total.noCoverage} not run by any test)`,
  ];
  for (const score of scores) {
    lines.push(
      `  Lab ${score.lab} ${score.symbol}: ${scoreOf(score).toFixed(1)}% (${score.killed + score.timeout} of ${score.killed + score.timeout + score.survived + score.noCoverage})`,
    );
    for (const survivor of score.survivors) lines.push(`    survived: ${survivor}`);
  }
  return lines.join("\n");
}

async function main(ids: string[]): Promise<void> {
  if (ids.length === 0)
    throw new UsageError("usage: npm run mutants -- NN [NN...] (two-digit chapter numbers, e.g. 07)");
  for (const id of ids) {
    const { chapter, ranges, testFiles } = await chapterTargets(id);
    const scores = await mutateChapter(chapter, ranges, testFiles);
    console.log(summary(chapter, scores));
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main(process.argv.slice(2)).catch((error: Error) => {
    console.error(error instanceof UsageError ? error.message : error);
    process.exitCode = error instanceof UsageError ? 2 : 1;
  });
}
