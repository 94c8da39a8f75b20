/**
 * A tiny shared harness for `bench/*.bench.ts`: median of N timed runs after warm-up, and a
 * table of medians with ratios checked against bars.
 *
 * Usage (see bench/02-event-stream.bench.ts for a full example):
 *
 *   import { measure, printTable } from "./harness.js";
 *
 *   const results = await measure(
 *     [
 *       { name: "ours", run: () => workload(OursStream) },
 *       { name: "pi-ai 1.6", run: () => workload(Upstream16Stream) },
 *       { name: "floor", run: () => floor() },
 *     ],
 *     { warmup: 2, runs: 7 },
 *   );
 *   printTable("push 1,000,000 then drain", results, [
 *     { label: "ours / floor", num: "ours", den: "floor", bar: "<=", value: 0.8 },
 *     { label: "pi-ai 1.6 / ours", num: "pi-ai 1.6", den: "ours", bar: ">=", value: 2 },
 *   ]);
 *
 * - Each `run` is one whole workload (sync or async); only its duration is measured.
 * - Runs are interleaved round-robin across the cases (a, b, c, a, b, c, …) so that noise from
 *   other processes on a shared machine spreads over all cases instead of hitting one of them.
 * - If node runs with `--expose-gc` (the bench runner does), a full GC happens before every run
 *   (or only a minor one, a scavenge, with `gc: "minor"`; `BENCH_GC=full|minor` overrides both).
 *   Beware: after a forced full GC, V8 throws away the optimized code that embedded objects
 *   which died in it (`--trace-deopt` prints "marking dependent code … reason: weak objects"; with
 *   bench/09's workloads, 132 functions over 10 runs after full GCs, none after minor ones). A
 *   bench whose objects all die between runs (a loop run, an `Agent` and its runs) is then
 *   re-optimized on every run, and measures TurboFan, whose background threads count in CPU
 *   time, more than the code. Such benches use `gc: "minor"`.
 * - A `run` may return a value; it is kept in `last` so the bench can check the work was done.
 * - CPU time (`process.cpuUsage()`, user + system, GC threads included) is recorded next to wall
 *   time and printed in its own column and ratio. Each ratio line also prints the "paired" ratio:
 *   the median of the per-round ratios of wall times (the two cases of a round ran back to back). On a shared, loaded machine wall time swings
 *   with other processes' load; CPU time of a single-threaded workload barely does, so it shows
 *   whether a MISS is real. Bars are judged on wall time (the verdict also says `cpu ok`/`cpu MISS`).
 * - `printTable` returns false if a bar was missed on wall time (it never exits: a bench is a
 *   report).
 *
 * Also `piModel(api, provider)`, the pi-ai `Model` literal the benches against pi-ai share.
 */
import { performance } from "node:perf_hooks";

export interface Case {
  name: string;
  run: () => unknown;
}

export interface MeasureOptions {
  /** Untimed runs per case before timing starts. Default 2. */
  warmup?: number;
  /** Timed runs per case; the median is reported. Default 7. */
  runs?: number;
  /**
   * The collection before every run. "full" (default): no run pays for another's garbage.
   * "minor": a scavenge only, which leaves the old generation and V8's heap sizing as the
   * previous run left them, closer to a process that has been streaming for a while.
   */
  gc?: "full" | "minor";
}

export interface Result {
  name: string;
  /** Milliseconds, sorted ascending. */
  samples: number[];
  median: number;
  min: number;
  max: number;
  /** What the last timed run returned (awaited). */
  last: unknown;
  /** CPU milliseconds (user + system) of each run, sorted ascending, and their median. */
  cpuSamples: number[];
  cpuMedian: number;
  /** Wall milliseconds of each timed run in the order they ran (round i of every case is run i). */
  inOrder: number[];
}

export interface Ratio {
  label: string;
  /** Case name whose median is the numerator. */
  num: string;
  /** Case name whose median is the denominator. */
  den: string;
  /** Optional bar: the ratio must be `<=` or `>=` `value`. */
  bar?: "<=" | ">=";
  value?: number;
}

type Gc = (options?: { type: "major" | "minor" }) => void;
const gc: Gc | undefined = (globalThis as { gc?: Gc }).gc;

