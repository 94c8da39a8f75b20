import { Type } from "typebox";
import { describe, expect, it } from "vitest";
import { deferMcpTools } from "../src/cli/tool-declaration.js";
import {
  ExtensionHost,
  MAX_DECLARED_DEFERRED,
  ScriptedModel,
  agentLoop,
  assistantMessage,
  createToolSearchTool,
  relevantMatches,
  declaredToolNames,
  defineTool,
  exposureRefusal,
  rankTools,
  textOf,
  tokenize,
  transcriptOf,
  userMessage,
} from "../src/index.js";
import type {
  AgentMessage,
  AgentTool,
  AssistantMessage,
  SessionEntry,
  ToolCall,
  ToolExposure,
  ToolResultMessage,
} from "../src/index.js";
import { finish, grammarViolations, shape } from "./support/agent-run.js";
import { call, says, scripted } from "./support/messages.js";

type AnyTool = AgentTool<any, any>;

const calls = (...list: ToolCall[]): AssistantMessage => assistantMessage(list, "toolUse");
/** For the tests of the loop's refusals: the script calls undeclared tools on purpose (no check of scripted calls). */
const sloppy = (turns: ConstructorParameters<typeof ScriptedModel>[0]) =>
  new ScriptedModel(turns, { chunkSize: 10_000, checkToolCalls: false });

/** A tool that answers with its own name, with the given exposure and description. */
function tool(
  name: string,
  exposure?: ToolExposure,
  description = `the ${name} tool`,
  parameters = Type.Object({}),
): AnyTool {
  return defineTool({
    name,
    label: name,
    description,
    parameters,
    ...(exposure !== undefined && { exposure }),
    execute: async () => ({ content: [{ type: "text", text: `${name} ran` }], details: undefined }),
  });
}

const declaredNames = (model: ScriptedModel, index: number): string[] =>
  (model.requests[index]?.tools ?? []).map((t) => t.name);
const resultText = (messages: readonly AgentMessage[], id: string): string => {
  const found = messages.find((m): m is ToolResultMessage => m.role === "toolResult" && m.toolCallId === id);
  if (found === undefined) throw new Error(`no result for ${id}`);
  return textOf(found);
};

