/**
 * Issue 43: a duration a user, a case file or a caller hands over never becomes a timer that
 * fires at once. Node's timers hold at most 2³¹−1 ms (about 24.8 days) and fire a longer delay
 * after 1 ms; `userDuration` refuses what is no duration and makes anything longer "no limit".
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { caseModel, runtimeWire } from "../src/cli/eval-wiring.js";
import { CodeSandbox } from "../src/codemode/sandbox.js";
import { loadCase } from "../src/eval/case-format.js";
import { runCase } from "../src/eval/run-case.js";
import { JsonRpcConnection } from "../src/mcp/connection.js";
import { sleep } from "../src/models/http/retry-policy.js";
import { MAX_TIMER_MS, userDuration } from "../src/base/timer.js";
import { writeCase } from "./support/eval-cases.js";
import { MemoryTransport } from "./support/mcp.js";

/** About 35 days: a valid number, past what a timer holds. */
const DAYS_35_S = 3_000_000;

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "pi-course-durations-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("userDuration", () => {
  it("keeps what a timer holds, makes anything longer no limit, and refuses what is no duration, naming the setting", () => {
    expect(userDuration(0, "x")).toBe(0);
    expect(userDuration(MAX_TIMER_MS, "x")).toBe(MAX_TIMER_MS);
    expect(userDuration(MAX_TIMER_MS + 1, "x")).toBeUndefined();
    expect(userDuration(2.5, "x", "s")).toBe(2500);
    expect(userDuration(DAYS_35_S, "timeLimitSeconds", "s")).toBeUndefined();
    for (const bad of [-1, Number.NaN, Infinity, "10", null]) {
      expect(() => userDuration(bad, "timeLimitSeconds", "s")).toThrow(RangeError);
    }
    expect(() => userDuration(-1, "the MCP timeout")).toThrow(
      "the MCP timeout must be a finite number of milliseconds ≥ 0, got -1",
    );
    expect(() => userDuration("10", "timeLimitSeconds", "s")).toThrow(
      "timeLimitSeconds must be a finite number of seconds ≥ 0, got a string",
    );
  });
});

describe("a duration past 24.8 days is no limit, never now", () => {
  it("an eval case with a 35-day time limit (and check limit) passes", async () => {
    const evalCase = await loadCase(
      await writeCase(path.join(dir, "suite"), "long", {
        caseJson: { timeLimitSeconds: DAYS_35_S, checkTimeLimitSeconds: DAYS_35_S },
        files: { "answer.txt": "41\n" },
        check: 'sleep 0.2; [ "$(cat answer.txt)" = 42 ]',
        script: [
          { toolCalls: [{ name: "write", arguments: { path: "answer.txt", content: "42" } }] },
          { text: "Done." },
        ],
      }),
    );
    const record = await runCase(evalCase, {
      repeat: 0,
      runRoot: path.join(dir, "run"),
      sharedTemp: false, // other test files write at the top of /tmp meanwhile
      model: await caseModel(evalCase, undefined, 0),
      wire: runtimeWire(undefined),
    });
    expect([record.status, record.reason]).toEqual(["passed", undefined]);
  });

  it("an MCP request with a 35-day timeout waits for its answer", async () => {
    const transport = new MemoryTransport();
    const connection = new JsonRpcConnection(transport);
    await connection.start();
    const answer = connection.request("slow", {}, { timeoutMs: DAYS_35_S * 1000 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    transport.deliver({ jsonrpc: "2.0", id: 0, result: { ok: true } });
    expect(await answer).toEqual({ ok: true });
    await expect(connection.request("bad", {}, { timeoutMs: -1 })).rejects.toThrow(
      "the timeout of bad (timeoutMs) must be a finite number of milliseconds ≥ 0, got -1",
    );
  });

  it("a codemode script with a 35-day timeoutMs runs to its end", async () => {
    const sandbox = new CodeSandbox();
    try {
      const outcome = await sandbox.run({
        code: "let n = 0; for (let i = 0; i < 1e5; i++) n += i; return n;",
        tools: [],
        callTool: async () => ({ text: "", isError: true }),
        limits: { timeoutMs: DAYS_35_S * 1000 },
      });
      expect(outcome.error).toBeUndefined();
      expect(outcome.ok).toBe(true);
    } finally {
      await sandbox.close();
    }
  });

  it("a retry wait of 35 days (a server's Retry-After under a huge maxRetryDelayMs) waits until aborted", async () => {
    const controller = new AbortController();
    let slept: boolean | undefined;
    void sleep(DAYS_35_S * 1000, controller.signal).then((value) => (slept = value));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(slept).toBeUndefined();
    controller.abort();
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(slept).toBe(false);
  });
});
