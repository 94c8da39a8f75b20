/**
 * `node --expose-gc --import tsx scripted-heap-child.ts <turns> <keepRequests>`: one agent run of
 * `turns` turns on a ScriptedModel, each calling a tool that answers 2 KB, then the last turn
 * answers. Prints `{"grownBytes", "requests", "messages"}`: the heap used after the run (after full
 * collections, the model and the agent still alive) minus the heap used before it.
 */
import { Type } from "typebox";
import { Agent, ScriptedModel, assistantMessage, defineTool } from "../../src/index.js";

const turns = Number(process.argv[2]);
const keepRequests = Number(process.argv[3]);
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error("run with --expose-gc");
const settledHeap = (): number => {
  for (let i = 0; i < 3; i++) gc();
  return process.memoryUsage().heapUsed;
};

const answer = "x".repeat(2048);
const big = defineTool({
  name: "big",
  label: "Big",
  description: "Answers 2 KB of text.",
  parameters: Type.Object({ n: Type.Number() }),
  execute: async () => ({ content: [{ type: "text", text: answer }], details: {} }),
});
const model = ScriptedModel.repeat(
  (_context, turn) =>
    turn < turns - 1
      ? assistantMessage([{ type: "toolCall", id: `c${turn}`, name: "big", arguments: { n: turn } }], "toolUse")
      : assistantMessage([{ type: "text", text: "done" }], "stop"),
  { keepRequests },
);
const agent = new Agent({ maxTurns: turns + 1, initialState: { model, tools: [big] } });
const before = settledHeap();
await agent.prompt("go");
const grownBytes = settledHeap() - before;
process.stdout.write(
  `${JSON.stringify({ grownBytes, requests: model.requests.length, messages: agent.state.messages.length })}\n`,
);
