/**
 * The message builders the agent tests share: a tool call, a text block, an assistant turn, a
 * final answer, a user message, and a ScriptedModel that sends each block in one delta (so the
 * event sequences the tests assert stay short and exact).
 */
import type { AgentMessage, AssistantContent, AssistantMessage, StopReason, ToolCall } from "../../src/index.js";
import { assistantMessage, ScriptedModel, userMessage } from "../../src/index.js";

/** A tool call block; `name` defaults to `probe`, the tool most agent tests script. */
export const call = (id: string, name = "probe", args: unknown = {}): ToolCall => ({
  type: "toolCall",
  id,
  name,
  arguments: args,
});

export const text = (t: string): AssistantContent => ({ type: "text", text: t });

/** An assistant turn; `totalTokens` (all of it input) for the tests of the context budget. */
export const turn = (
  content: AssistantContent[],
  stopReason: StopReason = "toolUse",
  totalTokens = 0,
): AssistantMessage => assistantMessage(content, stopReason, { usage: { input: totalTokens, output: 0, totalTokens } });

/** A final answer: one text block, stop reason `stop`. */
export const says = (t: string, totalTokens = 0): AssistantMessage => turn([text(t)], "stop", totalTokens);

/** A user message with timestamp 1. */
export const user = (t: string): AgentMessage => userMessage(t, { timestamp: 1 });

/** A ScriptedModel whose deltas carry whole blocks. */
export const scripted = (turns: ConstructorParameters<typeof ScriptedModel>[0]) =>
  new ScriptedModel(turns, { chunkSize: 10_000 });
