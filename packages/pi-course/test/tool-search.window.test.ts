/**
 * What a conversation keeps declared is bounded (chapter 15, given: declared-window.ts): of the
 * deferred tools, only the `MAX_DECLARED_DEFERRED` most recently declared or called stay declared;
 * an older one is refused as undeclared until a search declares it again. The window is read from
 * the transcript, so a resumed run declares exactly what the last request of the first declared.
 */
import { Type } from "typebox";
import { expect, it } from "vitest";
import {
  MAX_DECLARED_DEFERRED,
  ScriptedModel,
  agentLoop,
  assistantMessage,
  defineTool,
  textOf,
  userMessage,
} from "../src/index.js";
import type { AgentMessage, AgentTool, ToolCall, ToolResultMessage } from "../src/index.js";
import { finish, grammarViolations } from "./support/agent-run.js";
import { call, says } from "./support/messages.js";

const calls = (...list: ToolCall[]) => assistantMessage(list, "toolUse");
const sloppy = (turns: ConstructorParameters<typeof ScriptedModel>[0]) =>
  new ScriptedModel(turns, { chunkSize: 10_000, checkToolCalls: false });
const names = (from: number, to: number) =>
  Array.from({ length: to - from }, (_, i) => `t${String(from + i).padStart(2, "0")}`);

const deferred: AgentTool<any, any>[] = names(0, 30).map((name) =>
  defineTool({
    name,
    label: name,
    description: `the ${name} tool`,
    parameters: Type.Object({}),
    exposure: "deferred",
    execute: async () => ({ content: [{ type: "text", text: `${name} ran` }], details: undefined }),
  }),
);
/** Declares the names it is given, as tool_search does with its matches. */
const declare = defineTool({
  name: "declare",
  label: "declare",
  description: "declares tools",
  parameters: Type.Object({ names: Type.Array(Type.String()) }),
  execute: async (_id, args) => ({
    content: [{ type: "text", text: "ok" }],
    details: undefined,
    declareTools: args.names,
  }),
});
const tools = [declare, ...deferred];

const requestNames = (model: ScriptedModel, index: number) => (model.requests[index]?.tools ?? []).map((t) => t.name);
const resultText = (messages: readonly AgentMessage[], id: string) =>
  textOf(messages.find((m): m is ToolResultMessage => m.role === "toolResult" && m.toolCallId === id)!);

it("at most MAX_DECLARED_DEFERRED deferred tools stay declared: the least recently declared or called drop out, are refused, and a search declares them again; a resumed run declares the same", async () => {
  expect(MAX_DECLARED_DEFERRED).toBe(20);
  const model = sloppy([
    calls(call("c1", "declare", { names: names(0, 10) })),
    calls(call("c2", "t00")), // t00 is used: it becomes the newest
    calls(call("c3", "declare", { names: names(10, 20) })), // 20 declared: t01-t09, t00, t10-t19
    calls(call("c4", "declare", { names: names(20, 25) })), // five more: t01-t05 drop out
    calls(call("c5", "t01"), call("c6", "t00")),
    calls(call("c7", "declare", { names: ["t01"] })), // found again: t06 drops out
    calls(call("c8", "t01")),
    says("done"),
  ]);
  const run = await finish(agentLoop([userMessage("go")], { messages: [], tools }, { model }));
  expect(grammarViolations(run.events, run.result)).toEqual([]);
  expect(requestNames(model, 3)).toEqual(["declare", ...names(0, 20)]);
  const afterC4 = ["declare", "t00", ...names(6, 25)];
  expect(requestNames(model, 4)).toEqual(afterC4);
  expect(resultText(run.result, "c5")).toContain('Tool "t01" was not declared to you in this request');
  expect(resultText(run.result, "c6")).toBe("t00 ran");
  const last = ["declare", "t00", "t01", ...names(7, 25)];
  expect(requestNames(model, 6)).toEqual(last);
  expect(resultText(run.result, "c8")).toBe("t01 ran");
  expect(requestNames(model, 7)).toEqual(last);
  for (let i = 0; i < model.requests.length; i++)
    expect(requestNames(model, i).length).toBeLessThanOrEqual(1 + MAX_DECLARED_DEFERRED);

  // resumed from the transcript: the same window, the same refusals
  const resumed = sloppy([calls(call("r1", "t06"), call("r2", "t24")), says("done")]);
  const again = await finish(agentLoop([userMessage("again")], { messages: run.result, tools }, { model: resumed }));
  expect(requestNames(resumed, 0)).toEqual(last);
  expect(resultText(again.result, "r1")).toContain('Tool "t06" was not declared to you in this request');
  expect(resultText(again.result, "r2")).toBe("t24 ran");
});
