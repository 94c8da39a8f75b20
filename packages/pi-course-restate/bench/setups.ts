/**
 * The bench's setup, `ticks`: a scripted run of `options.calls` model turns, each asking for one
 * `tick` call (not safe to replay, so two steps: intent and result), then a final answer.
 */
import { type AgentTool, assistantMessage, defineTool, type Model, ScriptedModel } from "@pi/course";
import { Type } from "typebox";
import type { RunSetups } from "../src/agent-run.js";

export function ticksModel(calls: number): Model {
  return ScriptedModel.repeat(
    ({ messages }) => {
      const done = messages.filter((m) => m.role === "toolResult").length;
      if (done >= calls) return assistantMessage([{ type: "text", text: `${done} ticks` }], "stop", { timestamp: 0 });
      return assistantMessage([{ type: "toolCall", id: `t${done}`, name: "tick", arguments: {} }], "toolUse", {
        timestamp: 0,
      });
    },
    { keepRequests: 0, chunkSize: 64 },
  );
}

export function ticksTools(): AgentTool<any, any>[] {
  let ticks = 0;
  return [
    defineTool({
      name: "tick",
      label: "tick",
      description: "Counts.",
      parameters: Type.Object({}),
      execute: async () => ({ content: [{ type: "text", text: `tick ${++ticks}` }], details: undefined }),
    }),
  ];
}

export const setups: RunSetups = {
  ticks: ({ options }) => {
    const calls = (options as { calls: number }).calls;
    return { model: ticksModel(calls), tools: ticksTools(), maxTurns: calls + 1 };
  },
};