describe("tool exposure", () => {
  it("Lab 15.1 · the declared set: direct tools, plus deferred tools named by a tool result's declaredTools", () => {
    expect(declaredToolNames([tool("a"), tool("b", "direct")], [])).toBeUndefined();
    const tools = [tool("a"), tool("b", "deferred"), tool("c", "deferred"), tool("d", "codemode"), tool("e", "hidden")];
    expect([...declaredToolNames(tools, [])!]).toEqual(["a"]);
    const declared: ToolResultMessage = {
      role: "toolResult",
      toolCallId: "x",
      toolName: "tool_search",
      content: [],
      isError: false,
      timestamp: 1,
      declaredTools: ["c", "d", "e", "zz"],
    };
    expect(
      [...declaredToolNames(tools, [userMessage("hi"), declared])!].sort(),
      "only deferred tools count: codemode, hidden and unknown names in declaredTools do not",
    ).toEqual(["a", "c"]);
  });

  it("Lab 15.1 · refusals say why: deferred, codemode-only, hidden, and what a script may reach", () => {
    const tools = [tool("a"), tool("b", "deferred"), tool("d", "codemode"), tool("e", "hidden"), tool("code")];
    const declared = new Set(["a", "code"]);
    expect(exposureRefusal(tools, declared, "a", "model")).toBeUndefined();
    expect(exposureRefusal(tools, undefined, "anything", "model")).toBeUndefined();
    expect(exposureRefusal(tools, declared, "b", "model")).toBe(
      'Tool "b" was not declared to you in this request: it is a deferred tool. Find it with tool_search first; ' +
        "it is declared to you from the next request on.",
    );
    expect(exposureRefusal(tools, declared, "d", "model")).toBe(
      'Tool "d" was not declared to you in this request: it can only be called from a script (the code tool), as tools.d(args).',
    );
    expect(exposureRefusal(tools, declared, "e", "model")).toBe('Tool "e" not found. Available tools: a, code.');
    for (const name of ["a", "b", "d"])
      expect(exposureRefusal(tools, declared, name, "script", "code")).toBeUndefined();
    expect(exposureRefusal(tools, declared, "e", "script", "code")).toBe(
      'Tool "e" is not callable from a script. Callable tools: a, b, d.',
    );
    expect(exposureRefusal(tools, declared, "code", "script", "code")).toBe(
      'Tool "code" is not callable from a script. Callable tools: a, b, d.',
    );
    // nothing declared, nothing callable: the lists say (none)
    const hidden = [tool("h", "hidden"), tool("code")];
    expect(exposureRefusal(hidden, new Set(), "x", "model")).toBe('Tool "x" not found. Available tools: (none).');
    expect(exposureRefusal(hidden, new Set(), "h", "script", "code")).toBe(
      'Tool "h" is not callable from a script. Callable tools: (none).',
    );
    // an unknown name from a script: the list still leaves hidden tools (and the calling tool) out
    expect(
      exposureRefusal(tools, declared, "zz", "script", "code"),
      "an unknown name from a script is answered with the callable tools: no hidden one, not the calling tool",
    ).toBe('Tool "zz" is not callable from a script. Callable tools: a, b, d.');
    // "Available tools" in the order of the declared set
    expect(exposureRefusal(tools, new Set(["code", "a"]), "zz", "model")).toBe(
      'Tool "zz" not found. Available tools: code, a.',
    );
  });

  it("Lab 15.1 · a tool is declared by a declaration only, never because the model called it", () => {
    const tools = [tool("a"), tool("b", "deferred"), tool("c", "deferred")];
    const refused: ToolResultMessage = {
      role: "toolResult",
      toolCallId: "x",
      toolName: "b",
      content: [{ type: "text", text: 'Tool "b" was not declared to you in this request: …' }],
      isError: true,
      timestamp: 1,
    };
    const transcript: AgentMessage[] = [userMessage("go"), calls(call("x", "b"), call("y", "c")), refused];
    expect(
      [...declaredToolNames(tools, transcript)!],
      "a call of the model declares nothing: only the declaredTools of a tool result or a compaction summary do",
    ).toEqual(["a"]);
  });

  it("Lab 15.1 · a tool an extension registers keeps its exposure: deferred, it is not declared and a call to it is refused", async () => {
    const host = new ExtensionHost({ cwd: process.cwd() });
    const ran: string[] = [];
    const loaded = await host.loadFactory(
      (api) =>
        api.registerTool({
          ...tool("ext_lookup", "deferred"),
          execute: async () => {
            ran.push("ext_lookup");
            return { content: [{ type: "text", text: "ran" }], details: undefined };
          },
        }),
      "lookup-extension",
      "user",
    );
    expect(loaded, host.warnings.map((w) => w.message).join("; ")).toBe(true);
    expect(
      host.tools.map((t) => [t.name, t.exposure]),
      "a tool an extension registers keeps its exposure",
    ).toEqual([["ext_lookup", "deferred"]]);
    const model = sloppy([calls(call("c1", "ext_lookup")), says("done")]);
    const { result } = await finish(
      agentLoop([userMessage("go")], { messages: [], tools: [tool("a"), ...host.tools] }, { model }),
    );
    expect(declaredNames(model, 0), "an extension's deferred tool is not declared").toEqual(["a"]);
    expect(ran, "tools ran that the request did not declare: such a call is refused, never run").toEqual([]);
    expect(resultText(result, "c1")).toContain('Tool "ext_lookup" was not declared to you in this request');
  });

  it("Lab 15.1 · the loop declares only direct tools and refuses a call to any other, without running it", async () => {
    const ran: string[] = [];
    const spy = (name: string, exposure: ToolExposure): AnyTool => ({
      ...tool(name, exposure),
      execute: async () => {
        ran.push(name);
        return { content: [{ type: "text", text: "ran" }], details: undefined };
      },
    });
    const model = sloppy([calls(call("c1", "a"), call("c2", "b"), call("c3", "d"), call("c4", "e")), says("done")]);
    const { events, result } = await finish(
      agentLoop(
        [userMessage("go")],
        { messages: [], tools: [tool("a"), spy("b", "deferred"), spy("d", "codemode"), spy("e", "hidden")] },
        { model },
      ),
    );
    expect(grammarViolations(events, result)).toEqual([]);
    expect(declaredNames(model, 0)).toEqual(["a"]);
    expect(declaredNames(model, 1)).toEqual(["a"]);
    expect(ran, "tools ran that the request did not declare: such a call is refused, never run").toEqual([]);
    expect(resultText(result, "c1")).toBe("a ran");
    expect(resultText(result, "c2")).toContain('Tool "b" was not declared to you in this request');
    expect(resultText(result, "c3")).toContain('Tool "d" was not declared to you in this request');
    expect(resultText(result, "c4")).toBe('Tool "e" not found. Available tools: a.');
    for (const id of ["c2", "c3", "c4"]) {
      expect(result.find((m) => m.role === "toolResult" && m.toolCallId === id)).toMatchObject({ isError: true });
    }
  });
});

