/**
 * Chapter 14: the suite report, the JSON a run of `pi-course eval` writes (`report.json`), and
 * what it decides: pass rates per case, a verdict per case, the exit code.
 */
import { formatDollars } from "../base/dollars.js";
import type { RunRecord, RunStatus } from "./run-record.js";

/** One case of the suite, with all its runs. */
export interface CaseReport {
  name: string;
  tags: string[];
  /** The share of runs that must pass (case.json's `minPassRate`). */
  minPassRate: number;
  /** Runs asked for (`--repeat`). */
  repeat: number;
  /** The runs that finished or were interrupted, by run index. */
  runs: RunRecord[];
  /** Runs by status. */
  counts: Record<RunStatus, number>;
  /** Passed runs / runs judged (interrupted runs are not judged); null when none was judged. */
  passRate: number | null;
  /**
   * `passed` when at least `minPassRate` of the judged runs passed and none broke the protocol;
   * `failed` otherwise; `incomplete` when Ctrl-C left it without any judged run.
   */
  verdict: "passed" | "failed" | "incomplete";
}

/** The whole report. */
export interface SuiteReport {
  /** The format of this file. */
  version: 1;
  suite: string;
  /** "scripted (offline)" or the server's model and address. */
  model: string;
  startedAt: string;
  finishedAt: string;
  wallMs: number;
  concurrency: number;
  repeat: number;
  /** Ctrl-C stopped the suite: some runs are missing or interrupted. */
  interrupted: boolean;
  cases: CaseReport[];
  totals: { cases: number; passedCases: number; runs: number } & Record<RunStatus, number>;
}

const STATUSES: readonly RunStatus[] = ["passed", "failed", "protocol", "infrastructure", "interrupted"];

/** What a suite report is built from besides the runs. */
export interface SuiteMeta {
  suite: string;
  model: string;
  startedAt: Date;
  finishedAt: Date;
  concurrency: number;
  repeat: number;
  interrupted: boolean;
  cases: { name: string; tags: string[]; minPassRate: number }[];
}

/**
 * The report of `runs` (any order): for each case of `meta.cases`, in that order, its runs
 * sorted by `repeat`, `counts` by status (every status, zeros included), `passRate` = passed /
 * judged runs (interrupted runs are not judged; null when none is), and the `verdict`:
 * `incomplete` without a judged run, `passed` when `passRate >= minPassRate` and no run broke the
 * protocol, else `failed`. `totals` count cases, passed cases, runs and runs by status;
 * `wallMs` is `finishedAt − startedAt`; dates as ISO strings; `version: 1`.
 */
export function buildSuiteReport(meta: SuiteMeta, runs: readonly RunRecord[]): SuiteReport {
  // #region lab 14.4 buildSuiteReport
  const cases = meta.cases.map((c): CaseReport => {
    const mine = runs.filter((r) => r.case === c.name).sort((a, b) => a.repeat - b.repeat);
    const counts = Object.fromEntries(STATUSES.map((s) => [s, mine.filter((r) => r.status === s).length])) as Record<
      RunStatus,
      number
    >;
    const judged = mine.length - counts.interrupted;
    const passRate = judged === 0 ? null : counts.passed / judged;
    const verdict =
      passRate === null ? "incomplete" : passRate >= c.minPassRate && counts.protocol === 0 ? "passed" : "failed";
    return {
      name: c.name,
      tags: c.tags,
      minPassRate: c.minPassRate,
      repeat: meta.repeat,
      runs: mine,
      counts,
      passRate,
      verdict,
    };
  });
  const totals = {
    cases: cases.length,
    passedCases: cases.filter((c) => c.verdict === "passed").length,
    runs: runs.length,
  } as SuiteReport["totals"];
  for (const s of STATUSES) totals[s] = runs.filter((r) => r.status === s).length;
  return {
    version: 1,
    suite: meta.suite,
    model: meta.model,
    startedAt: meta.startedAt.toISOString(),
    finishedAt: meta.finishedAt.toISOString(),
    wallMs: meta.finishedAt.getTime() - meta.startedAt.getTime(),
    concurrency: meta.concurrency,
    repeat: meta.repeat,
    interrupted: meta.interrupted,
    cases,
    totals,
  };
  // #endregion
}

/** 0 when every case passed; 130 when Ctrl-C stopped the suite; 1 when a case failed. */
export function suiteExitCode(report: SuiteReport): number {
  // #region lab 14.4 suiteExitCode
  if (report.interrupted) return 130;
  return report.cases.every((c) => c.verdict === "passed") ? 0 : 1;
  // #endregion
}

// #region ch18
/**
 * What `runs` cost together (priced from the model catalogue): `$0.0123` when every run's cost is known, `$0.0123 +
 * unknown (2 runs without a price)` when some are not, `unknown (…)` when none is: never a zero
 * for an unknown price. `$0` for no runs.
 */
export function costOfRuns(runs: readonly RunRecord[]): string {
  const known = runs.filter((r) => r.cost !== null);
  const total = known.reduce((sum, r) => sum + r.cost!, 0);
  const dollars = formatDollars(total);
  const missing = runs.length - known.length;
  if (missing === 0) return dollars;
  const unknown = `unknown (${missing} run${missing === 1 ? "" : "s"} without a price)`;
  return known.length === 0 ? unknown : `${dollars} + ${unknown}`;
}
// #endregion

/** A short text summary: one line per case, then the totals. */
export function formatSummary(report: SuiteReport): string {
  const width = Math.max(4, ...report.cases.map((c) => c.name.length));
  const lines = report.cases.map((c) => {
    const rate = c.passRate === null ? "  —" : `${Math.round(c.passRate * 100)}%`.padStart(4);
    const bad = c.runs
      .filter((r) => r.status !== "passed")
      .map((r) => `#${r.repeat} ${r.status}${r.reason ? `: ${r.reason}` : ""}`);
    // the rate is of the judged runs: an interrupted run is said apart, never counted in it
    const judged = c.runs.length - c.counts.interrupted;
    const of = `${judged}${c.counts.interrupted > 0 ? ` (+${c.counts.interrupted} interrupted)` : ""}`;
    return `${c.verdict === "passed" ? "PASS" : c.verdict === "failed" ? "FAIL" : "STOP"}  ${c.name.padEnd(width)}  ${rate} of ${of}${bad.length ? `  (${bad[0]}${bad.length > 1 ? ` and ${bad.length - 1} more` : ""})` : ""}`;
  });
  const t = report.totals;
  lines.push(
    `${t.passedCases}/${t.cases} cases passed · runs: ${t.passed} passed, ${t.failed} failed, ${t.protocol} protocol, ` +
      `${t.infrastructure} infrastructure, ${t.interrupted} interrupted${report.interrupted ? " · stopped by Ctrl-C" : ""}`,
  );
  // #region ch18
  lines.push(`cost: ${costOfRuns(report.cases.flatMap((c) => c.runs))}`);
  // #endregion
  return `${lines.join("\n")}\n`;
}
