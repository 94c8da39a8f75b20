/**
 * Issue 40 item 2: a ScriptedModel keeps a bounded number of requests (`keepRequests`, default
 * 100), so a long run's memory does not grow with every call it made. Heap is measured after a
 * full collection, before and after 10,000 calls.
 *
 * Issue 53 item 5: the kept requests share what they reference (each message is copied once),
 * so a long agent run's 100 kept requests hold about one copy of its transcript, not one each.
 * Measured in a child process (support/scripted-heap-child.ts), so nothing else is counted.
 */
import { execFileSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
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

it("a 1,000-turn agent run whose tool answers 2 KB a turn grows the heap by under 150 MB with 100 requests kept", () => {
  // A deep copy per kept request grew it by about 290 MB; shared copies by about 6 MB (the transcript is ~4 MB).
  const here = path.dirname(fileURLToPath(import.meta.url));
  const out = execFileSync(
    process.execPath,
    ["--expose-gc", "--import", "tsx", path.join(here, "support", "scripted-heap-child.ts"), "1000", "100"],
    { cwd: path.join(here, ".."), encoding: "utf8" },
  );
  const { grownBytes, requests, messages } = JSON.parse(out) as {
    grownBytes: number;
    requests: number;
    messages: number;
  };
  // the run was played to its end, and the latest 100 requests are kept
  expect([requests, messages]).toEqual([100, 2000]);
  expect(grownBytes).toBeLessThan(150 * 1024 * 1024);
}, 120_000);

it("kept requests are the contexts as they were sent, sharing each message's copy", async () => {
  const model = ScriptedModel.repeat(() => assistantMessage([], "stop"));
  const first = userMessage("first", { timestamp: 1 });
  await model.stream({ messages: [first] }).result();
  await model.stream({ messages: [first, userMessage("second", { timestamp: 2 })] }).result();
  (first.content as { text: string }[])[0]!.text = "changed after it was sent";
  expect(model.requests).toEqual([
    { messages: [userMessage("first", { timestamp: 1 })] },
    { messages: [userMessage("first", { timestamp: 1 }), userMessage("second", { timestamp: 2 })] },
  ]);
  expect(model.requests[1]!.messages[0]).toBe(model.requests[0]!.messages[0]);
});
