/**
 * The CI proof of one chapter: generate snapshot(N) and practice(N) into temporary folders whose
 * node_modules is a symlink to the repository's (offline, no install), then check them:
 *
 * - snapshot(N): typechecks; every test passes; every lab of N has a test named `Lab N.M …`; each
 *   of the chapter's test files holds its tests in lab order.
 * - practice(N): typechecks; the tests of chapters < N pass; each test of chapter N fails with
 *   the not-implemented error of its lab (or of a lab in its `uses`); every lab is a site; every
 *   `uses` entry is needed; LEARNING.md's first red is what the first test of lab 1 fails with.
 * - lab order: for each lab K after the first, practice(N) with labs 1..K-1 written (a progress
 *   view): typechecks; the tests of lab K-1 pass; the tests of lab K fail with K's error (each
 *   earlier lab's tests passed in the view right after it, and all of them in snapshot(N)).
 * - both: no marker left, no file or region line sequence of a later chapter, and in practice(N)
 *   no reference lab body of chapter N.
 * - an observe chapter's view: typechecks, every test passes, no marker left.
 * - wrong implementations (`ChapterSpec.wrong`): snapshot(N) with one lab made wrong on purpose,
 *   one version at a time in one folder and one vitest instance per chapter (wrong-runner.ts):
 *   the lab's tests must fail with the given text in an assertion (not a timeout), by
 *   themselves, with no error escaping them, never hang.
 *
 * Which tests run where: practice(N) runs the chapter's own tests and every earlier test that
 * can reach one of N's labs (reach.ts: imports and the entry points a test starts as a child):
 * those must pass with N's labs still construction sites, which is what a learner's folder runs.
 * An earlier test that reaches none of them runs the same code as in the repository's own run
 * and in the earlier chapters' proofs (running the whole earlier suite in every practice folder
 * was most of the proof's time). snapshot(N) and an observe chapter's view run only the
 * chapter's own test files: an earlier test in snapshot(N) would prove nothing practice(N) does
 * not, the two views holding the same code but N's lab bodies.
 *
 * Where they run: a chapter's views one after the other in one folder and one vitest instance
 * (folder-runs.ts: each view written over the one before, the changed files invalidated), so
 * vitest starts and transforms the library once per chapter, not once per view.
 *
 * Problems are collected, not thrown, so one run reports everything that is wrong.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import type { Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable, Writable } from "node:stream";
import { REPO_ROOT, type Catalogue, type Chapter, type WrongImplementation } from "./catalogue.js";
import {
  buildView,
  labsOf,
  REPO_SOURCES,
  scanSources,
  writeView,
  type SourceScan,
  type Sources,
  type View,
  type ViewKind,
} from "./generate.js";
import { compiledWrongRunner } from "./compiled-wrong-runner.js";
import { ChapterFolder, type RunReport } from "./folder-runs.js";
import { firstRed, labPattern } from "./learning.js";
import { notImplementedMessage, pad } from "./markers.js";
import { testsReaching } from "./reach.js";
import { normalise, requiredTexts, untoldParts } from "./told.js";
import type { WrongJob, WrongResult, WrongSpent } from "./wrong-runner.js";

export interface ProofOptions {
  sources?: Sources;
  /** The node_modules the generated folders link to. */
  nodeModules?: string;
  /** Only the static checks (no tsc, no vitest): for fast tests of the proof itself. */
  staticOnly?: boolean;
  /** Which views to build (default: both for a rebuild chapter). */
  views?: ViewKind[];
  /** Keep the temporary folders (their paths are in the report). */
  keep?: boolean;
  /**
   * The lab-order check (default on whenever practice(N) is built): for each lab K of a rebuild
   * chapter after the first, a progress view with labs 1..K-1 written (reference bodies) and
   * labs K.. still construction sites.
   */
  progress?: boolean;
  /** The wrong implementations of `ChapterSpec.wrong` (default on whenever snapshot(N), or an observe chapter's folder, is built). */
  wrong?: boolean;
}

export interface ProofReport {
  chapter: string;
  problems: string[];
  /** Milliseconds per step, e.g. `practice tsc`; `wrong cpu` is the CPU time the wrong versions' runner used. */
  timings: Record<string, number>;
  /** Numbers that are not times, e.g. `wrong versions` (how many ran) and `wrong workers` (processes they needed). */
  counts: Record<string, number>;
  folders: string[];
}

/** Runs at most `limit` jobs at once (the machine has 2 cores shared by everyone). */
export class Pool {
  private running = 0;
  private readonly waiting: (() => void)[] = [];
  constructor(private readonly limit: number) {}

  async run<T>(job: () => Promise<T>): Promise<T> {
    if (this.running >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.running++;
    try {
      return await job();
    } finally {
      this.running--;
      this.waiting.shift()?.();
    }
  }
}

/**
 * Shared by every proof in one process. Three at a time on 2 cores: a folder's `vitest run`
 * spends about half its time waiting on the servers, processes and timers its tests use (the
 * observe folder's run: 39 s, of which 15 s on a core), so two left a core idle; four made the
 * whole `npm test` slower (926 s of CPU instead of 866 s, 707 s instead of 665 s).
 */
export const POOL = new Pool(3);

function childEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!/^(VITEST|TINYPOOL|__VITEST)/.test(key)) env[key] = value;
  }
  env.FORCE_COLOR = "0";
  env.NO_COLOR = "1";
  return env;
}

interface TestOutcome {
  /** Chapter number of the test file (from `test/NN-…`). */
  chapter: number;
  file: string;
  title: string;
  lab: string | undefined;
  status: string;
  failure: string;
  /** The names of the describe blocks around the test. */
  suites: string;
}

const LAB_TITLE_RE = /^Lab (\d{1,2}\.\d{1,2})\b/;

function outcomes(
  report: { files: RunReport["files"]; unhandled: string[] },
  problems: string[],
  label: string,
): TestOutcome[] {
  const out: TestOutcome[] = [];
  for (const file of report.files) {
    const name = file.name.replace(/\\/g, "/").split("/").pop()!;
    const chapter = Number(/^(\d\d)-/.exec(name)?.[1] ?? NaN);
    if (file.tests.length === 0 || file.errors.length > 0) {
      problems.push(`${label}: test/${name} failed to run: ${firstLine(file.errors.join("\n")) || "no tests"}`);
    }
    for (const test of file.tests) {
      const lab = LAB_TITLE_RE.exec(test.title)?.[1];
      const suites = test.fullName.endsWith(test.title) ? test.fullName.slice(0, -test.title.length) : test.fullName;
      out.push({
        chapter,
        file: `test/${name}`,
        title: test.title,
        lab,
        status: test.state,
        failure: test.errors.join("\n"),
        suites,
      });
    }
  }
  return out;
}