describe("declaring tools", () => {
  const declaring = (names: string[]): AnyTool => ({
    ...tool("declare"),
    execute: async () => ({ content: [{ type: "text", text: "ok" }], details: undefined, declareTools: names }),
  });

  it("Lab 15.2 · a result's declareTools is recorded on its message as declaredTools, and declared next request", async () => {
    const model = scripted([calls(call("c1", "declare")), calls(call("c2", "b")), says("done")]);
    const tools = [declaring(["b", "b", "a", "d", "nope"]), tool("a"), tool("b", "deferred"), tool("d", "codemode")];
    const { events, result } = await finish(agentLoop([userMessage("go")], { messages: [], tools }, { model }));
    expect(shape(events)).toEqual([
      "agent_start",
      "turn_start",
      "message_start:user",
      "message_end:user",
      "message_start:assistant",
      "message_update:toolcall_delta",
      "message_update:toolcall_end",
      "message_end:assistant",
      "tool_execution_start:c1",
      "tool_execution_end:c1",
      "message_start:toolResult",
      "message_end:toolResult",
      "turn_end",
      "turn_start",
      "message_start:assistant",
      "message_update:toolcall_delta",
      "message_update:toolcall_end",
      "message_end:assistant",
      "tool_execution_start:c2",
      "tool_execution_end:c2",
      "message_start:toolResult",
      "message_end:toolResult",
      "turn_end",
      "turn_start",
      "message_start:assistant",
      "message_update:text_delta",
      "message_end:assistant",
      "turn_end",
      "agent_end",
    ]);
    const first = result.find((m): m is ToolResultMessage => m.role === "toolResult" && m.toolCallId === "c1");
    expect(first?.declaredTools, "declaredTools holds each newly declared deferred tool once").toEqual(["b"]);
    const ended = events.find((e) => e.type === "message_end" && e.message === first);
    expect(ended).toBeDefined();
    expect(declaredNames(model, 0)).toEqual(["declare", "a"]);
    expect(declaredNames(model, 1)).toEqual(["declare", "a", "b"]);
    expect(resultText(result, "c2")).toBe("b ran");
    expect(model.requests[1]!.messages.map((m) => m.role)).toEqual(["user", "assistant", "toolResult"]);
    expect(grammarViolations(events, result)).toEqual([]);
  });

  it("Lab 15.2 · nothing new, nothing recorded; a resumed transcript declares the same tools", async () => {
    const first = scripted([calls(call("c1", "declare")), calls(call("c2", "declare")), says("done")]);
    const tools = [declaring(["b"]), tool("b", "deferred"), tool("c", "deferred")];
    const run1 = await finish(agentLoop([userMessage("go")], { messages: [], tools }, { model: first }));
    const records = (messages: readonly AgentMessage[]) =>
      messages.flatMap((m) => (m.role === "toolResult" && m.declaredTools !== undefined ? [m.declaredTools] : []));
    expect(records(run1.result), "a tool already declared is not recorded again").toEqual([["b"]]);
    const resumed = scripted([calls(call("c3", "b")), says("done")]);
    const run2 = await finish(
      agentLoop([userMessage("again")], { messages: run1.result, tools: tools.slice(1) }, { model: resumed }),
    );
    expect(declaredNames(resumed, 0)).toEqual(["b"]);
    expect(resultText(run2.result, "c3")).toBe("b ran");
    // an error result declares nothing
    const failing: AnyTool = {
      ...tool("declare"),
      execute: async () => ({
        content: [{ type: "text", text: "no" }],
        details: undefined,
        isError: true,
        declareTools: ["b"],
      }),
    };
    const model = scripted([calls(call("c1", "declare")), says("done")]);
    const run3 = await finish(
      agentLoop([userMessage("go")], { messages: [], tools: [failing, tool("b", "deferred")] }, { model }),
    );
    expect(records(run3.result), "an error result declares nothing").toEqual([]);
    expect(declaredNames(model, 1)).toEqual(["declare"]);
  });

  it("Lab 15.2 · declaredTools lists the new names in the order of the tools, not of declareTools", async () => {
    const model = scripted([calls(call("c1", "declare")), says("done")]);
    const tools = [declaring(["c", "b"]), tool("b", "deferred"), tool("c", "deferred")];
    const { result } = await finish(agentLoop([userMessage("go")], { messages: [], tools }, { model }));
    const first = result.find((m): m is ToolResultMessage => m.role === "toolResult" && m.toolCallId === "c1");
    expect(first?.declaredTools, "newlyDeclared lists the names in the order of context.tools").toEqual(["b", "c"]);
  });

  it("Lab 15.2 · at most MAX_DECLARED_DEFERRED (20) deferred tools stay declared: the least recently found or called drop out, are refused, and a search declares them again; a resumed run declares the same", async () => {
    expect(MAX_DECLARED_DEFERRED).toBe(20);
    const names = (from: number, to: number) =>
      Array.from({ length: to - from }, (_, i) => `t${String(from + i).padStart(2, "0")}`);
    const many = names(0, 30).map((name) => tool(name, "deferred"));
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
    const tools = [declare, ...many];
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
    expect(declaredNames(model, 3)).toEqual(["declare", ...names(0, 20)]);
    const afterC4 = ["declare", "t00", ...names(6, 25)];
    expect(
      declaredNames(model, 4),
      "more than MAX_DECLARED_DEFERRED (20) deferred tools declared: the least recently found or called must drop out",
    ).toEqual(afterC4);
    expect(resultText(run.result, "c5")).toContain('Tool "t01" was not declared to you in this request');
    expect(resultText(run.result, "c6")).toBe("t00 ran");
    const last = ["declare", "t00", "t01", ...names(7, 25)];
    expect(declaredNames(model, 6)).toEqual(last);
    expect(resultText(run.result, "c8")).toBe("t01 ran");
    expect(declaredNames(model, 7)).toEqual(last);
    for (let i = 0; i < model.requests.length; i++)
      expect(declaredNames(model, i).length).toBeLessThanOrEqual(1 + MAX_DECLARED_DEFERRED);

    // resumed from the transcript: the same window, the same refusals
    const resumed = sloppy([calls(call("r1", "t06"), call("r2", "t24")), says("done")]);
    const again = await finish(agentLoop([userMessage("again")], { messages: run.result, tools }, { model: resumed }));
    expect(declaredNames(resumed, 0)).toEqual(last);
    expect(resultText(again.result, "r1")).toContain('Tool "t06" was not declared to you in this request');
    expect(resultText(again.result, "r2")).toBe("t24 ran");
  });

  it("Lab 15.2 · a compaction keeps found tools declared: its summary carries what the condensed part declared", async () => {
    // A session path: "b" found before a first compaction, "c" after it, then a second compaction
    // that condenses both; only the last exchange is kept verbatim.
    const tools = [declaring(["b"]), tool("b", "deferred"), tool("c", "deferred"), tool("d", "deferred")];
    const run1 = await finish(
      agentLoop(
        [userMessage("find b")],
        { messages: [], tools: [declaring(["b"]), ...tools.slice(1)] },
        {
          model: scripted([calls(call("c1", "declare")), says("found b")]),
        },
      ),
    );
    const run2 = await finish(
      agentLoop(
        [userMessage("find c")],
        { messages: run1.result, tools: [declaring(["c"]), ...tools.slice(1)] },
        {
          model: scripted([calls(call("c2", "declare")), says("found c")]),
        },
      ),
    );
    let at = 0;
    const entry = (fields: Record<string, unknown>): SessionEntry =>
      ({
        id: `e${++at}`,
        parentId: at === 1 ? null : `e${at - 1}`,
        timestamp: "2026-01-01T00:00:00Z",
        ...fields,
      }) as SessionEntry;
    const path: SessionEntry[] = [];
    const messages = (list: readonly AgentMessage[]) => {
      for (const message of list) path.push(entry({ type: "message", message }));
    };
    messages(run1.result);
    path.push(
      entry({
        type: "compaction",
        summary: "b was found",
        firstKeptEntryId: `e${at + 1}`,
        tokensBefore: 1,
        tokensAfter: 1,
      }),
    );
    messages(run2.result);
    messages([userMessage("and now?"), says("ready")]);
    path.push(
      entry({
        type: "compaction",
        summary: "b and c were found",
        firstKeptEntryId: `e${at - 1}`,
        tokensBefore: 1,
        tokensAfter: 1,
      }),
    );
    const transcript = transcriptOf(path);
    expect(transcript.messages.map((m) => m.role)).toEqual(["user", "user", "assistant"]);
    expect(transcript.messages[0]).toMatchObject({ role: "user", declaredTools: ["b", "c"] });
    // The next run declares what was found before the compaction, and no more.
    const after = scripted([calls(call("c3", "b"), call("c4", "c")), says("done")]);
    const run3 = await finish(
      agentLoop([userMessage("use them")], { messages: transcript.messages, tools: tools.slice(1) }, { model: after }),
    );
    expect(declaredNames(after, 0)).toEqual(["b", "c"]);
    expect([resultText(run3.result, "c3"), resultText(run3.result, "c4")]).toEqual(["b ran", "c ran"]);
    // Without a declaration in the condensed part, the summary carries none.
    const plain = transcriptOf([
      entry({ type: "message", message: userMessage("hi") }),
      entry({ type: "compaction", summary: "hi", firstKeptEntryId: `e${at + 1}`, tokensBefore: 1, tokensAfter: 1 }),
    ]);
    expect(plain.messages[0]).not.toHaveProperty("declaredTools");
  });
});

