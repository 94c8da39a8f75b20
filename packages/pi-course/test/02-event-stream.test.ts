import { describe, expect, expectTypeOf, it } from "vitest";
import { EventStream } from "../src/index.js";

/** A tiny event vocabulary: numbers, ended by a terminal carrying the result. */
type Ev = { kind: "item"; n: number } | { kind: "end"; total: number };

function numberStream(): EventStream<Ev, number> {
  return new EventStream<Ev, number>(
    (e) => e.kind === "end",
    (e) => (e.kind === "end" ? e.total : Number.NaN),
  );
}

const item = (n: number): Ev => ({ kind: "item", n });
const end = (total: number): Ev => ({ kind: "end", total });

async function collect<T>(stream: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const event of stream) out.push(event);
  return out;
}

/** Lets every pending microtask and timer callback run. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

/** These tests take microseconds; a wrong stream hangs them, and they fail after this long. */
const HANG_MS = 2_000;

describe("chapter 02 · EventStream", () => {
  it("Lab 2.1 · buffers events pushed before anyone reads, delivers them in order, terminal last", async () => {
    const stream = numberStream();
    stream.push(item(1));
    stream.push(item(2));
    stream.push(end(3));
    expect(await collect(stream)).toEqual([item(1), item(2), end(3)]);
    await expect(stream.result()).resolves.toBe(3);
  });

  it("Lab 2.1 · the terminal event settles result() even before anyone reads", async () => {
    const stream = numberStream();
    stream.push(item(1));
    stream.push(end(42));
    await expect(stream.result()).resolves.toBe(42);
  });

  it("Lab 2.1 · pushes after the terminal event are ignored", async () => {
    const stream = numberStream();
    stream.push(end(1));
    stream.push(item(2));
    stream.push(end(3));
    expect(await collect(stream)).toEqual([end(1)]);
    await expect(stream.result()).resolves.toBe(1);
  });

  it("Lab 2.1 · keeps order across long interleavings of pushes and reads (queue reuse and compaction)", async () => {
    const stream = numberStream();
    const seen: number[] = [];
    let pushed = 0;
    const iterator = stream[Symbol.asyncIterator]();
    // Push in bursts and read part of each burst, so the queue's head moves far and the
    // buffer is both emptied and compacted while non-empty.
    for (const [burst, read] of [
      [5000, 3000],
      [5000, 6999],
      [10, 5],
      [3000, 3006],
    ] as const) {
      for (let i = 0; i < burst; i++) stream.push(item(pushed++));
      for (let i = 0; i < read; i++) {
        const next = await iterator.next();
        expect(next.done).toBe(false);
        seen.push((next.value as Extract<Ev, { kind: "item" }>).n);
      }
    }
    stream.push(end(pushed));
    const last = await iterator.next();
    expect(last).toEqual({ value: end(pushed), done: false });
    expect(await iterator.next()).toEqual({ value: undefined, done: true });
    expect(seen).toEqual(Array.from({ length: pushed }, (_, i) => i));
    await expect(stream.result()).resolves.toBe(pushed);
  });

  it(
    "Lab 2.1 · a waiting reader is woken by the next push",
    async () => {
      const stream = numberStream();
      const iterator = stream[Symbol.asyncIterator]();
      const pending = iterator.next();
      let woke = false;
      void pending.then(() => (woke = true));
      await settle();
      expect(woke).toBe(false);
      stream.push(item(7));
      // push() hands the event to the waiting reader itself: it is answered before any timer,
      // and nothing stays in the buffer.
      const still = new Promise((resolve) => setTimeout(() => resolve("the reader is still waiting after push()"), 0));
      expect(await Promise.race([pending, still])).toEqual({ value: item(7), done: false });
      expect(stream.buffered).toBe(0);
    },
    HANG_MS,
  );

  it(
    "Lab 2.1 · a waiting reader receives the terminal event as an item, then iteration ends",
    async () => {
      const stream = numberStream();
      const reading = collect(stream);
      reading.catch(() => {}); // awaited below; don't let an early failure count as unhandled meanwhile
      await settle();
      stream.push(item(1));
      await settle();
      stream.push(end(9));
      stream.push(item(10));
      expect(await reading).toEqual([item(1), end(9)]);
      await expect(stream.result()).resolves.toBe(9);
    },
    HANG_MS,
  );

  it("Lab 2.1 · a second reader is refused with a clear error", () => {
    const stream = numberStream();
    stream[Symbol.asyncIterator]();
    expect(() => stream[Symbol.asyncIterator]()).toThrow(/already has a reader/);
  });

  it(
    "Lab 2.1 · a second next() before the first settles is refused, not silently reordered",
    async () => {
      const stream = numberStream();
      const iterator = stream[Symbol.asyncIterator]();
      const first = iterator.next();
      // Refused at once (before any timer), not left waiting beside the first one.
      const second = iterator.next().then(
        () => "the second next() resolved",
        (error: Error) => error.message,
      );
      const still = new Promise((resolve) => setTimeout(() => resolve("the second next() is still waiting"), 0));
      expect(await Promise.race([second, still])).toMatch(/before the previous next\(\) settled/);
      stream.push(item(1));
      expect(await first).toEqual({ value: item(1), done: false });
    },
    HANG_MS,
  );

  it("Lab 2.1 · a throwing extractResult ends the stream: push rethrows, result() rejects, the reader is freed", async () => {
    const stream = new EventStream<Ev, number>(
      (e) => e.kind === "end",
      () => {
        throw new Error("cannot extract");
      },
    );
    const iterator = stream[Symbol.asyncIterator]();
    const pending = iterator.next();
    expect(() => stream.push(end(1))).toThrow("cannot extract");
    await expect(stream.result()).rejects.toThrow("cannot extract");
    expect(await pending).toEqual({ value: undefined, done: true });
    stream.push(item(2));
    expect(await iterator.next()).toEqual({ value: undefined, done: true });
  });

  it(
    "Lab 2.1 · a reader that breaks early ends iteration; result() still settles",
    async () => {
      const stream = numberStream();
      const iterator = stream[Symbol.asyncIterator]();
      const seen: Ev[] = [];
      const reading = (async () => {
        for await (const event of { [Symbol.asyncIterator]: () => iterator }) {
          seen.push(event);
          if (seen.length === 2) break;
        }
      })();
      for (let i = 0; i < 5; i++) {
        stream.push(item(i));
        await settle();
      }
      await reading;
      expect(seen).toEqual([item(0), item(1)]);
      expect(await iterator.next()).toEqual({ value: undefined, done: true });
      stream.push(end(5));
      await expect(stream.result()).resolves.toBe(5);
      expect(await iterator.next()).toEqual({ value: undefined, done: true });
      // return() itself answers as the iterator protocol says: done
      const other = numberStream()[Symbol.asyncIterator]();
      await expect(other.return!()).resolves.toEqual({ value: undefined, done: true });
      expect(await other.next()).toEqual({ value: undefined, done: true });
    },
    HANG_MS,
  );

  it("Lab 2.2 · end(result) delivers what is buffered, then ends iteration and resolves result()", async () => {
    const stream = numberStream();
    stream.end(5);
    stream.push(item(1));
    expect(await collect(stream)).toEqual([]);
    await expect(stream.result()).resolves.toBe(5);
  });

  it("Lab 2.2 · end(result) drains buffered events first", async () => {
    const stream = numberStream();
    stream.push(item(1));
    stream.push(item(2));
    stream.end(2);
    expect(await collect(stream)).toEqual([item(1), item(2)]);
    await expect(stream.result()).resolves.toBe(2);
  });

  it(
    "Lab 2.2 · end() with no result before a terminal event makes result() reject clearly",
    async () => {
      const stream = numberStream();
      stream.end();
      // result() rejects at once (before any timer), so a caller awaiting it is never left waiting.
      const outcome = stream.result().then(
        (value) => `result() resolved with ${value}`,
        (error: Error) => error.message,
      );
      const still = new Promise((resolve) => setTimeout(() => resolve("result() is still pending after end()"), 0));
      expect(await Promise.race([outcome, still])).toMatch(/ended without a result/);
      expect(await collect(stream)).toEqual([]);
    },
    HANG_MS,
  );

  it("Lab 2.2 · end() with no result causes no unhandled rejection when nobody asks for the result", async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    try {
      numberStream().end();
      await settle();
      await settle();
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
    expect(unhandled).toEqual([]);
  });

  it("Lab 2.2 · end() wakes a waiting reader with the end of iteration", async () => {
    const stream = numberStream();
    const iterator = stream[Symbol.asyncIterator]();
    const pending = iterator.next();
    stream.end(0);
    // end() answers the reader at once: before any timer, however busy the machine.
    const still = new Promise((resolve) => setTimeout(() => resolve("the reader is still waiting after end()"), 0));
    expect(await Promise.race([pending, still])).toEqual({ value: undefined, done: true });
  });

  it("Lab 2.2 · end() after the stream has ended changes nothing", async () => {
    const ended = numberStream();
    ended.end(1);
    ended.end(2);
    ended.end();
    await expect(ended.result()).resolves.toBe(1);
    const terminated = numberStream();
    terminated.push(end(7));
    terminated.end(8);
    terminated.end();
    expect(await collect(terminated)).toEqual([end(7)]);
    await expect(terminated.result()).resolves.toBe(7);
  });

  it("Lab 2.2 · end(result) counts an explicit undefined as a result (EventStream<T, void>)", async () => {
    const stream = new EventStream<number, void>(
      () => false,
      () => undefined,
    );
    stream.end(undefined);
    await expect(stream.result()).resolves.toBeUndefined();
  });

  it("Lab 2.2 · the types: R defaults to T, iteration yields T", () => {
    const plain = new EventStream<string>(
      (e) => e === "end",
      (e) => e,
    );
    expectTypeOf(plain.result()).toEqualTypeOf<Promise<string>>();
    expectTypeOf(numberStream().result()).toEqualTypeOf<Promise<number>>();
    expectTypeOf(numberStream()).toMatchTypeOf<AsyncIterable<Ev>>();
    expectTypeOf(numberStream().push).parameter(0).toEqualTypeOf<Ev>();
    plain.end("end");
  });
});
