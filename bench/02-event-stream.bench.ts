/**
 * Chapter 02 bench: `EventStream` from @pi/course against pi-ai 1.6, pi-ai 0.73 and a floor.
 * Bars (issue 37): ours <= 1.5x the floor, and pi-ai 1.6 >= 1.5x slower than ours.
 *
 * Workloads (N events, then one terminal event so that `result()` resolves):
 *
 * (a) push-then-drain: push all N events with no reader, then drain them with `for await`
 *     (the queue path). Floor: the same events pushed into an array, then delivered by an async
 *     generator over the array; production is timed too. "bare iterator" (no bar) reads the same
 *     array through the thinnest async iterator possible: the lower bound for any stream here.
 *
 * (b) interleaved: one push per read, and the reader is always parked when the event arrives
 *     (the waiter path). The producer is a callback (as a socket's data handler would be); the
 *     consumer, after handling an event, schedules the next push one microtask later and its
 *     `for await` at once asks for the next event, finds the stream empty and parks a waiter;
 *     then the microtask runs and pushes into the waiter. A probe run (untimed) counts, per
 *     implementation, the pushes that found a parked reader: all N + 1 of them.
 *     Floor: an async generator that produces each event when asked, after the same one-microtask
 *     hop (`await null`), read by the same loop. "pull generator" (no bar) drops the hop: the
 *     generator produces synchronously inside `next()`, which no push-based stream can do.
 *
 * Every case handles the same events and runs the same consumer loop, so the differences are the
 * stream (or generator) machinery. In (a) the event objects are made once, before timing.
 */
import { EventStream as Ours } from "@pi/course";
import { EventStream as PiAi16 } from "@earendil-works/pi-ai";
import { EventStream as PiAi073 } from "@mariozechner/pi-ai";
import { loadBaseline, measure, printTable, type Case } from "./harness.js";

interface Ev {
  type: "delta" | "done";
  i: number;
}

/** What the three EventStream classes have in common. */
interface Stream {
  push(event: Ev): void;
  result(): Promise<number>;
  [Symbol.asyncIterator](): AsyncIterator<Ev>;
}
type StreamClass = new (isComplete: (e: Ev) => boolean, extractResult: (e: Ev) => number) => Stream;

const N = Number(process.env.BENCH_EVENTS ?? 1_000_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 7);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 2);

const isDone = (e: Ev): boolean => e.type === "done";
const resultOf = (e: Ev): number => e.i;

const impls: ReadonlyArray<readonly [string, StreamClass]> = [
  ["ours", Ours as unknown as StreamClass],
  ["pi-ai 1.6", PiAi16 as unknown as StreamClass],
  ["pi-ai 0.73", PiAi073 as unknown as StreamClass],
];
/** `BENCH_BASELINE`'s build, timed as "ours (baseline)" in (c) (see harness.ts). */
const baseline = await loadBaseline();

/** Every case returns this: N deltas + 1 terminal read, plus the result N. */
const EXPECTED = N + 1 + N;

// ---------------------------------------------------------------- (a) push then drain

/**
 * The events of (a), made once: every case pushes these same objects, so allocating them (about
 * as costly as the stream work itself) is not charged to any case.
 */
const DELTAS: Ev[] = Array.from({ length: N }, (_, i) => ({ type: "delta", i }));
const TERMINAL: Ev = { type: "done", i: N };

async function pushThenDrain(Stream: StreamClass, n = N): Promise<number> {
  const stream = new Stream(isDone, resultOf);
  for (let i = 0; i < n; i++) stream.push(DELTAS[i]!);
  stream.push(n === N ? TERMINAL : { type: "done", i: n });
  let read = 0;
  for await (const _ of stream) read += 1;
  return read + (await stream.result());
}

async function pushThenDrainFloor(): Promise<number> {
  const events: Ev[] = [];
  for (let i = 0; i < N; i++) events.push(DELTAS[i]!);
  const terminal = TERMINAL;
  events.push(terminal);
  const result = resultOf(terminal);
  async function* deliver(): AsyncGenerator<Ev> {
    for (const e of events) yield e;
  }
  let read = 0;
  for await (const _ of deliver()) read += 1;
  return read + result;
}

/**
 * Informational lower bound for (a): the same array, read through the thinnest possible async
 * iterator (one `Promise.resolve` per item, no bookkeeping). No stream can drain for less.
 */
