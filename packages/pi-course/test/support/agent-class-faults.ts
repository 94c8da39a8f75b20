/**
 * Property-based fault injection for the stateful `Agent` (chapter 09), beside the loop's own
 * suite (`agent-faults.ts`). A scenario is a random life of one agent: scripted model turns
 * (text, tool batches with ok / slow / throwing / updating / terminating / unknown tools, error
 * turns), and a random schedule of prompts, continues, steers, follow-ups and aborts, each
 * arriving either from outside after a random delay or from inside a listener at a random event,
 * plus a listener that throws at a random event. `runAgentScenario` lives it and returns every
 * invariant it broke (none, when the agent is right).
 */
import fc from "fast-check";
import { Type } from "typebox";
import { Agent, AgentListenerError, ScriptedModel, assistantMessage, userMessage } from "../../src/index.js";
import type {
  AgentEvent,
  AgentMessage,
  AgentTool,
  AssistantContent,
  AssistantMessage,
  Context,
  Model,
  StreamOptions,
  ToolCall,
} from "../../src/index.js";
import { grammarViolations } from "./agent-run.js";

const TOOLS = ["ok", "slow", "throw", "update", "terminate", "unknown"] as const;
const ACTIONS = ["prompt", "continue", "steer", "followUp", "abort", "chain"] as const;
type Action = (typeof ACTIONS)[number];

export type AgentTurnSpec =
  | { kind: "text"; text: string }
  | { kind: "tools"; tools: (typeof TOOLS)[number][] }
  | { kind: "error" };

export interface AgentScenario {
  turns: AgentTurnSpec[];
  /** Done by the driver in order, each after `delay` macrotasks. */
  outside: { action: Action; delay: number }[];
  /** Done by a listener when it receives event #`at` (counted over the agent's whole life). */
  inside: { action: Action; at: number }[];
  /** A listener throws (or rejects) when it receives event #`at`. */
  listenerThrow: { at: number; async: boolean } | null;
  /** The first listener awaits a macrotask on every event (back-pressure). */
  slowListener: boolean;
  steeringMode: "one-at-a-time" | "all";
  followUpMode: "one-at-a-time" | "all";
  maxTurns: number;
}

const turnSpec: fc.Arbitrary<AgentTurnSpec> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("text" as const), text: fc.string({ maxLength: 6 }) }) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant("tools" as const),
      tools: fc.array(fc.constantFrom(...TOOLS), { minLength: 1, maxLength: 3 }),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: "error" as const }) },
);

export const agentScenarioArbitrary: fc.Arbitrary<AgentScenario> = fc.record({
  turns: fc.array(turnSpec, { maxLength: 14 }),
  outside: fc.array(fc.record({ action: fc.constantFrom(...ACTIONS), delay: fc.nat({ max: 12 }) }), {
    minLength: 1,
    maxLength: 8,
  }),
  inside: fc.array(fc.record({ action: fc.constantFrom(...ACTIONS), at: fc.nat({ max: 60 }) }), { maxLength: 4 }),
  listenerThrow: fc.oneof(
    { weight: 3, arbitrary: fc.constant(null) },
    { weight: 2, arbitrary: fc.record({ at: fc.nat({ max: 60 }), async: fc.boolean() }) },
  ),
  slowListener: fc.boolean(),
  steeringMode: fc.constantFrom("one-at-a-time" as const, "all" as const),
  followUpMode: fc.constantFrom("one-at-a-time" as const, "all" as const),
  maxTurns: fc.integer({ min: 1, max: 6 }),
});

const macrotask = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
const result = (text: string, terminate = false) => ({
  content: [{ type: "text" as const, text }],
  details: undefined,
  ...(terminate && { terminate }),
});

function toolsOf(): AgentTool<any, any>[] {
  const make = (name: string, execute: AgentTool<any, any>["execute"]): AgentTool<any, any> => ({
    name,
    label: name,
    description: name,
    parameters: Type.Object({}),
    execute,
  });
  return [
    make("ok", async () => result("ok")),
    make("slow", async (_id, _args, signal) => {
      for (let i = 0; i < 3; i++) {
        if (signal?.aborted) throw new Error("aborted");
        await macrotask();
      }
      return result("slow");
    }),
    make("throw", async () => {
      throw new Error("tool failed");
    }),
    make("update", async (_id, _args, _signal, onUpdate) => {
      onUpdate?.(result("half"));
      void macrotask().then(() => onUpdate?.(result("late"))); // after the end: must go nowhere
      return result("done");
    }),
    make("terminate", async () => result("bye", true)),
  ];
}

