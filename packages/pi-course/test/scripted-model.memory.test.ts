/**
 * Issue 40 item 2: a ScriptedModel keeps a bounded number of requests (`keepRequests`, default
 * 100), so a long run's memory does not grow with every call it made. Heap is measured after a
 * full collection, before and after 10,000 calls.
 */
import v8 from "node:v8";
import vm from "node:vm";
import { expect, it } from "vitest";
import { assistantMessage, type Context, ScriptedModel, userMessage } from "../src/index.js";

v8.setFlagsFromString("--expose-gc");
const gc = vm.runInNewContext("gc") as () => void;
const heapAfterGc = (): number => {
  gc();
  return process.memoryUsage().heapUsed;
};

/** 20 messages of 1 KB: a context that every request would copy (about 25 KB each). */
const context: Context = {
  messages: Array.from({ length: 20 }, (_, i) => userMessage(`${i} ${"x".repeat(1000)}`, { timestamp: 1 })),
};

it("10,000 calls keep the latest 100 requests, and the heap grows by far less than 10,000 copies would take", async () => {
  const model = ScriptedModel.repeat(() => assistantMessage([{ type: "text", text: "ok" }], "stop"), {
    chunkSize: 10_000,
  });
  const before = heapAfterGc();
  for (let i = 0; i < 10_000; i++) await model.stream(context).result();
  const grown = heapAfterGc() - before;
  expect(model.calls).toBe(10_000);
  expect(model.requests).toHaveLength(100);
  // Keeping every request took about 250 MB here; 100 of them take about 2.5 MB.
  expect(grown).toBeLessThan(30 * 1024 * 1024);
}, 60_000);

it("keepRequests: 0 keeps none, Infinity keeps all, and anything else is refused", async () => {
  const none = ScriptedModel.repeat(() => assistantMessage([], "stop"), { keepRequests: 0 });
  await none.stream(context).result();
  expect([none.calls, none.requests.length]).toEqual([1, 0]);
  const all = ScriptedModel.repeat(() => assistantMessage([], "stop"), { keepRequests: Infinity });
  for (let i = 0; i < 150; i++) await all.stream({ messages: [] }).result();
  expect(all.requests).toHaveLength(150);
  for (const bad of [-1, 1.5, Number.NaN]) {
    expect(() => new ScriptedModel([], { keepRequests: bad })).toThrow(
      `ScriptedModel: keepRequests must be a whole number >= 0 or Infinity, got ${bad}`,
    );
  }
});