async function pushThenDrainBare(): Promise<number> {
  const events: Ev[] = [];
  for (let i = 0; i < N; i++) events.push(DELTAS[i]!);
  const terminal = TERMINAL;
  events.push(terminal);
  const result = resultOf(terminal);
  let head = 0;
  const bare: AsyncIterable<Ev> = {
    [Symbol.asyncIterator]: () => ({
      next: (): Promise<IteratorResult<Ev>> =>
        Promise.resolve(
          head < events.length ? { value: events[head++]!, done: false } : { value: undefined, done: true },
        ),
    }),
  };
  let read = 0;
  for await (const _ of bare) read += 1;
  return read + result;
}

// ---------------------------------------------------------------- (b) interleaved

/**
 * A callback producer (like a socket's data handler) bound to one stream: each call pushes the
 * next event, the terminal one after N deltas. `probe` (untimed runs only) is called before
 * each push to see whether a reader is parked.
 */
function producerFor(stream: Stream, probe?: (s: Stream) => void): () => void {
  let i = 0;
  return () => {
    probe?.(stream);
    if (i < N) stream.push({ type: "delta", i: i++ });
    else stream.push({ type: "done", i: N });
  };
}

/**
 * The hop that defers a push by one microtask: a reaction on a settled promise, the same V8
 * mechanism as the floor's `await null`. (Node's `queueMicrotask` wraps every callback in
 * async-context bookkeeping that costs more than the stream under test.)
 */
const TICK = Promise.resolve();

async function interleaved(Stream: StreamClass, probe?: (s: Stream) => void): Promise<number> {
  const stream = new Stream(isDone, resultOf);
  const produce = producerFor(stream, probe);
  void TICK.then(produce);
  let read = 0;
  for await (const e of stream) {
    read += 1;
    if (e.type === "done") break;
    // Runs after this loop has asked for the next event and found the stream empty.
    void TICK.then(produce);
  }
  return read + (await stream.result());
}

/** Same pacing: one microtask between the reader asking and the event being produced. */
async function interleavedFloor(): Promise<number> {
  let result = -1;
  async function* produce(): AsyncGenerator<Ev> {
    for (let i = 0; i < N; i++) {
      await null;
      yield { type: "delta", i };
    }
    await null;
    const terminal: Ev = { type: "done", i: N };
    result = resultOf(terminal);
    yield terminal;
  }
  let read = 0;
  for await (const e of produce()) {
    read += 1;
    if (e.type === "done") break;
  }
  return read + result;
}

/** Informational: the generator produces synchronously on demand, with no hop at all. */
async function interleavedPull(): Promise<number> {
  let result = -1;
  async function* produce(): AsyncGenerator<Ev> {
    for (let i = 0; i < N; i++) yield { type: "delta", i };
    const terminal: Ev = { type: "done", i: N };
    result = resultOf(terminal);
    yield terminal;
  }
  let read = 0;
  for await (const e of produce()) {
    read += 1;
    if (e.type === "done") break;
  }
  return read + result;
}

// ---------------------------------------------------------------- waiter-path probe

/** Whether a reader is parked on the stream right now (reads each class's private state). */
function readerParked(name: string, s: Stream): boolean {
  const x = s as unknown as { waiter?: unknown; waiting: { length: number } };
  return name.startsWith("ours") ? x.waiter !== undefined : x.waiting.length > 0;
}

async function probeWaiterPath(): Promise<void> {
  console.log(`\nwaiter-path probe for (b): pushes that found a parked reader`);
  for (const [name, Stream] of impls) {
    let parked = 0;
    let pushes = 0;
    const got = await interleaved(Stream, (s) => {
      pushes += 1;
      if (readerParked(name, s)) parked += 1;
    });
    if (got !== EXPECTED) throw new Error(`${name} (b) returned ${got}, expected ${EXPECTED}`);
    console.log(`  ${name.padEnd(10)}  ${parked} / ${pushes}`);
  }
}

// ---------------------------------------------------------------- (c) backlog

/**
 * (c) backlog: the producer stays ahead of the reader (bursts of 2,048 pushes, each followed by
 * 1,024 reads), then the rest is drained: the only path on which a queue reclaims its consumed
 * prefix while it still holds events.
 */
async function backlog(Stream: StreamClass): Promise<number> {
  const stream = new Stream(isDone, resultOf);
  const reader = stream[Symbol.asyncIterator]();
  let seen = 0;
  let pushed = 0;
  while (pushed < N) {
    for (let k = 0; k < 2048 && pushed < N; k++) stream.push(DELTAS[pushed++]!);
    for (let k = 0; k < 1024; k++) if (!(await reader.next()).done) seen += 1;
  }
  stream.push(TERMINAL);
  while (!(await reader.next()).done) seen += 1;
  return seen + (await stream.result());
}