function scriptOf(
  turns: readonly AgentTurnSpec[],
): AssistantMessage[] | { stopReason: "error"; errorMessage: string }[] {
  return turns.map((turn, n) => {
    if (turn.kind === "text") return assistantMessage([{ type: "text", text: turn.text }], "stop");
    if (turn.kind === "error") return { stopReason: "error" as const, errorMessage: "scripted failure" };
    const calls: AssistantContent[] = turn.tools.map(
      (tool, k): ToolCall => ({
        type: "toolCall",
        id: `t${n}c${k}`,
        name: tool === "unknown" ? "nope" : tool,
        arguments: {},
      }),
    );
    return assistantMessage(calls, "toolUse");
  }) as AssistantMessage[];
}

/** Wraps a model to count calls made with an already aborted signal. */
function watched(model: Model, afterAbort: { count: number }): Model {
  return {
    provider: model.provider,
    id: model.id,
    stream(context: Context, options?: StreamOptions) {
      if (options?.signal?.aborted) afterAbort.count++;
      return model.stream(context, options);
    },
  };
}

/** Lives one scenario; returns the invariants it broke (empty: all held). */
export async function runAgentScenario(scenario: AgentScenario, deadlineMs = 3000): Promise<string[]> {
  const problems: string[] = [];
  const afterAbort = { count: 0 };
  const model = watched(new ScriptedModel(scriptOf(scenario.turns), { chunkSize: 4 }), afterAbort);
  const agent = new Agent({
    initialState: { systemPrompt: "sys", model, tools: toolsOf() },
    steeringMode: scenario.steeringMode,
    followUpMode: scenario.followUpMode,
    maxTurns: scenario.maxTurns,
  });
  const queued = new Set<AgentMessage>();
  let said = 0;
  const settled: Promise<void>[] = [];
  let listenerErrors = 0;
  let site: string | undefined;
  // a construction site (practice folder) ends the scenario at once instead of at the deadline
  let sited!: () => void;
  const siteSeen = new Promise<void>((resolve) => (sited = resolve));

  /** Starts a prompt/continue and checks how it settles: busy only when it was refused at once. */
  const start = (what: "prompt" | "continue"): void => {
    const busy = agent.state.isStreaming;
    const promise = what === "prompt" ? agent.prompt(`prompt ${said++}`) : agent.continue();
    settled.push(
      promise.then(
        () => {
          if (busy) problems.push(`${what}() while busy resolved`);
        },
        (error: Error) => {
          if (String(error.message).includes("(not implemented yet)")) {
            site ??= error.message;
            sited();
          } else if (error instanceof AgentListenerError) listenerErrors++;
          else if (/busy/.test(error.message)) {
            if (!busy) problems.push(`${what}() refused as busy while idle: ${error.message}`);
          } else if (!(what === "continue" && /^Agent\.continue/.test(error.message))) {
            problems.push(`${what}() rejected: ${error.message}`);
          }
        },
      ),
    );
  };
  const act = (action: Action): void => {
    if (action === "prompt" || action === "continue") return start(action);
    if (action === "abort") return agent.abort();
    if (action === "chain") {
      // the pattern for "prompt again when this run is over", safe inside a listener
      settled.push(agent.waitForIdle().then(() => start("prompt")));
      return;
    }
    const message = userMessage(`${action} ${said++}`);
    queued.add(message);
    if (action === "steer") agent.steer(message);
    else agent.followUp(message);
  };

  // listeners: a (maybe slow, maybe throwing) actor first, then a recorder
  let index = 0;
  let throws = 0;
  agent.subscribe((_event) => {
    const at = index++;
    for (const inside of scenario.inside) if (inside.at === at) act(inside.action);
    const fails = scenario.listenerThrow?.at === at;
    if (fails) throws++;
    if (fails && !scenario.listenerThrow!.async) throw new Error("listener failed (injected)");
    if (!scenario.slowListener && !fails) return;
    return (async () => {
      if (scenario.slowListener) await macrotask();
      if (fails) throw new Error("listener failed (injected, async)");
    })();
  });
  const runs: AgentEvent[][] = [];
  let open = false;
  agent.subscribe((event) => {
    if (event.type === "agent_start") {
      if (open) problems.push("agent_start while a run is open: runs overlap");
      open = true;
      runs.push([]);
    }
    runs.at(-1)?.push(event);
    if (event.type === "agent_end") open = false;
  });

  const live = (async () => {
    for (const { action, delay } of scenario.outside) {
      for (let i = 0; i < delay; i++) await macrotask();
      act(action);
    }
    // settle everything, including prompts chained from inside listeners
    for (let seen = -1; seen !== settled.length || agent.state.isStreaming; ) {
      seen = settled.length;
      await Promise.all(settled);
      await agent.waitForIdle();
    }
    for (let i = 0; i < 3; i++) await macrotask(); // late tool updates would arrive now
  })();
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await Promise.race([
      live,
      siteSeen,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`the agent did not become idle within ${deadlineMs} ms`)),
          deadlineMs,
        );
      }),
    ]);
  } catch (error) {
    // a construction site (practice folder) says more than the hang it causes
    return [site ?? (error instanceof Error ? error.message : String(error))];
  } finally {
    clearTimeout(timer);
  }
  if (site !== undefined) return [site];
  problems.push(...invariantViolations(agent, runs, queued));
  if (afterAbort.count > 0) problems.push(`${afterAbort.count} model call(s) with an aborted signal`);
  if (listenerErrors !== throws) {
    problems.push(`${listenerErrors} AgentListenerError rejection(s) for ${throws} injected listener throw(s)`);
  }
  return problems;
}

