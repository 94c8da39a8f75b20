/**
 * `AgentLoopConfig.currentTools` (issue 53): tools that join or leave while a run goes on (an MCP
 * server that became ready) are the model's from its next request, and a tool that waited for
 * others to join can declare them. The CLI's print runs rely on it (cli.mcp.terminal.test.ts).
 */
import { Type } from "typebox";
import { expect, it } from "vitest";
import { Agent, ScriptedModel, agentLoop, assistantMessage, defineTool, textOf, userMessage } from "../src/index.js";
import type { AgentTool, ToolCall, ToolResultMessage } from "../src/index.js";
import { finish, grammarViolations } from "./support/agent-run.js";
import { call, says, scripted } from "./support/messages.js";

type AnyTool = AgentTool<any, any>;

const calls = (...list: ToolCall[]) => assistantMessage(list, "toolUse");

function tool(name: string, run: () => void = () => {}, exposure?: "deferred"): AnyTool {
  return defineTool({
    name,
    label: name,
    description: `the ${name} tool`,
    parameters: Type.Object({}),
    ...(exposure !== undefined && { exposure }),
    execute: async () => {
      run();
      return { content: [{ type: "text", text: `${name} ran` }], details: undefined };
    },
  });
}

const declared = (model: ReturnType<typeof scripted>, index: number): string[] =>
  (model.requests[index]?.tools ?? []).map((t) => t.name);

it("a tool that joins during a turn is declared from the next request on, and its call runs", async () => {
  let tools: AnyTool[] = [];
  const late = tool("late");
  tools = [tool("first", () => (tools = [...tools, late]))];
  const model = scripted([calls(call("c1", "first")), calls(call("c2", "late")), says("done")]);
  const { events, result } = await finish(
    agentLoop([userMessage("go")], { messages: [], tools }, { model, currentTools: () => tools }),
  );
  expect([declared(model, 0), declared(model, 1), declared(model, 2)]).toEqual([
    ["first"],
    ["first", "late"],
    ["first", "late"],
  ]);
  const answers = result.filter((m): m is ToolResultMessage => m.role === "toolResult").map(textOf);
  expect(answers).toEqual(["first ran", "late ran"]);
  expect(grammarViolations(events, result)).toEqual([]);
});

it("a deferred tool that joins while a call runs can be declared by that call's result", async () => {
  const found = tool("found", () => {}, "deferred");
  let tools: AnyTool[] = [];
  const search: AnyTool = {
    ...tool("search"),
    execute: async () => {
      tools = [...tools, found]; // the server arrived while the search waited
      return { content: [{ type: "text", text: "found" }], details: undefined, declareTools: ["found"] };
    },
  };
  tools = [search];
  const model = scripted([calls(call("c1", "search")), calls(call("c2", "found")), says("done")]);
  const { result } = await finish(
    agentLoop([userMessage("go")], { messages: [], tools }, { model, currentTools: () => tools }),
  );
  const first = result.find((m): m is ToolResultMessage => m.role === "toolResult" && m.toolCallId === "c1");
  expect(first?.declaredTools).toEqual(["found"]);
  expect(declared(model, 1)).toEqual(["search", "found"]);
  expect(textOf(result.find((m): m is ToolResultMessage => m.role === "toolResult" && m.toolCallId === "c2")!)).toBe(
    "found ran",
  );
});

it("without currentTools the run keeps the tools it started with", async () => {
  const tools: AnyTool[] = [];
  tools.push(tool("first", () => tools.push(tool("late"))));
  const model = scripted([calls(call("c1", "first")), says("done")]);
  await finish(agentLoop([userMessage("go")], { messages: [], tools: [...tools] }, { model }));
  expect(declared(model, 1)).toEqual(["first"]);
});

it("a currentTools that throws or gives no array ends the run cleanly, saying so; one that is not a function is refused at the start", async () => {
  for (const [hook, said] of [
    [
      () => {
        throw new Error("boom");
      },
      "currentTools failed: boom",
    ],
    [() => "nope", "currentTools failed: it returned string, not an array of tools"],
  ] as const) {
    const model = scripted([says("never")]);
    const { events, result } = await finish(
      agentLoop([userMessage("go")], { messages: [], tools: [] }, { model, currentTools: hook as () => AnyTool[] }),
    );
    const last = result.at(-1);
    expect(last?.role === "assistant" && last.errorMessage).toBe(said);
    expect(model.requests).toEqual([]);
    expect(grammarViolations(events, result)).toEqual([]);
  }
  expect(() =>
    agentLoop([userMessage("go")], { messages: [], tools: [] }, { model: scripted([]), currentTools: [] as never }),
  ).toThrow("agentLoop: currentTools must be a function that returns the run's tools, got object.");
});

it("an Agent given currentTools runs with the tools it gives from the run's first request", async () => {
  const tools: AnyTool[] = [tool("now")];
  const model = scripted([says("done")]);
  const agent = new Agent({ initialState: { model, tools: [] }, currentTools: () => tools });
  await agent.prompt("go");
  expect(declared(model, 0)).toEqual(["now"]);
});

it("a listener that awaits the model's message lets a tool join before its calls run", async () => {
  let tools: AnyTool[] = [];
  const model = new ScriptedModel([calls(call("c1", "late")), says("done")], { checkToolCalls: false });
  const agent = new Agent({ initialState: { model, tools: [] }, currentTools: () => tools });
  agent.subscribe(async (event) => {
    if (event.type !== "message_end" || event.message.role !== "assistant" || tools.length > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 10)); // the server arrives meanwhile
    tools = [tool("late")];
  });
  await agent.prompt("go");
  const answer = agent.state.messages.find((m): m is ToolResultMessage => m.role === "toolResult");
  expect(answer === undefined ? undefined : textOf(answer)).toBe("late ran");
});
