/**
 * Compaction on a `ScriptedModel`: with no `summaryModel`, the summary request is one more call
 * of the agent's own model, so it plays the next scripted turn. A turn that is a tool call, or
 * that has no text, fails the compaction loudly: the report says what came back and why.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { Agent } from "../src/agent/agent.js";
import type { AgentCompactionReport } from "../src/agent/types.js";
import { assistantMessage } from "../src/messages.js";
import { ScriptedModel } from "../src/models/scripted-model.js";
import { SessionFile } from "../src/session/session.js";

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "pi-compaction-scripted-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const says = (text: string, totalTokens = 0) =>
  assistantMessage([{ type: "text", text }], "stop", { usage: { input: totalTokens, output: 0, totalTokens } });

async function compactOn(summaryTurn: ReturnType<typeof assistantMessage>): Promise<AgentCompactionReport> {
  const session = await SessionFile.create(join(dir, `${Math.random()}.jsonl`), { cwd: dir });
  const reports: AgentCompactionReport[] = [];
  const model = new ScriptedModel([says("one"), says("two", 900), summaryTurn, says("three")], { chunkSize: 1000 });
  const agent = new Agent({
    session,
    initialState: { model },
    contextBudget: { budget: 1000, keepRecentTokens: 10, onCompaction: (r) => void reports.push(r) },
  });
  await agent.prompt("a");
  await agent.prompt("b");
  await agent.prompt("c"); // 900 ≥ 0.8 × 1000: this run starts by compacting, with the agent's model
  await session.close();
  expect(reports).toHaveLength(1);
  expect(session.entries().some((e) => e.type === "compaction")).toBe(false);
  return reports[0]!;
}

it("a summary request answered with a tool call or with no text fails the compaction, saying so and why", async () => {
  const call = await compactOn(
    assistantMessage([{ type: "toolCall", id: "c1", name: "read", arguments: {} }], "toolUse"),
  );
  expect(call).toMatchObject({ ok: false, reason: { kind: "summary_failed" } });
  if (call.ok) throw new Error("unreachable");
  expect(call.reason.message).toMatch(/answered with a tool call instead of a summary/);
  expect(call.reason.message).toMatch(/a ScriptedModel answers it with its next scripted turn/);

  const empty = await compactOn(says(""));
  if (empty.ok) throw new Error("expected a failed compaction");
  expect(empty.reason.message).toMatch(/the summary is empty: the model answered with no text/);
  expect(empty.reason.message).toMatch(/give a summaryModel/);
});