// ---------------------------------------------------------------- main

function check(label: string, results: ReadonlyArray<{ name: string; last: unknown }>, n = N): void {
  const expected = n + 1 + n;
  for (const r of results) {
    if (r.last !== expected) throw new Error(`${label}: ${r.name} returned ${String(r.last)}, expected ${expected}`);
  }
}

const ratios = [
  { label: "ours / floor", num: "ours", den: "floor", bar: "<=", value: 1.5 },
  { label: "pi-ai 1.6 / ours", num: "pi-ai 1.6", den: "ours", bar: ">=", value: 1.5 },
  { label: "pi-ai 0.73 / ours", num: "pi-ai 0.73", den: "ours" },
] as const;

/**
 * pi-ai 0.73 drains its queue with `Array.prototype.shift`, which is O(length) on a large
 * array: push-then-drain is quadratic (about 9 s at 100,000 events, 26 s at 200,000 on the
 * reference machine), so at 1,000,000 it would take many minutes per run. Workload (a) measures
 * it separately at this size, next to ours at the same size.
 */
const N_073 = Math.min(N, Number(process.env.BENCH_EVENTS_073 ?? 50_000));

const only = process.env.BENCH_ONLY; // "a" or "b" to run one workload while iterating
console.log(
  `EventStream: ${N.toLocaleString("en")} events + 1 terminal; ${WARMUP} warm-up + ${RUNS} timed runs per case`,
);
let ok = true;

if (only === undefined || only === "a") {
  const full = impls.filter(([name]) => N_073 === N || name !== "pi-ai 0.73");
  const cases: Case[] = [
    ...full.map(([name, S]) => ({ name, run: () => pushThenDrain(S) })),
    { name: "floor", run: pushThenDrainFloor },
    { name: "bare iterator", run: pushThenDrainBare },
  ];
  const results = await measure(cases, { warmup: WARMUP, runs: RUNS });
  check("(a)", results);
  ok =
    printTable("(a) push then drain", results, [
      ...(N_073 === N ? ratios : ratios.slice(0, 2)),
      { label: "ours / bare iterator", num: "ours", den: "bare iterator" },
    ]) && ok;
  if (N_073 < N) {
    const small = impls.filter(([name]) => name === "ours" || name === "pi-ai 0.73");
    const results073 = await measure(
      small.map(([name, S]) => ({ name, run: () => pushThenDrain(S, N_073) })),
      { warmup: 1, runs: 3 },
    );
    check("(a) small", results073, N_073);
    printTable(
      `(a) push then drain at ${N_073.toLocaleString("en")} events (pi-ai 0.73 is quadratic here)`,
      results073,
      ratios.slice(2),
    );
  }
}

if (only === undefined || only === "b") {
  await probeWaiterPath();
  const cases: Case[] = [
    ...impls.map(([name, S]) => ({ name, run: () => interleaved(S) })),
    { name: "floor", run: interleavedFloor },
    { name: "pull generator", run: interleavedPull },
  ];
  const results = await measure(cases, { warmup: WARMUP, runs: RUNS });
  check("(b)", results);
  ok =
    printTable("(b) interleaved producer/consumer (waiter path)", results, [
      ...ratios,
      { label: "ours / pull generator", num: "ours", den: "pull generator" },
    ]) && ok;
}

if (only === undefined || only === "c") {
  const cases: Case[] = [
    ...impls.filter(([name]) => name !== "pi-ai 0.73").map(([name, S]) => ({ name, run: () => backlog(S) })),
    ...(baseline
      ? [{ name: "ours (baseline)", run: () => backlog(baseline.EventStream as unknown as StreamClass) }]
      : []),
  ];
  const results = await measure(cases, { warmup: WARMUP, runs: RUNS });
  check("(c)", results);
  ok =
    printTable("(c) backlog: the producer stays ahead, then a drain", results, [
      { label: "pi-ai 1.6 / ours", num: "pi-ai 1.6", den: "ours", bar: ">=", value: 1.5 },
      ...(baseline ? [{ label: "ours / ours (baseline)", num: "ours", den: "ours (baseline)" }] : []),
    ]) && ok;
}

console.log(ok ? "\nall bars met" : "\nsome bars MISSED (see MISS above)");