describe("ranking", () => {
  it("Lab 15.3 · tokenize splits names and prose into lowercase words", () => {
    expect(
      tokenize("readFile list_dir GitHub-PR v2.0 Größe issues process bus"),
      "split on anything but Unicode letters and digits (\\p{L}\\p{N}): Größe stays one word",
    ).toEqual(["read", "file", "list", "dir", "git", "hub", "pr", "v2", "0", "größe", "issue", "process", "bus"]);
    expect(tokenize("  ")).toEqual([]);
  });

  const catalogue = [
    tool(
      "github_create_issue",
      "deferred",
      "Create a new issue in a GitHub repository.",
      Type.Object({ title: Type.String(), body: Type.String() }),
    ),
    tool(
      "github_list_issues",
      "deferred",
      "List the issues of a GitHub repository, open or closed.",
      Type.Object({ state: Type.String() }),
    ),
    tool(
      "github_create_pull_request",
      "deferred",
      "Open a pull request from a branch.",
      Type.Object({ head: Type.String(), base: Type.String() }),
    ),
    tool(
      "slack_post_message",
      "deferred",
      "Post a message to a Slack channel.",
      Type.Object({ channel: Type.String(), text: Type.String() }),
    ),
    tool(
      "weather_forecast",
      "deferred",
      "The weather forecast for a city, by day.",
      Type.Object({ city: Type.String(), days: Type.Number() }),
    ),
    tool("fs_read_file", "deferred", "Read a text file from disk.", Type.Object({ path: Type.String() })),
  ];

  it("Lab 15.3 · rankTools: BM25 over names, descriptions and parameter names, best first", () => {
    expect(
      rankTools(catalogue, "create issue").map((m) => m.name),
      '"create issue" finds github_list_issues only where tokenize drops the plural s of "issues"',
    ).toEqual(["github_create_issue", "github_list_issues", "github_create_pull_request"]);
    expect(rankTools(catalogue, "weather in Paris")[0]?.name).toBe("weather_forecast");
    expect(rankTools(catalogue, "channel").map((m) => m.name)).toEqual(["slack_post_message"]);
    expect(rankTools(catalogue, "city").map((m) => m.name)).toEqual(["weather_forecast"]);
    expect(rankTools(catalogue, "github", 2).map((m) => m.name)).toHaveLength(2);
    expect(rankTools(catalogue, "kubernetes")).toEqual([]);
    expect(rankTools(catalogue, "")).toEqual([]);
    const scores = rankTools(catalogue, "create issue").map((m) => m.score);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
    expect(scores.every((s) => s > 0)).toBe(true);
  });

  it("Lab 15.3 · a rare word outweighs a common one; ties go by name", () => {
    // "github" is in three tools, "pull" in one: "pull github" ranks the pull request tool first
    expect(rankTools(catalogue, "github pull")[0]?.name).toBe("github_create_pull_request");
    const twins = ["c_twin", "b_twin", "a_twin"].map((name) => tool(name, "deferred", "same words"));
    expect(
      rankTools(twins, "same").map((m) => m.name),
      "ties go by name",
    ).toEqual(["a_twin", "b_twin", "c_twin"]);
  });

  it('Lab 15.3 · a query word counts once: "red red blue" scores as "red blue"', () => {
    const docs = [tool("alpha", "deferred", "red red blue"), tool("beta", "deferred", "blue")];
    expect(rankTools(docs, "red red blue"), "the query's words are counted once (de-duplicated)").toEqual(
      rankTools(docs, "red blue"),
    );
  });

  it("Lab 15.3 · the scores are BM25's with k1 1.2 and b 0.75, as the formula in the hint computes them", () => {
    // alpha: words alpha alpha red red blue (5); beta: beta beta blue (3); the average length is 4
    const docs = [tool("alpha", "deferred", "red red blue"), tool("beta", "deferred", "blue")];
    const bm25 = (idf: number, f: number, length: number) => (idf * f * 2.2) / (f + 1.2 * (0.25 + (0.75 * length) / 4));
    const red = rankTools(docs, "red");
    expect(red.map((m) => m.name)).toEqual(["alpha"]);
    expect(red[0]!.score).toBeCloseTo(bm25(Math.log(1 + 1.5 / 1.5), 2, 5), 10);
    const blue = rankTools(docs, "blue");
    expect(blue.map((m) => m.name)).toEqual(["beta", "alpha"]); // the shorter document first
    expect(blue[0]!.score).toBeCloseTo(bm25(Math.log(1 + 0.5 / 2.5), 1, 3), 10);
    expect(blue[1]!.score).toBeCloseTo(bm25(Math.log(1 + 0.5 / 2.5), 1, 5), 10);
  });
});