/** What must hold once the agent is idle. */
function invariantViolations(agent: Agent, runs: AgentEvent[][], queued: ReadonlySet<AgentMessage>): string[] {
  const problems: string[] = [];
  const state = agent.state;
  runs.forEach((events, k) => problems.push(...grammarViolations(events).map((p) => `run ${k}: ${p}`)));
  if (state.isStreaming) problems.push("isStreaming is still true");
  if (state.streamingMessage !== undefined) problems.push("streamingMessage is still set");
  if (state.pendingToolCalls.size > 0)
    problems.push(`pendingToolCalls not empty: ${[...state.pendingToolCalls].join(", ")}`);
  // the transcript is exactly the concatenation of every run's new messages
  const concatenated = runs.flatMap((events) => {
    const end = events.at(-1);
    return end?.type === "agent_end" ? end.messages : [];
  });
  const same = concatenated.length === state.messages.length && concatenated.every((m, k) => m === state.messages[k]);
  if (!same)
    problems.push(
      `state.messages (${state.messages.length}) is not the runs' messages concatenated (${concatenated.length})`,
    );
  if (new Set(state.messages).size !== state.messages.length) problems.push("a message is twice in the transcript");
  // every tool call of the transcript has exactly one result, right after its message
  state.messages.forEach((m, k) => {
    if (m.role !== "assistant" || m.stopReason === "error" || m.stopReason === "aborted") return;
    const ids = m.content.filter((b): b is ToolCall => b.type === "toolCall").map((c) => c.id);
    const next = state.messages
      .slice(k + 1, k + 1 + ids.length)
      .map((r) => (r.role === "toolResult" ? r.toolCallId : r.role));
    if (JSON.stringify(next) !== JSON.stringify(ids))
      problems.push(`calls ${JSON.stringify(ids)} answered by ${JSON.stringify(next)}`);
  });
  const answered = state.messages.filter((m) => m.role === "toolResult").length;
  const calls = state.messages.reduce(
    (n, m) =>
      n +
      (m.role === "assistant" && m.stopReason !== "error" && m.stopReason !== "aborted"
        ? m.content.filter((b) => b.type === "toolCall").length
        : 0),
    0,
  );
  if (answered !== calls) problems.push(`${calls} tool calls, ${answered} results`);
  // every queued message is in the transcript or still queued: exactly once overall
  const waiting = agent.queuedMessages();
  const everywhere = [...state.messages, ...waiting.steering, ...waiting.followUps];
  for (const message of queued) {
    const count = everywhere.filter((m) => m === message).length;
    if (count !== 1)
      problems.push(
        `queued message "${(message as { content: { text: string }[] }).content[0]!.text}" found ${count} times`,
      );
  }
  return problems;
}
