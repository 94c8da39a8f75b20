/**
 * `ScriptedModel` checks scripted tool calls against the tools the request declares, on the turn
 * that plays them: a typo in a script fails where it is written, not three calls later.
 */
import { Type } from "typebox";
import { expect, it } from "vitest";
import { agentLoop } from "../src/agent/agent-loop.js";
import { defineTool, toToolDefinition } from "../src/agent/tools.js";
import { assistantMessage, userMessage } from "../src/messages.js";
import { ScriptedModel } from "../src/models/scripted-model.js";
import type { AssistantMessage, Context, ToolCall } from "../src/types.js";
import { call, says } from "./support/messages.js";

const read = defineTool({
  name: "read",
  label: "Read",
  description: "Reads a file.",
  parameters: Type.Object({ path: Type.String(), limit: Type.Optional(Type.Integer({ minimum: 1 })) }),
  execute: async (_id, { path }) => ({ content: [{ type: "text", text: `read ${path}` }], details: undefined }),
});
const write = defineTool({
  name: "write",
  label: "Write",
  description: "Writes a file.",
  parameters: Type.Object({ path: Type.String(), content: Type.String() }),
  execute: async () => ({ content: [{ type: "text", text: "written" }], details: undefined }),
});

const calls = (...list: ToolCall[]): AssistantMessage => assistantMessage(list, "toolUse");
const withTools: Context = { messages: [userMessage("go")], tools: [read, write].map(toToolDefinition) };
const FIX = "Fix the script, or pass { checkToolCalls: false } to ScriptedModel to play such a call on purpose.";

/** Plays `count` turns of `model` against `context`; each turn's final message and event types. */
async function play(model: ScriptedModel, context: Context, count: number) {
  const turns: { types: string[]; message: AssistantMessage }[] = [];
  for (let i = 0; i < count; i++) {
    const stream = model.stream(context);
    const types: string[] = [];
    for await (const event of stream) types.push(event.type);
    turns.push({ types, message: await stream.result() });
  }
  return turns;
}

it("a scripted call whose arguments the tool's schema refuses ends its own turn with an error naming the turn, the tool and the field", async () => {
  const model = new ScriptedModel([
    calls(call("c1", "read", { path: "a.txt" })),
    says("fine"),
    calls(call("c2", "write", { path: "b.txt", content: "x" }), call("c3", "read", { path: 42 })),
    says("never played"),
  ]);
  const turns = await play(model, withTools, 3);
  expect(turns.map((t) => t.message.stopReason)).toEqual(["toolUse", "stop", "error"]);
  // Nothing of the wrong turn is streamed: the error is the whole turn.
  expect(turns[2]!.types).toEqual(["error"]);
  expect(turns[2]!.message.content).toEqual([]);
  expect(turns[2]!.message.errorMessage).toBe(
    `ScriptedModel: scripted turn 3: tool call "read" arguments: /path must be string. ${FIX}`,
  );
});

it("a missing field, a value out of range and an undeclared tool are each reported; a responder's answer is checked too", async () => {
  const first = await play(new ScriptedModel([calls(call("c1", "read", { paht: "a.txt" }))]), withTools, 1);
  expect(first[0]!.message.errorMessage).toBe(
    `ScriptedModel: scripted turn 1: tool call "read" arguments: /path is required. ${FIX}`,
  );
  const range = await play(new ScriptedModel([calls(call("c1", "read", { path: "a", limit: 0 }))]), withTools, 1);
  expect(range[0]!.message.errorMessage).toBe(
    `ScriptedModel: scripted turn 1: tool call "read" arguments: /limit must be >= 1. ${FIX}`,
  );
  const unknown = await play(new ScriptedModel([says("hi"), calls(call("c1", "raed", { path: "a" }))]), withTools, 2);
  expect(unknown[1]!.message.errorMessage).toBe(
    `ScriptedModel: scripted turn 2: tool call "raed" names a tool the request does not declare (it declares: read, write). ${FIX}`,
  );
  const responder = ScriptedModel.repeat(() => calls(call("c1", "write", { path: "a" })));
  const answered = await play(responder, withTools, 1);
  expect(answered[0]!.message.errorMessage).toBe(
    `ScriptedModel: scripted turn 1: tool call "write" arguments: /content is required. ${FIX}`,
  );
});

it("what is not checked: a request without tools, checkToolCalls false, scripted malformed JSON, a cut-off (length) turn", async () => {
  const wrong = calls(call("c1", "read", { path: 42 }));
  const noTools = await play(new ScriptedModel([wrong]), { messages: [] }, 1);
  expect(noTools[0]!.message.stopReason).toBe("toolUse");
  const off = await play(new ScriptedModel([wrong], { checkToolCalls: false }), withTools, 1);
  expect(off[0]!.message.content).toEqual([call("c1", "read", { path: 42 })]);
  const malformed: ToolCall = { ...call("c1", "read", {}), rawArguments: '{"path":', argumentsError: "bad JSON" };
  const broken = await play(new ScriptedModel([calls(malformed)]), withTools, 1);
  expect(broken[0]!.message.stopReason).toBe("toolUse");
  const cut = await play(new ScriptedModel([assistantMessage([call("c1", "read", {})], "length")]), withTools, 1);
  expect(cut[0]!.message.stopReason).toBe("length");
});

it("in an agent loop the run stops on the wrong turn, with the script's error, before any tool runs", async () => {
  let ran = 0;
  const counted = { ...read, execute: async () => (ran++, { content: [], details: undefined }) };
  const model = new ScriptedModel([calls(call("c1", "read", { path: ["a.txt"] })), says("never")]);
  const run = agentLoop([userMessage("go")], { messages: [], tools: [counted] }, { model });
  for await (const _ of run) {
    // drain
  }
  const messages = await run.result();
  const last = messages.at(-1) as AssistantMessage;
  expect(last.stopReason).toBe("error");
  expect(last.errorMessage).toBe(
    `ScriptedModel: scripted turn 1: tool call "read" arguments: /path must be string. ${FIX}`,
  );
  expect(ran).toBe(0);
  expect(model.requests).toHaveLength(1);
});