/** Median of an ascending-sorted, non-empty list. */
export function median(sorted: readonly number[]): number {
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

async function timeOnce(
  run: () => unknown,
  kind: "full" | "minor",
): Promise<{ ms: number; cpu: number; value: unknown }> {
  gc?.(kind === "minor" ? { type: "minor" } : undefined);
  const cpu0 = process.cpuUsage();
  const start = performance.now();
  const value = await run();
  const ms = performance.now() - start;
  const cpu = process.cpuUsage(cpu0);
  return { ms, cpu: (cpu.user + cpu.system) / 1000, value };
}

/**
 * The collection before every run: `BENCH_GC=full|minor` in the environment overrides the bench's
 * choice (to compare both on one bench), else the bench's `gc` option, else "full".
 */
export function gcKind(chosen?: "full" | "minor"): "full" | "minor" {
  const env = process.env.BENCH_GC;
  if (env === "full" || env === "minor") return env;
  if (env !== undefined && env !== "") throw new Error(`BENCH_GC must be "full" or "minor", got "${env}"`);
  return chosen ?? "full";
}

/** Warms up every case, then times them round-robin; returns one Result per case, in order. */
export async function measure(cases: readonly Case[], options: MeasureOptions = {}): Promise<Result[]> {
  const warmup = options.warmup ?? 2;
  const runs = options.runs ?? 7;
  const kind = gcKind(options.gc);
  for (let i = 0; i < warmup; i++) for (const c of cases) await timeOnce(c.run, kind);
  const samples = cases.map(() => [] as number[]);
  const cpuSamples = cases.map(() => [] as number[]);
  const last: unknown[] = cases.map(() => undefined);
  for (let i = 0; i < runs; i++) {
    for (let k = 0; k < cases.length; k++) {
      const { ms, cpu, value } = await timeOnce(cases[k]!.run, kind);
      samples[k]!.push(ms);
      cpuSamples[k]!.push(cpu);
      last[k] = value;
    }
  }
  return cases.map((c, k) => {
    const inOrder = samples[k]!.slice();
    const sorted = samples[k]!.sort((a, b) => a - b);
    const cpuSorted = cpuSamples[k]!.sort((a, b) => a - b);
    return {
      name: c.name,
      samples: sorted,
      median: median(sorted),
      min: sorted[0]!,
      max: sorted.at(-1)!,
      last: last[k],
      cpuSamples: cpuSorted,
      cpuMedian: median(cpuSorted),
      inOrder,
    };
  });
}

/**
 * The median over rounds of (num's run / den's run) in the same round: the two ran back to back,
 * so a burst of load from other processes hits both, and a slow round does not skew the ratio.
 */
export function pairedRatio(num: Result, den: Result): number {
  const n = Math.min(num.inOrder.length, den.inOrder.length);
  const ratios: number[] = [];
  for (let i = 0; i < n; i++) ratios.push(num.inOrder[i]! / den.inOrder[i]!);
  return median(ratios.sort((a, b) => a - b));
}

const fmt = (ms: number): string => (ms >= 100 ? ms.toFixed(0) : ms >= 10 ? ms.toFixed(1) : ms.toFixed(2));

/**
 * Prints the medians (wall, with min–max, and CPU) and the ratios of medians, each marked
 * `ok` / `MISS` against its bar. Returns true when every bar holds on wall time.
 */
export function printTable(title: string, results: readonly Result[], ratios: readonly Ratio[] = []): boolean {
  const byName = new Map(results.map((r) => [r.name, r]));
  const width = Math.max(...results.map((r) => r.name.length), ...ratios.map((r) => r.label.length));
  console.log(`\n${title}  (median of ${results[0]?.samples.length ?? 0} runs, ms)`);
  console.log(`  ${"".padEnd(width)}  ${"wall".padStart(9)}   ${"[min – max]".padEnd(17)}  ${"cpu".padStart(9)}`);
  for (const r of results) {
    const range = `[${fmt(r.min)} – ${fmt(r.max)}]`;
    console.log(
      `  ${r.name.padEnd(width)}  ${fmt(r.median).padStart(9)}   ${range.padEnd(17)}  ${fmt(r.cpuMedian).padStart(9)}`,
    );
  }
  let allOk = true;
  for (const q of ratios) {
    const num = byName.get(q.num);
    const den = byName.get(q.den);
    if (num === undefined || den === undefined) throw new Error(`printTable: no case named "${q.num}" or "${q.den}"`);
    const ratio = num.median / den.median;
    const cpuRatio = num.cpuMedian / den.cpuMedian;
    let verdict = "";
    if (q.bar !== undefined && q.value !== undefined) {
      const holds = (x: number): boolean => (q.bar === "<=" ? x <= q.value! : x >= q.value!);
      const ok = holds(ratio);
      allOk &&= ok;
      verdict = `   bar ${q.bar} ${q.value}  ${ok ? "ok" : "MISS"} (cpu ${holds(cpuRatio) ? "ok" : "MISS"})`;
    }
    const wallText = `${ratio.toFixed(2)}x`;
    const pairedText = `paired ${pairedRatio(num, den).toFixed(2)}x`;
    console.log(
      `  ${q.label.padEnd(width)}  ${wallText.padStart(9)}   ${pairedText.padEnd(17)}  ${`${cpuRatio.toFixed(2)}x`.padStart(9)}${verdict}`,
    );
  }
  return allOk;
}

/**
 * A pi-ai `Model` for `api` (its providers read `api`, `provider`, `baseUrl`, `maxTokens`; the
 * benches replace `fetch` or the whole stream function, so the URL is never reached).
 */
export function piModel(api = "openai-completions", provider = "openai") {
  return {
    id: "bench",
    name: "bench",
    api,
    provider,
    baseUrl: "http://bench.invalid",
    reasoning: false,
    input: ["text"],
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    contextWindow: 200_000,
    maxTokens: 4096,
  };
}

/**
 * Another build of @pi/course to time beside the current one, from `BENCH_BASELINE` (a path to
 * its `dist/index.js`, e.g. a copy of `packages/pi-course/dist` built from main): the agent
 * benches then add an "ours (baseline)" case, so a change is judged within one run, on the same
 * load. Undefined when the variable is not set.
 */
export async function loadBaseline(): Promise<typeof import("@pi/course") | undefined> {
  const path = process.env.BENCH_BASELINE;
  if (path === undefined || path === "") return undefined;
  const { pathToFileURL } = await import("node:url");
  const { resolve } = await import("node:path");
  return (await import(pathToFileURL(resolve(path)).href)) as typeof import("@pi/course");
}