describe("tool_search", () => {
  const deferred = [
    tool("github_create_issue", "deferred", "Create a new issue in a GitHub repository."),
    tool("weather_forecast", "deferred", "The weather forecast for a city."),
    tool("slack_post_message", "deferred", "Post a message to a Slack channel."),
  ];

  it("Lab 15.4 · the model finds a deferred tool and calls it on its next turn", async () => {
    const search = createToolSearchTool(deferred);
    expect(search.description).toContain("Searches 3 more tools that are not declared to you yet");
    const model = sloppy([
      calls(call("c1", "weather_forecast")),
      calls(call("c2", "tool_search", { query: "weather forecast" })),
      calls(call("c3", "weather_forecast")),
      says("sunny"),
    ]);
    const { events, result } = await finish(
      agentLoop([userMessage("weather?")], { messages: [], tools: [search, ...deferred] }, { model }),
    );
    expect(grammarViolations(events, result)).toEqual([]);
    expect(resultText(result, "c1")).toContain("was not declared to you in this request");
    expect(resultText(result, "c2")).toBe(
      "Declared from your next request on:\n- weather_forecast: The weather forecast for a city.",
    );
    expect(resultText(result, "c3")).toBe("weather_forecast ran");
    expect(declaredNames(model, 1)).toEqual(["tool_search"]);
    expect(declaredNames(model, 2)).toEqual(["tool_search", "weather_forecast"]);
    expect(result.flatMap((m) => (m.role === "toolResult" && m.declaredTools ? [m.declaredTools] : []))).toEqual([
      ["weather_forecast"],
    ]);
  });

  it("Lab 15.4 · tool_search ranks the deferred tools only, and shows the first line of a description", async () => {
    const now = tool("weather_now", undefined, "The weather now in a city.");
    const multi = tool("weather_forecast", "deferred", "The weather forecast for a city.\nDays: 1 to 7; hours in UTC.");
    const all = [now, multi, ...deferred.filter((t) => t.name !== "weather_forecast")];
    // ranked over every tool, the direct one would come first
    expect(rankTools(all, "weather now")[0]?.name).toBe("weather_now");
    const found = await createToolSearchTool(all).execute("s", { query: "weather now" });
    expect(found.declareTools, "tool_search ranks the deferred tools only").toEqual(["weather_forecast"]);
    expect((found.content[0] as { text: string }).text, "only the first line of a description is shown").toBe(
      "Declared from your next request on:\n- weather_forecast: The weather forecast for a city.",
    );
  });

  it("Lab 15.4 · maxResults above 5 is honoured; details.matches holds the matches declared, with their scores", async () => {
    const twins = Array.from({ length: 8 }, (_, i) => tool(`twin_${i}`, "deferred", "same words"));
    const found = await createToolSearchTool(twins, { maxResults: 8 }).execute("m", { query: "same" });
    expect(found.declareTools, "maxResults above 5 is honoured: rankTools is asked for maxResults").toEqual(
      twins.map((t) => t.name),
    );
    expect(found.details.query).toBe("same");
    expect(
      found.details.matches.map((m) => m.name),
      "details.matches: the relevant matches, best first, as declared",
    ).toEqual(found.declareTools);
    expect(found.details.matches.every((m) => m.score > 0)).toBe(true);
  });

  it("Lab 15.4 · an MCP server's exposure is kept; above 20 tools of no exposure are deferred behind a tool_search that finds them", async () => {
    const mcp = [
      ...Array.from({ length: 21 }, (_, i) => tool(`mcp__s__t${i}`, undefined, `tool number ${i}`)),
      tool("mcp__p__pinned", "direct", "always here"),
      tool("mcp__p__secret", "hidden", "the application's own"),
    ];
    const { tools, note } = deferMcpTools(mcp, { servers: ["s", "p"] });
    expect(tools[0]!.name).toBe("tool_search");
    expect(tools.slice(1).map((t) => [t.name, t.exposure ?? "direct"])).toEqual([
      ...mcp.slice(0, 21).map((t) => [t.name, "deferred"]),
      ["mcp__p__pinned", "direct"],
      ["mcp__p__secret", "hidden"],
    ]);
    expect(note).toContain("21 MCP tools (more than 20) are deferred");
    const found = await tools[0]!.execute("q", { query: "number 7 t7" });
    expect(found.declareTools).toEqual(["mcp__s__t7"]);
    expect(tools[0]!.description).toContain("Searches 21 more tools (the MCP servers s, p)");
  });

  it("Lab 15.4 · only matches near the best are declared: a weak match on one common word is not", async () => {
    const search = createToolSearchTool(deferred);
    const query = "forecast the weather of a city then post";
    const found = await search.execute("z", { query });
    // slack_post_message (post) and github_create_issue (a) match too, each far below the best
    expect(found.declareTools, "only matches near the best (relevantMatches) are declared").toEqual([
      "weather_forecast",
    ]);
    expect(
      relevantMatches([
        { name: "a", score: 4 },
        { name: "b", score: 2 },
        { name: "c", score: 1.9 },
      ]),
    ).toEqual([
      { name: "a", score: 4 },
      { name: "b", score: 2 },
    ]);
  });

  it("Lab 15.4 · no match: the result says so and names some deferred tools; maxResults bounds a search", async () => {
    const search = createToolSearchTool(deferred, { maxResults: 1 });
    const none = await search.execute("x", { query: "kubernetes" });
    expect(
      textOf({
        role: "toolResult",
        toolCallId: "x",
        toolName: "tool_search",
        content: none.content,
        isError: false,
        timestamp: 0,
      }),
    ).toBe(
      'No deferred tool matches "kubernetes". Try other words; some deferred tools: github_create_issue, weather_forecast, slack_post_message.',
    );
    expect(none.declareTools).toBeUndefined();
    expect(none.details).toEqual({ query: "kubernetes", matches: [] });
    // more than 20 deferred tools: 20 are named, and how many there are in all
    const many = Array.from({ length: 25 }, (_, i) => tool(`t${String(i).padStart(2, "0")}`, "deferred", "a tool"));
    const crowded = await createToolSearchTool(many).execute("z", { query: "kubernetes" });
    expect((crowded.content[0] as { text: string }).text).toBe(
      `No deferred tool matches "kubernetes". Try other words; some deferred tools: ${many
        .slice(0, 20)
        .map((t) => t.name)
        .join(", ")}, … (25 in all).`,
    );
    const one = await search.execute("y", { query: "post create" });
    expect(one.declareTools).toHaveLength(1);
    expect(one.details).toEqual({
      query: "post create",
      matches: [expect.objectContaining({ name: one.declareTools![0] })],
    });
    expect(() => createToolSearchTool(deferred, { maxResults: 0 })).toThrow(
      "createToolSearchTool: maxResults must be a positive integer, got 0.",
    );
  });
});