function firstLine(text: string): string {
  return text.trim().split("\n")[0]?.slice(0, 300) ?? "";
}

/** Trimmed non-empty lines: what the leak checks compare. */
function significant(lines: string[]): string[] {
  return lines.map((l) => l.trim()).filter((l) => l !== "");
}

function containsSequence(haystack: string[], needle: string[]): boolean {
  if (needle.length === 0) return false;
  outer: for (let i = 0; i + needle.length <= haystack.length; i++) {
    for (let j = 0; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return true;
  }
  return false;
}

/** The static checks of one view: markers, later chapters, leaked lab bodies, sites. */
export function staticProblems(view: View, scan: SourceScan, catalogue: Catalogue): string[] {
  const problems: string[] = [];
  const label = `${view.kind}(${view.chapter.id})`;
  const n = view.chapter.mode === "observe" ? (catalogue.rebuild.at(-1)?.number ?? 0) : view.chapter.number;
  const texts = new Map<string, string[]>();
  for (const [file, content] of view.files) {
    if (typeof content === "string" && /\.(ts|mts|tsx)$/.test(file)) texts.set(file, significant(content.split("\n")));
  }
  for (const [file, lines] of texts) {
    const marker = lines.find((l) => /#\s*(end)?\s*region/i.test(l));
    if (marker) problems.push(`${label}: ${file} still holds a marker: ${marker}`);
  }
  for (const [file, owner] of scan.owners) {
    const later = owner !== view.chapter && (owner.mode === "observe" || owner.number > n);
    if (later && view.files.has(file)) problems.push(`${label}: holds ${file}, a file of chapter ${owner.id}`);
  }
  for (const region of scan.regions) {
    if (region.chapter <= n) continue;
    const body = significant(region.body);
    for (const [file, lines] of texts) {
      if (containsSequence(lines, body)) {
        problems.push(
          `${label}: ${file} holds lines of chapter ${pad(region.chapter)} (the region at ${region.file}:${region.line})`,
        );
      }
    }
  }
  for (const lab of scan.labs) {
    if (lab.chapter <= n) continue;
    const body = significant(lab.body);
    for (const [file, lines] of texts) {
      if (containsSequence(lines, body)) {
        problems.push(
          `${label}: ${file} holds the body of lab ${lab.lab} ${lab.symbol}, a later chapter's (${lab.file}:${lab.line})`,
        );
      }
    }
  }
  if (view.kind === "practice" && view.chapter.mode === "rebuild") {
    const all = [...texts.values()].map((lines) => lines.join("\n")).join("\n");
    for (const lab of labsOf(view.chapter, scan)) {
      const body = significant(lab.body);
      for (const [file, lines] of texts) {
        if (containsSequence(lines, body)) {
          problems.push(
            `${label}: ${file} holds the reference body of lab ${lab.lab} ${lab.symbol} (${lab.file}:${lab.line})`,
          );
        }
      }
      if (!all.includes(JSON.stringify(notImplementedMessage(lab.lab, lab.symbol)))) {
        problems.push(`${label}: no construction site for lab ${lab.lab} ${lab.symbol}`);
      }
    }
  }
  if (view.kind === "practice" && view.chapter.mode === "rebuild") problems.push(...untoldProblems(view, scan, label));
  if (!view.files.has("LEARNING.md")) problems.push(`${label}: LEARNING.md is missing`);
  return problems;
}

/**
 * The "told" rule (practice/told.ts): every exact text the chapter's tests require must be said
 * in the guide (LEARNING.md) or in src/ of the practice folder (the construction site's doc
 * comment, or code kept around it). One problem per untold text, naming the test, the text and
 * where to say it.
 */
export function untoldProblems(view: View, scan: SourceScan, label: string): string[] {
  const chapter = view.chapter;
  const corpusParts: string[] = [];
  for (const [file, content] of view.files) {
    if (typeof content !== "string") continue;
    if (
      file === "LEARNING.md" ||
      ((file.startsWith("src/") || file.startsWith("kit/")) && /\.(ts|mts|tsx)$/.test(file))
    )
      corpusParts.push(content);
  }
  const corpus = normalise(corpusParts.join("\n"));
  const lower = corpus.toLowerCase();
  const labs = labsOf(chapter, scan);
  const problems: string[] = [];
  const waived: string[] = [];
  for (const [file, content] of view.files) {
    if (typeof content !== "string" || !file.endsWith(".test.ts") || scan.owners.get(file) !== chapter) continue;
    for (const required of requiredTexts(file, content)) {
      const untold = untoldParts(required, corpus, lower);
      if (untold.length === 0) continue;
      const lab = LAB_TITLE_RE.exec(required.test)?.[1];
      const sites = labs
        .filter((l) => l.lab === lab)
        .map((l) => `${l.symbol} (${l.file.replace(/^packages\/pi-course\//, "")})`);
      const where =
        lab !== undefined
          ? `quote it in the hint of lab ${lab} in ${chapter.source}` +
            (sites.length > 0 ? ` or in the doc comment of ${[...new Set(sites)].join(", ")}` : "")
          : `quote it in ${chapter.source} or in a doc comment in src/`;
      (required.prose && chapter.proseToldWaiver !== undefined ? waived : problems).push(
        `${label}: ${file}:${required.line} › ${required.test || "(outside a test)"} requires the text ${JSON.stringify(required.text)}, ` +
          `but ${untold.map((p) => JSON.stringify(p)).join(", ")} is said neither in the guide nor in src/ of the practice folder: ` +
          `${where}; or make the test check only what matters (ids, numbers, paths, key phrases the guide names)`,
      );
    }
  }
  if (chapter.proseToldWaiver !== undefined) {
    if (waived.length === 0)
      problems.push(
        `${label}: every sentence the tests of chapter ${chapter.id} expect is told now; remove proseToldWaiver in ${chapter.source}`,
      );
    else
      console.warn(
        `[proof] waived in ${chapter.source} (why: ${chapter.proseToldWaiver}): ${waived.length} untold sentence(s):\n${waived.join("\n")}`,
      );
  }
  return problems;
}

/** Checks vitest's outcomes for a view against what the chapter promises. */
function testProblems(view: View, scan: SourceScan, tests: TestOutcome[], label: string): string[] {
  const problems: string[] = [];
  const chapter = view.chapter;
  const cut = view.kind === "practice" && chapter.mode === "rebuild";
  // Only the chapter's own tests must have run: practice(N) runs an earlier chapter's tests
  // only where they reach N's labs (practiceTestFiles).
  if (!tests.some((t) => t.chapter === chapter.number))
    problems.push(`${label}: no test of chapter ${chapter.id} ran (${chapter.testFile})`);
  if (chapter.mode === "rebuild") {
    for (const lab of chapter.labs) {
      if (!tests.some((t) => t.chapter === chapter.number && t.lab === lab.id)) {
        problems.push(`${label}: lab ${lab.id} has no test named "Lab ${lab.id} · …" in ${chapter.testFile}`);
      }
    }
  }
  if (view.kind === "snapshot" && chapter.mode === "rebuild") problems.push(...orderProblems(chapter, tests, label));
  if (view.kind === "snapshot") {
    // `npm test -- -t "Lab N.M"` matches describe names too: one holding a lab id runs every test inside.
    for (const test of tests) {
      const named = /\bLab \d{1,2}\.\d{1,2}\b/.exec(test.suites)?.[0];
      if (test.chapter === chapter.number && named) {
        problems.push(
          `${label}: ${test.file} › ${test.title} sits in a describe named "${named} …"; keep lab ids out of describe names`,
        );
      }
    }
  }
  const labs = labsOf(chapter, scan);
  const waivers = cut ? (chapter.waivers ?? []) : [];
  for (const waiver of waivers) {
    if (!tests.some((t) => t.chapter === chapter.number && t.title === waiver.test)) {
      problems.push(`${label}: the waiver for "${waiver.test}" names no test of ${chapter.testFile}; remove it`);
    }
  }
  for (const test of tests) {
    if (test.status === "skipped" || test.status === "pending" || test.status === "todo") {
      problems.push(`${label}: ${test.file} › ${test.title} is ${test.status}; tests are never skipped`);
      continue;
    }
    if (!(cut && test.chapter === chapter.number)) {
      if (test.status !== "passed") {
        problems.push(`${label}: ${test.file} › ${test.title} ${test.status}: ${firstLine(test.failure)}`);
      }
      continue;
    }
    const waiver = waivers.find((w) => w.test === test.title);
    const before = problems.length;
    checkRed(test);
    if (waiver) {
      if (problems.length === before) {
        problems.push(
          `${label}: ${test.file} › ${test.title} is now red for the right reason; remove its waiver in ${chapter.source}`,
        );
      } else {
        console.warn(`[proof] waived in ${chapter.source}: ${problems.splice(before).join("; ")} (why: ${waiver.why})`);
      }
    }
  }
  if (cut) {
    // A `uses` entry that no test needs any more hides nothing but should not stay.
    for (const spec of chapter.labs) {
      for (const used of spec.uses ?? []) {
        const sites = labs
          .filter((l) => l.lab === used)
          .map((l) => notImplementedMessage(l.lab, l.symbol).split(" (")[0]!);
        const needed = tests.some(
          (t) => t.chapter === chapter.number && t.lab === spec.id && sites.some((site) => t.failure.includes(site)),
        );
        if (!needed) {
          problems.push(
            `${label}: lab ${spec.id} uses ${used}, but no test of lab ${spec.id} hits lab ${used}'s construction site; remove it from uses in ${chapter.source}`,
          );
        }
      }
    }
  }
  return problems;

  function checkRed(test: TestOutcome): void {
    const spec = chapter.labs.find((l) => l.id === test.lab);
    if (!spec) {
      problems.push(
        `${label}: ${test.file} › "${test.title}" does not start with one of chapter ${chapter.id}'s labs (Lab ${chapter.labs.map((l) => l.id).join(", Lab ")})`,
      );
      return;
    }
    if (test.status === "passed") {
      problems.push(
        `${label}: ${test.file} › ${test.title} PASSES against the construction sites; it must fail until lab ${spec.id} is written`,
      );
      return;
    }
    const allowed = [spec.id, ...(spec.uses ?? [])];
    // The Chinese half is enough: assertion messages may truncate the English one.
    const sites = labs
      .filter((l) => allowed.includes(l.lab))
      .map((l) => notImplementedMessage(l.lab, l.symbol).split(" (")[0]!);
    if (!sites.some((site) => test.failure.includes(site))) {
      problems.push(
        `${label}: ${test.file} › ${test.title} fails, but not with lab ${allowed.join("/")}'s not-implemented error: ${firstLine(test.failure)}`,
      );
    }
  }
}

/**
 * A learner reads a test file from the top and works lab by lab: each of the chapter's test files
 * holds its tests in the order of the labs (all of Lab N.1's, then N.2's, …). One problem per file
 * that is not, naming its first test out of place. `testOrderWaiver` excuses a chapter for now
 * (printed on every run), and fails the proof once the order is right.
 */
function orderProblems(chapter: Chapter, tests: TestOutcome[], label: string): string[] {
  const problems: string[] = [];
  const ids = chapter.labs.map((l) => l.id);
  const files = [...new Set(tests.filter((t) => t.chapter === chapter.number).map((t) => t.file))];
  for (const file of files) {
    let last: TestOutcome | undefined;
    let misplaced: { test: TestOutcome; after: TestOutcome } | undefined;
    let count = 0;
    for (const test of tests) {
      if (test.file !== file || test.lab === undefined || !ids.includes(test.lab)) continue;
      if (last && ids.indexOf(test.lab) < ids.indexOf(last.lab!)) {
        misplaced ??= { test, after: last };
        count++;
      } else {
        last = test;
      }
    }
    if (misplaced) {
      problems.push(
        `${label}: ${file} is not in lab order: "${misplaced.test.title}" comes after "${misplaced.after.title}"` +
          `${count > 1 ? ` (${count} tests out of place)` : ""}; put each lab's tests after the earlier labs' tests`,
      );
    }
  }
  if (chapter.testOrderWaiver !== undefined) {
    if (problems.length === 0) {
      problems.push(
        `${label}: the tests of chapter ${chapter.id} are in lab order now; remove testOrderWaiver in ${chapter.source}`,
      );
    } else {
      console.warn(`[proof] waived in ${chapter.source}: ${problems.join("; ")} (why: ${chapter.testOrderWaiver})`);
      return [];
    }
  }
  return problems;
}

/** The construction-site messages of a chapter's labs (the Chinese half: assertions may truncate the rest). */
function siteMessages(chapter: Chapter, scan: SourceScan): { lab: string; symbol: string; site: string }[] {
  return labsOf(chapter, scan).map((l) => ({
    lab: l.lab,
    symbol: l.symbol,
    site: notImplementedMessage(l.lab, l.symbol).split(" (")[0]!,
  }));
}

/** The test files of the view's own chapter. */
function ownTestFiles(view: View, scan: SourceScan): string[] {
  return [...view.files.keys()].filter((f) => f.endsWith(".test.ts") && scan.owners.get(f) === view.chapter);
}

/**
 * The test files practice(N) runs: the chapter's own, and every earlier test that can reach one
 * of N's labs (reach.ts); the others run unchanged code and were proven green where it is.
 */
function practiceTestFiles(view: View, scan: SourceScan): string[] {
  // A lab's file is named from the repository root; the view's, from the package folder.
  const named = labsOf(view.chapter, scan).map((l) => l.file);
  const labFiles = new Set([...view.files.keys()].filter((k) => named.some((f) => f === k || f.endsWith(`/${k}`))));
  return [...new Set([...ownTestFiles(view, scan), ...testsReaching(view.files, labFiles)])].sort();
}

/**
 * What a progress view runs: the chapter's own test files, with a `-t` pattern for the lab just
 * written and `next`. The labs before the one just written were proven in the view that followed each of
 * them (and every lab in the snapshot): writing one more lab body does not change what an
 * earlier lab's tests run, so running them again in every later view proved nothing new and was
 * a third of the proof's test time.
 */
function progressFilter(view: View, next: string, scan: SourceScan): { files: string[]; pattern: string } {
  const ids = view.chapter.labs.map((l) => l.id);
  const k = ids.indexOf(next);
  const checked = ids.slice(Math.max(0, k - 1), k + 1);
  const pattern = `Lab (?:${checked.map((id) => id.replace(".", "\\.")).join("|")})\\b`;
  // Only the files that name one of those labs: vitest imports every file it is given, even when
  // `-t` then runs none of its tests (chapter 05's five progress views loaded all its suites).
  const named = new RegExp(pattern);
  const own = ownTestFiles(view, scan);
  const files = own.filter((file) => named.test(String(view.files.get(file) ?? "")));
  // None names them: all of them, so that the check says no test of the lab ran.
  return { files: files.length > 0 ? files : own, pattern };
}

/**
 * The lab-order check of one progress view (labs before `next` written, `next` and later labs
 * construction sites): every test of the lab just written passes, every test of `next` fails with
 * `next`'s not-implemented error (or that of a lab it `uses` that is not written yet).
 */
function progressProblems(view: View, next: string, tests: TestOutcome[], label: string, scan: SourceScan): string[] {
  const problems: string[] = [];
  const chapter = view.chapter;
  const ids = chapter.labs.map((l) => l.id);
  const k = ids.indexOf(next);
  const sites = siteMessages(chapter, scan);
  const hit = (failure: string) => sites.filter((s) => failure.includes(s.site));
  const spec = chapter.labs[k]!;
  const allowed = [next, ...(spec.uses ?? []).filter((id) => ids.indexOf(id) >= k)];
  let ranNext = false;
  for (const test of tests) {
    if (test.chapter !== chapter.number || test.lab === undefined) continue;
    const index = ids.indexOf(test.lab);
    // Only the lab just written and `next` run here (see progressFilter).
    if (index < k - 1 || index > k) continue;
    if (index < k) {
      if (test.status === "passed") continue;
      const sitesHit = hit(test.failure);
      problems.push(
        sitesHit.length > 0
          ? `${label}: ${test.file} › ${test.title} fails with lab ${sitesHit.map((s) => `${s.lab} ${s.symbol}`).join(" / ")}'s ` +
              `construction site, a LATER lab than ${test.lab}: a learner doing the labs in order cannot make it pass ` +
              "(name the test after the lab it needs, reorder the labs, or move the region)"
          : `${label}: ${test.file} › ${test.title} ${test.status}, though lab ${test.lab} is written: ${firstLine(test.failure)}`,
      );
      continue;
    }
    ranNext = true;
    if (test.status === "passed") {
      problems.push(
        `${label}: ${test.file} › ${test.title} PASSES before lab ${next} is written; it must fail until it is`,
      );
    } else if (!sites.some((s) => allowed.includes(s.lab) && test.failure.includes(s.site))) {
      const other = hit(test.failure);
      problems.push(
        `${label}: ${test.file} › ${test.title} fails, but not with lab ${allowed.join("/")}'s not-implemented error` +
          (other.length > 0 ? ` (it hits lab ${other.map((s) => `${s.lab} ${s.symbol}`).join(" / ")}'s site)` : "") +
          `: ${firstLine(test.failure)}`,
      );
    }
  }
  if (!ranNext) problems.push(`${label}: no test of lab ${next} ran`);
  return problems;
}

/** Whether a test is one that must catch `wrong`: a test of its lab, or (an observe chapter) one named so. */
function catches(chapter: Chapter, wrong: WrongImplementation, title: string, lab: string | undefined): boolean {
  return chapter.mode === "observe" ? title.startsWith(wrong.lab) : lab === wrong.lab;
}

/** The `-t` pattern of the tests that must catch `wrong` (see `catches`). */
function wrongPattern(chapter: Chapter, wrong: WrongImplementation): string {
  return chapter.mode === "observe" ? wrong.lab.replace(/[.*+?^${}()|[\]\\]/g, "\\$&") : labPattern(wrong.lab);
}

/** How the report names the tests that must catch `wrong`. */
function whose(chapter: Chapter, wrong: WrongImplementation): string {
  return chapter.mode === "observe" ? `"${wrong.lab}…"` : `lab ${wrong.lab}`;
}

/** A run of a folder's tests is killed after this long. */
const RUN_LIMIT_MS = 300_000;

/** A wrong implementation's run (its lab's tests only) counts as hung after this long. */
const WRONG_RUN_LIMIT_MS = 300_000;

/** vitest's text for a test that ran out of time: a hang caught, not a failure said. */
const TIMED_OUT = /^Test timed out in \d+ms/;

/**
 * The tests of a lab on a wrong implementation (`ChapterSpec.wrong`): some test of the lab fails
 * with `failsWith`, by an assertion (a test that times out says nothing a learner can act on); and
 * nothing escapes the tests (an unhandled error, or a test file that cannot run), since that is
 * what makes unrelated later tests fail in a learner's full run: vitest blames an unhandled error
 * on whatever test runs when it surfaces, and a leaked timer or listener shows that way too.
 * (A hang is reported where the run is given up, in `runWrongs`.)
 */
function wrongProblems(
  chapter: Chapter,
  wrong: WrongImplementation,
  tests: TestOutcome[],
  unhandled: string[],
  label: string,
): string[] {
  const problems = unhandled.map(
    (error) =>
      `${label}: an error escapes the tests of ${whose(chapter, wrong)}, unhandled, on a wrong implementation (${wrong.what}); ` +
      `in a full run it fails whatever test runs next: ${firstLine(error)}`,
  );
  const mine = tests.filter((t) => t.chapter === chapter.number && catches(chapter, wrong, t.title, t.lab));
  if (mine.length === 0) return [...problems, `${label}: no test of ${whose(chapter, wrong)} ran`];
  const failed = mine.filter((t) => t.status === "failed");
  if (failed.length === 0) {
    problems.push(
      `${label}: every test of ${whose(chapter, wrong)} PASSES on a wrong implementation (${wrong.what}); add a test that catches it`,
    );
  } else if (!failed.some((t) => t.failure.includes(wrong.failsWith) && !TIMED_OUT.test(t.failure))) {
    const timedOut = failed.filter((t) => TIMED_OUT.test(t.failure));
    problems.push(
      timedOut.length === failed.length
        ? `${label}: the tests of ${whose(chapter, wrong)} catch a wrong implementation (${wrong.what}) only by timing out ` +
            `(${timedOut.map((t) => t.title).join("; ")}): bound every wait below the test's timeout and fail with an assertion that says what went wrong`
        : `${label}: the tests of ${whose(chapter, wrong)} fail on a wrong implementation (${wrong.what}), but none says ` +
            `"${wrong.failsWith}" in an assertion: ${failed.map((t) => `${t.title}: ${firstLine(t.failure)}`).join("; ")}`,
    );
  }
  return problems;
}

/**
 * Runs a chapter's wrong implementations in one folder (its snapshot, written once) with one
 * vitest instance (practice/wrong-runner.ts): each is applied, its lab's test files run with its
 * lab's pattern, and reverted. A version that hangs is reported and the runner restarted for the
 * rest.
 */
async function runWrongs(prepared: Prepared, wrongs: WrongImplementation[], scan: SourceScan): Promise<void> {
  const { view, report, root, folder } = prepared;
  const chapter = view.chapter;
  const own = ownTestFiles(view, scan);
  const jobs: WrongJob[] = wrongs.map((wrong) => {
    const pattern = wrongPattern(chapter, wrong);
    // Only the files that name the lab: vitest imports every file it is given.
    const named = new RegExp(pattern);
    const files = own.filter((file) => named.test(String(view.files.get(file) ?? "")));
    return {
      file: wrong.file,
      find: wrong.find,
      replace: wrong.replace,
      pattern,
      testFiles: files.length > 0 ? files : own,
      failsWith: wrong.failsWith,
      limitMs: WRONG_RUN_LIMIT_MS,
    };
  });
  const started = Date.now();
  let at = 0;
  while (at < jobs.length) {
    const input = join(root, `wrong-jobs-${at}.json`);
    writeFileSync(input, JSON.stringify(jobs.slice(at)));
    let results: WrongResult[];
    let output: string;
    try {
      let spent: WrongSpent | undefined;
      ({ results, output, spent } = await runWrongRunner(
        folder,
        input,
        (jobs.length - at) * (WRONG_RUN_LIMIT_MS + 30_000),
      ));
      if (spent !== undefined) {
        report.timings["wrong cpu"] = (report.timings["wrong cpu"] ?? 0) + spent.cpuMs;
        const started = spent.workers.reduce((sum, w) => sum + w.started, 0);
        report.counts["wrong workers"] = (report.counts["wrong workers"] ?? 0) + started;
      }
    } catch (error) {
      report.problems.push(`wrong(${chapter.id}): the wrong implementations could not be run: ${messageOf(error)}`);
      return;
    }
    for (const result of results) {
      const wrong = wrongs[at]!;
      const label = `wrong(${chapter.id}: ${wrong.what})`;
      at++;
      if (result.notFound !== undefined) {
        report.problems.push(`${label}: ${wrong.file} holds the text to replace ${result.notFound} time(s), not once`);
      } else if (result.hung) {
        report.problems.push(
          `${label}: the tests of ${whose(chapter, wrong)} HANG on a wrong implementation (${wrong.what}): ` +
            `their run did not end in ${WRONG_RUN_LIMIT_MS / 1000} s; every wait in a test or its helpers must yield ` +
            "to the event loop and be bounded, so it fails with a message instead",
        );
      } else {
        const found: string[] = [];
        const tests = outcomes({ files: result.files, unhandled: result.unhandled }, found, label);
        // A file with no test run is one the first failure cancelled (bail); one that could not load says why.
        const loadErrors = found.filter((p) => !p.endsWith("failed to run: no tests"));
        report.problems.push(...loadErrors, ...wrongProblems(chapter, wrong, tests, result.unhandled, label));
      }
    }
    if (results.length === 0 || results.at(-1)?.hung !== true) {
      if (at < jobs.length) {
        report.problems.push(
          `wrong(${chapter.id}): the runner stopped after ${at} of ${jobs.length} wrong implementations:\n${output.trim().slice(-1500)}`,
        );
      }
      break;
    }
  }
  report.timings["wrong vitest"] = Date.now() - started;
  report.counts["wrong versions"] = wrongs.length;
}

/** Runs practice/wrong-runner.ts in `folder`; its results in order, and what else it printed. */
function runWrongRunner(
  folder: string,
  input: string,
  limitMs: number,
): Promise<{ results: WrongResult[]; output: string; spent?: WrongSpent }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [compiledWrongRunner(), input], {
      cwd: folder,
      env: { ...childEnv(), PI_COURSE_PROOF: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const results: WrongResult[] = [];
    let spent: WrongSpent | undefined;
    let rest = "";
    let output = "";
    const timer = setTimeout(() => child.kill("SIGKILL"), limitMs);
    child.stdout.setEncoding("utf8").on("data", (text: string) => {
      rest += text;
      for (let end = rest.indexOf("\n"); end >= 0; end = rest.indexOf("\n")) {
        const line = rest.slice(0, end);
        rest = rest.slice(end + 1);
        if (line.startsWith("@@wrong ")) results.push(JSON.parse(line.slice("@@wrong ".length)) as WrongResult);
        else if (line.startsWith("@@spent ")) spent = JSON.parse(line.slice("@@spent ".length)) as WrongSpent;
        else output = (output + line + "\n").slice(-5000);
      }
    });
    child.stderr.setEncoding("utf8").on("data", (text: string) => (output = (output + text).slice(-5000)));
    child.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on("close", () => {
      clearTimeout(timer);
      resolve({ results, output, spent });
    });
  });
}

/**
 * LEARNING.md names the first construction-site error a learner sees: the one the first test of
 * the first lab fails with in practice(N). Checks that the prediction is what really happens.
 */
function firstRedProblems(view: View, scan: SourceScan, tests: TestOutcome[], label: string): string[] {
  const chapter = view.chapter;
  const first = chapter.labs[0]?.id;
  const test = tests.find((t) => t.chapter === chapter.number && t.file === chapter.testFile && t.lab === first);
  if (!test || test.status === "passed") return [];
  const sites = siteMessages(chapter, scan)
    .map((s) => ({ ...s, at: test.failure.indexOf(s.site) }))
    .filter((s) => s.at >= 0)
    .sort((a, b) => a.at - b.at);
  const actual = sites[0] && notImplementedMessage(sites[0].lab, sites[0].symbol);
  const source = view.files.get(chapter.testFile);
  const predicted = firstRed(chapter, labsOf(chapter, scan), typeof source === "string" ? source : undefined);
  if (actual === undefined || predicted.includes(actual)) return [];
  return [
    `${label}: LEARNING.md predicts the first red ${predicted.map((m) => `"${m}"`).join(" or ")}, but the first test of lab ${first} ` +
      `(${test.title}) fails with "${actual}"`,
  ];
}

/** How many chapters' views one compiler program checks (see `proveChapters`). */
const CHAPTERS_PER_PROGRAM = 7;

/** The typecheck child's heap: room to spare for seven chapters' views (~2 GB). */
const TYPECHECK_HEAP_MB = 8192;

/** The typecheck child of this process (see `typecheckInChild`), while it runs. */
interface TypecheckServer {
  child: ChildProcessWithoutNullStreams;
  /** The calls in order; the first is the one the child works on, and only its timer runs. */
  waiting: { folders: string[]; resolve: (result: Record<string, string[]>) => void; timer?: NodeJS.Timeout }[];
  out: string;
  err: string;
}
let server: TypecheckServer | undefined;

/**
 * Runs practice/typecheck.ts over the folders in a child process; folder → diagnostics. One child
 * serves every call of this process in turn (`--serve`), so the libraries' declarations under
 * node_modules are read and parsed once, not once per call (~4 s of CPU each: proof-catches
 * proves a dozen mini courses). It holds the process open only while a call waits.
 */
function typecheckInChild(folders: string[]): Promise<Record<string, string[]>> {
  return new Promise((resolve) => {
    const s = (server ??= startTypecheckServer());
    s.waiting.push({ folders, resolve });
    armHead(s);
    s.child.ref();
    pipe(s.child.stdout).ref();
    s.child.stdin.write(JSON.stringify(folders) + "\n");
  });
}

/** Ten minutes for the call the child works on (a call waiting behind it has not started). */
function armHead(s: TypecheckServer): void {
  const head = s.waiting[0];
  if (head !== undefined && head.timer === undefined) head.timer = setTimeout(() => s.child.kill("SIGKILL"), 600_000);
}

/** A child's stdio stream is a socket (ref and unref). */
const pipe = (stream: Readable | Writable) => stream as unknown as Socket;

function startTypecheckServer(): TypecheckServer {
  const tsx = join(REPO_ROOT, "node_modules", ".bin", "tsx");
  const script = join(REPO_ROOT, "practice", "typecheck.ts");
  const env = childEnv();
  env.NODE_OPTIONS = `${env.NODE_OPTIONS ?? ""} --max-old-space-size=${TYPECHECK_HEAP_MB}`.trim();
  const child = spawn(tsx, [script, "--serve"], { env, stdio: ["pipe", "pipe", "pipe"] });
  const s: TypecheckServer = { child, waiting: [], out: "", err: "" };
  const fail = (call: TypecheckServer["waiting"][number], why: string) => {
    clearTimeout(call.timer);
    const text = `the typecheck process failed (${why}): ${s.err.slice(-1500)}`;
    call.resolve(Object.fromEntries(call.folders.map((f) => [f, [text]])));
  };
  child.stdout.setEncoding("utf8").on("data", (text: string) => {
    s.out += text;
    for (let end = s.out.indexOf("\n"); end >= 0; end = s.out.indexOf("\n")) {
      const line = s.out.slice(0, end);
      s.out = s.out.slice(end + 1);
      const call = s.waiting.shift();
      if (!call) continue;
      try {
        const answer = JSON.parse(line) as { result?: Record<string, string[]>; error?: string };
        if (answer.result === undefined) fail(call, answer.error ?? "no result");
        else {
          clearTimeout(call.timer);
          call.resolve(answer.result);
        }
      } catch {
        fail(call, `unreadable answer: ${line.slice(0, 200)}`);
      }
      armHead(s);
    }
    if (s.waiting.length === 0) {
      child.unref();
      pipe(child.stdout).unref();
    }
  });
  child.stderr.setEncoding("utf8").on("data", (text: string) => (s.err = (s.err + text).slice(-3000)));
  const end = (why: string) => {
    if (server === s) server = undefined;
    for (const call of s.waiting.splice(0)) fail(call, why);
  };
  child.on("error", (error) => end(error.message));
  child.stdin.on("error", () => undefined); // a write after the child died: "close" reports it
  child.on("close", (code, signal) => end(`exit ${code ?? signal}`));
  // Never what keeps this process alive: the child ends when its stdin closes.
  pipe(child.stdin).unref();
  pipe(child.stderr).unref();
  return s;
}

/** A view written to a temporary folder, waiting for its typecheck and its tests. */
interface Prepared {
  view: View;
  report: ProofReport;
  root: string;
  folder: string;
  label: string;
  /** A progress view: the lab that is next (the one whose tests must be red). */
  next?: string;
  /** The chapter's wrong implementations, run one after the other in this one folder (see `runWrongs`). */
  wrongs?: WrongImplementation[];
}

/**
 * Runs the tests of a chapter's views in one folder and one vitest instance (folder-runs.ts), one
 * view after the other in the order given (practice(N), its progress views in lab order,
 * snapshot(N): each differs from the one before by a lab's bodies), and checks each run.
 */
async function testChapter(views: Prepared[], root: string, scan: SourceScan, options: ProofOptions): Promise<void> {
  const report = views[0]!.report;
  await POOL.run(async () => {
    const folder = new ChapterFolder(join(root, "folder"), options.nodeModules ?? join(REPO_ROOT, "node_modules"), {
      ...childEnv(),
      PI_COURSE_PROOF: "1",
    });
    try {
      for (const prepared of views) {
        const { view, label } = prepared;
        try {
          const started = Date.now();
          let files: string[];
          let pattern: string | undefined;
          if (prepared.next !== undefined) ({ files, pattern } = progressFilter(view, prepared.next, scan));
          else if (view.kind === "practice" && view.chapter.mode === "rebuild") files = practiceTestFiles(view, scan);
          else files = ownTestFiles(view, scan);
          const outcome = await folder.run(view, files, pattern, RUN_LIMIT_MS);
          const step = prepared.next !== undefined ? "progress vitest" : `${view.kind} vitest`;
          report.timings[step] = (report.timings[step] ?? 0) + Date.now() - started;
          if ("failed" in outcome) report.problems.push(`${label}: ${outcome.failed}`);
          else report.problems.push(...runProblems(prepared, outcome.report, scan));
        } catch (error) {
          report.problems.push(`${label}: the tests could not be run: ${messageOf(error)}`);
        }
      }
    } finally {
      const cpu = await folder.close();
      if (cpu !== undefined) report.timings["test runs cpu"] = cpu;
    }
  });
}

/** What one view's run shows against what the chapter promises. */
function runProblems(prepared: Prepared, parsed: RunReport, scan: SourceScan): string[] {
  const { view, label } = prepared;
  const found: string[] = [];
  const tests = outcomes(parsed, found, label);
  if (prepared.next !== undefined) return [...found, ...progressProblems(view, prepared.next, tests, label, scan)];
  found.push(...testProblems(view, scan, tests, label));
  if (view.kind === "practice" && view.chapter.mode === "rebuild")
    found.push(...firstRedProblems(view, scan, tests, label));
  const mustBeClean = view.kind === "snapshot" || view.chapter.mode === "observe";
  for (const error of parsed.unhandled) {
    if (mustBeClean) found.push(`${label}: unhandled error: ${firstLine(error)}`);
  }
  if (mustBeClean && parsed.state !== "passed" && found.length === 0)
    found.push(`${label}: vitest's run ${parsed.state}`);
  return found;
}

/**
 * A guess at how long a view's test run takes (a chapter's job is the sum of its views'), to start the long ones first: the size of
 * the test files it runs (a practice folder runs the earlier tests that reach its labs too). An observe
 * chapter's tests run the whole program as commands, the longest run of all (~40 s).
 */
function testCost(prepared: Prepared, scan: SourceScan): number {
  const { view } = prepared;
  if (view.chapter.mode === "observe") return Number.MAX_SAFE_INTEGER;
  const practice = prepared.next === undefined && view.kind === "practice" && view.chapter.mode === "rebuild";
  const files = practice ? practiceTestFiles(view, scan) : ownTestFiles(view, scan);
  const size = files.reduce((sum, file) => sum + (view.files.get(file)?.length ?? 0), 0);
  // The wrong versions' runner runs a lab's tests per version: about a third of the files each.
  return prepared.wrongs === undefined ? size : (size * prepared.wrongs.length) / 3;
}

/** A chapter's views run practice(N) first, then its progress views in lab order, then snapshot(N): each a lab away from the one before. */
function runOrder(prepared: Prepared): number {
  const { view, next } = prepared;
  if (next !== undefined) return 1 + view.chapter.labs.findIndex((l) => l.id === next);
  return view.kind === "practice" ? 0 : Number.MAX_SAFE_INTEGER;
}

/**
 * Proves several chapters: builds and checks every view statically, writes them all, typechecks
 * them in a few compiler programs of several chapters each (in one child that keeps the
 * libraries' declarations parsed, so work such as TypeBox's type machinery is not redone per
 * folder), then runs each chapter's tests (its views in turn, see testChapter), three jobs at a
 * time with the typecheck and the wrong versions, the longest first.
 * Never throws for a broken course: each chapter's report lists its problems.
 */
export function proveChapters(
  catalogue: Catalogue,
  chapters: readonly Chapter[],
  options: ProofOptions = {},
): Map<string, Promise<ProofReport>> {
  const results = new Map<string, Promise<ProofReport>>();
  const sources = options.sources ?? REPO_SOURCES;
  const started = Date.now();
  const reports = chapters.map(
    (chapter): ProofReport => ({ chapter: chapter.id, problems: [], timings: {}, counts: {}, folders: [] }),
  );
  /** Each chapter's folder for its test runs (see testChapter). */
  const runRoots = new Map<ProofReport, string>();
  const phase = (async (): Promise<
    | {
        scan: SourceScan;
        prepared: Prepared[];
        typecheck?: Map<ProofReport, Promise<void>>;
        tested: Map<Prepared, Promise<void>>;
      }
    | undefined
  > => {
    await new Promise((resolve) => setImmediate(resolve));
    let scan: SourceScan;
    try {
      scan = scanSources(catalogue, sources);
    } catch (error) {
      for (const report of reports)
        report.problems.push(`chapter ${report.chapter}: cannot generate: ${messageOf(error)}`);
      return undefined;
    }
    const prepared: Prepared[] = [];
    chapters.forEach((chapter, index) => {
      const report = reports[index]!;
      const kinds: ViewKind[] = options.views ?? (chapter.mode === "observe" ? ["practice"] : ["snapshot", "practice"]);
      let views: View[];
      const progress: { view: View; next: string }[] = [];
      try {
        views = kinds.map((kind) => buildView(catalogue, chapter, kind, sources, { scan }));
        if (
          chapter.mode === "rebuild" &&
          kinds.includes("practice") &&
          options.progress !== false &&
          !options.staticOnly
        ) {
          const ids = chapter.labs.map((l) => l.id);
          for (let k = 1; k < ids.length; k++) {
            const view = buildView(catalogue, chapter, "practice", sources, { scan, done: ids.slice(0, k) });
            progress.push({ view, next: ids[k]! });
          }
        }
      } catch (error) {
        report.problems.push(`chapter ${chapter.id}: cannot generate: ${messageOf(error)}`);
        return;
      }
      for (const { view, next } of progress) {
        const label = `progress(${chapter.id}: ${view.done.join(", ")} written, ${next} next)`;
        const root = mkdtempSync(join(tmpdir(), `pi-proof-${chapter.id}-progress-${next}-`));
        const folder = join(root, "folder");
        writeView(view, folder, { linkNodeModules: options.nodeModules ?? join(REPO_ROOT, "node_modules") });
        report.folders.push(folder);
        prepared.push({ view, report, root, folder, label, next });
      }
      // An observe chapter has one folder (its practice view, the whole library): the mutation goes there.
      const base: ViewKind = chapter.mode === "observe" ? "practice" : "snapshot";
      if (!options.staticOnly && kinds.includes(base) && options.wrong !== false && (chapter.wrong ?? []).length > 0) {
        // One folder for all of them, written once; the runner applies and reverts each in turn.
        try {
          const view = buildView(catalogue, chapter, base, sources, { scan });
          const wrongs: WrongImplementation[] = [];
          for (const wrong of chapter.wrong ?? []) {
            const text = view.files.get(wrong.file);
            const count = typeof text === "string" ? text.split(wrong.find).length - 1 : 0;
            if (typeof text !== "string" || count !== 1) {
              report.problems.push(
                `wrong(${chapter.id}: ${wrong.what}): ${wrong.file} must hold the text to replace exactly once, found ${count} time(s); fix \`find\` in ${chapter.source}`,
              );
            } else wrongs.push(wrong);
          }
          if (wrongs.length > 0) {
            const root = mkdtempSync(join(tmpdir(), `pi-proof-${chapter.id}-wrong-`));
            const folder = join(root, "folder");
            writeView(view, folder, { linkNodeModules: options.nodeModules ?? join(REPO_ROOT, "node_modules") });
            report.folders.push(folder);
            prepared.push({ view, report, root, folder, label: `wrong(${chapter.id})`, wrongs });
          }
        } catch (error) {
          report.problems.push(`wrong(${chapter.id}): cannot generate: ${messageOf(error)}`);
        }
      }
      for (const view of views) {
        const label = `${view.kind}(${chapter.id})`;
        for (const missing of view.missingTests) report.problems.push(`${label}: ${missing} does not exist`);
        report.problems.push(...staticProblems(view, scan, catalogue));
        if (options.staticOnly) continue;
        const root = mkdtempSync(join(tmpdir(), `pi-proof-${chapter.id}-${view.kind}-`));
        const folder = join(root, "folder");
        writeView(view, folder, { linkNodeModules: options.nodeModules ?? join(REPO_ROOT, "node_modules") });
        report.folders.push(folder);
        prepared.push({ view, report, root, folder, label });
      }
    });
    if (prepared.length === 0) return { scan, prepared, tested: new Map() };
    // The views of up to CHAPTERS_PER_PROGRAM chapters in one compiler program, one program
    // after the other in one pool slot. A program pays ~12 s of CPU once for the libraries' types
    // (TypeBox's above all), and each chapter adds ~230 MB of checked types: one program of
    // twenty chapters outgrew node's default 4 GB heap. Measured on the whole `npm test` (20
    // chapters): three programs of seven 665 s, one program of twenty (8 GB heap) 707 s.
    // The wrong implementations' folder is only run (vitest strips types), never typechecked.
    const byChapter = new Map<ProofReport, Prepared[]>();
    for (const p of prepared)
      if (p.wrongs === undefined) byChapter.set(p.report, [...(byChapter.get(p.report) ?? []), p]);
    const reportsChecked = [...byChapter.keys()];
    const typecheck = new Map<ProofReport, Promise<void>>();
    const ends = new Map<ProofReport, () => void>();
    for (const report of reportsChecked) typecheck.set(report, new Promise<void>((end) => ends.set(report, end)));
    void POOL.run(async () => {
      for (let at = 0; at < reportsChecked.length; at += CHAPTERS_PER_PROGRAM) {
        const reports = reportsChecked.slice(at, at + CHAPTERS_PER_PROGRAM);
        const checked = reports.flatMap((report) => byChapter.get(report)!);
        try {
          const started = Date.now();
          const diagnostics = await typecheckInChild(checked.map((p) => p.folder));
          const label = `typecheck (the views of ${reports.length} chapter(s), one program)`;
          for (const report of reports) report.timings[label] = Date.now() - started;
          for (const p of checked) {
            const found = diagnostics[p.folder] ?? ["no typecheck result for this folder"];
            if (found.length > 0)
              p.report.problems.push(`${p.label}: tsc --noEmit failed:\n${found.slice(0, 10).join("\n")}`);
          }
        } catch (error) {
          for (const report of reports)
            report.problems.push(`chapter ${report.chapter}: the typecheck could not run: ${messageOf(error)}`);
        } finally {
          for (const report of reports) ends.get(report)!();
        }
      }
    });
    // A chapter's views run in one folder of their own and one vitest (testChapter); its wrong
    // versions in another (runWrongs). The longest jobs first, so the pool's last minutes are not
    // one big job alone.
    const jobs: { cost: number; members: Prepared[]; start: () => Promise<void> }[] = [];
    for (const p of prepared) {
      if (p.wrongs !== undefined)
        jobs.push({
          cost: testCost(p, scan),
          members: [p],
          start: () => POOL.run(() => runWrongs(p, p.wrongs!, scan)),
        });
    }
    for (const [report, views] of byChapter) {
      const ordered = [...views].sort((a, b) => runOrder(a) - runOrder(b));
      const root = mkdtempSync(join(tmpdir(), `pi-proof-${report.chapter}-runs-`));
      report.folders.push(join(root, "folder"));
      runRoots.set(report, root);
      const cost = views.reduce((sum, p) => sum + testCost(p, scan), 0);
      jobs.push({ cost, members: views, start: () => testChapter(ordered, root, scan, options) });
    }
    const tested = new Map<Prepared, Promise<void>>();
    for (const job of jobs.sort((a, b) => b.cost - a.cost)) {
      const done = job.start();
      for (const p of job.members) tested.set(p, done);
    }
    return { scan, prepared, typecheck, tested };
  })();
  chapters.forEach((chapter, index) => {
    const report = reports[index]!;
    const proof = phase.then(async (ready) => {
      if (ready) {
        const mine = ready.prepared.filter((p) => p.report === report);
        // The typecheck (one child process, a program per few chapters) and the tests share the pool.
        try {
          await Promise.all([ready.typecheck?.get(report), ...mine.map((p) => ready.tested.get(p))]);
        } finally {
          if (!options.keep) {
            for (const p of mine) rmSync(p.root, { recursive: true, force: true });
            const runs = runRoots.get(report);
            if (runs !== undefined) rmSync(runs, { recursive: true, force: true });
          }
        }
      }
      report.timings.total = Date.now() - started;
      return report;
    });
    results.set(
      chapter.id,
      proof.catch((error: unknown) => {
        report.problems.push(`chapter ${chapter.id}: the proof itself failed: ${messageOf(error)}`);
        return report;
      }),
    );
  });
  return results;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Proves one chapter (see `proveChapters`). */
export function proveChapter(catalogue: Catalogue, chapter: Chapter, options: ProofOptions = {}): Promise<ProofReport> {
  return proveChapters(catalogue, [chapter], options).get(chapter.id)!;
}
