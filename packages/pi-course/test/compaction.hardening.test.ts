/**
 * Hostile summarizers (issue 31, items 8 and 9): one that ignores its signal cannot hang
 * `prompt()` after `abort()`, and a summary that does not fit is a failed compaction that appends
 * nothing.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Agent } from "../src/agent/agent.js";
import type { AgentCompactionReport } from "../src/agent/types.js";
import { compact } from "../src/session/compaction.js";
import { SessionFile } from "../src/session/session.js";
import type { AgentMessage } from "../src/types.js";
import { says, scripted } from "./support/messages.js";

let dir = "";
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "pi-compaction-harden-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const within = <T>(promise: Promise<T>, ms: number, what: string): Promise<T> =>
  Promise.race([promise, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(what)), ms))]);

describe("hostile summarizers", () => {
  it("a summarizer that ignores its signal: abort() during compaction ends prompt() at once, nothing appended", async () => {
    const session = await SessionFile.create(join(dir, "s.jsonl"), { cwd: dir });
    const model = scripted([says("big", 900), says("never asked")]);
    const reports: AgentCompactionReport[] = [];
    let asked = () => {};
    const summarizing = new Promise<void>((resolve) => {
      asked = resolve;
    });
    const agent = new Agent({
      session,
      initialState: { model },
      contextBudget: {
        budget: 1000,
        keepRecentTokens: 0,
        // Never settles, whatever its signal says.
        summarize: () => {
          asked();
          return new Promise<string>(() => {});
        },
        onCompaction: (r) => void reports.push(r),
      },
    });
    await agent.prompt("hello");
    const second = agent.prompt("again");
    await within(summarizing, 2000, "the summarizer was never asked");
    agent.abort();
    await within(second, 2000, "prompt() hangs after abort() while the summarizer ignores its signal");
    expect(reports).toHaveLength(1);
    expect(reports[0]).toMatchObject({ ok: false, reason: { kind: "summary_failed" } });
    expect((reports[0] as { reason: { message: string } }).reason.message).toMatch(/aborted/);
    expect(session.entries().some((e) => e.type === "compaction")).toBe(false);
    expect(model.requests).toHaveLength(1);
    await session.close();
  });

  it("a summary that does not fit the budget is refused: a failed compaction, nothing appended, the run goes on", async () => {
    const session = await SessionFile.create(join(dir, "s.jsonl"), { cwd: dir });
    const model = scripted([says("big", 900), says("still here")]);
    const reports: AgentCompactionReport[] = [];
    const agent = new Agent({
      session,
      initialState: { model },
      contextBudget: {
        budget: 1000,
        keepRecentTokens: 0,
        summarize: () => "summary ".repeat(100_000),
        onCompaction: (r) => void reports.push(r),
      },
    });
    await agent.prompt("hello");
    await agent.prompt("again");
    expect(reports).toHaveLength(1);
    expect(reports[0]).toMatchObject({ ok: false, tokensBefore: 900, reason: { kind: "summary_failed" } });
    expect((reports[0] as { reason: { message: string } }).reason.message).toMatch(
      /^the summary does not fit: it counts \d+ tokens, over the 1000 allowed \(maxSummaryTokens\); nothing appended\.$/,
    );
    expect(session.entries().some((e) => e.type === "compaction")).toBe(false);
    expect(agent.state.messages.at(-1)).toMatchObject({ role: "assistant", stopReason: "stop" });
    await session.close();
  });

  it("compact: a summary over maxSummaryTokens is refused, the same one without a limit is appended", async () => {
    const session = await SessionFile.create(join(dir, "s.jsonl"), { cwd: dir });
    let parent: string | null = null;
    const long = "word ".repeat(2000);
    for (const message of [
      { role: "user", content: [{ type: "text", text: long }], timestamp: 1 },
      says(long),
      { role: "user", content: [{ type: "text", text: "now" }], timestamp: 2 },
      says("ok"),
    ] as AgentMessage[]) {
      parent = await session.append({ type: "message", parentId: parent, message });
    }
    const options = {
      model: scripted([]),
      keepRecentTokens: 1,
      summarize: () => "summary ".repeat(500),
    };
    const refused = await compact(session, { ...options, maxSummaryTokens: 100 });
    expect(refused).toMatchObject({ ok: false, reason: { kind: "summary_failed" } });
    expect(!refused.ok && refused.reason.message).toMatch(
      /^the summary does not fit: it counts \d+ tokens, over the 100 allowed \(maxSummaryTokens\); nothing appended\.$/,
    );
    expect(session.entries().some((e) => e.type === "compaction")).toBe(false);
    const accepted = await compact(session, options);
    expect(accepted.ok).toBe(true);
    await session.close();
  });
});
