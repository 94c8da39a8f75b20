/**
 * Property-based fault injection for the agent loop (DESIGN §6), shared by the property test
 * (`07-agent-loop.property.test.ts`, thousands of seeded runs) and the soak script
 * (`soak-agent-loop.ts`, 100,000 runs).
 *
 * A scenario is a random script: model turns (text, parallel and sequential tool calls, unknown /
 * invalid / coercible / malformed calls, throwing / slow / terminating / updating tools, length
 * and error turns, a stream that ends without a final message), steering and follow-up queues,
 * throws from every hook, and an abort at a random moment. `runScenario` runs it and returns
 * every invariant it broke (none, when the loop is right).
 */
import fc from "fast-check";
import { Type } from "typebox";
import {
  AssistantMessageEventStream,
  agentLoop,
  runAgentLoop,
  userMessage,
} from "../../src/index.js";
import type {
  AgentEvent,
  AgentLoopConfig,
  AgentMessage,
  AgentTool,
  AssistantContent,
  AssistantMessage,
  Context,
  Model,
  StreamOptions,
  ToolCall,
} from "../../src/index.js";
import { constructionSiteError, finish, grammarViolations } from "./agent-run.js";

// ---------------------------------------------------------------------------------------------
// Scenarios
// ---------------------------------------------------------------------------------------------

const TOOL_KINDS = ["ok", "slow", "throw", "terminate", "seq", "update", "block", "deaf", "unknown"] as const;
const ARG_KINDS = ["valid", "invalid", "coercible", "malformed"] as const;
const HOOKS = [
  "model",
  "convertToLlm",
  "transformContext",
  "beforeToolCall",
  "afterToolCall",
  "getSteeringMessages",
  "getFollowUpMessages",
] as const;

export type Hook = (typeof HOOKS)[number];

export interface CallSpec {
  tool: (typeof TOOL_KINDS)[number];
  args: (typeof ARG_KINDS)[number];
  /** Microtask ticks a slow tool waits. */
  ticks: number;
}

export type TurnSpec =
  | { kind: "text"; text: string }
  | { kind: "tools"; calls: CallSpec[]; stopReason: "toolUse" | "stop"; text: boolean }
  | { kind: "length"; calls: CallSpec[] }
  | { kind: "error" | "aborted"; text: boolean }
  /** The stream ends without a final message (a broken model). */
  | { kind: "torn" };

export interface Scenario {
  turns: TurnSpec[];
  /** How many steering messages each poll returns, in order (then 0). */
  steering: number[];
  /** How many follow-up messages each poll returns, in order (then 0). */
  followUps: number[];
  /** Throw from a hook on its n-th call (0-based). */
  throws: { hook: Hook; nth: number }[];
  /** Abort when the consumer receives event #index, or from inside a hook. */
  abort: { kind: "event"; index: number } | { kind: "hook"; hook: Hook; nth: number } | null;
  execution: "parallel" | "sequential";
  maxTurns: number;
  /** Read through `agentLoop`'s stream (true) or `runAgentLoop`'s sink (false). */
  stream: boolean;
}

const callSpec: fc.Arbitrary<CallSpec> = fc.record({
  tool: fc.constantFrom(...TOOL_KINDS),
  args: fc.oneof(
    { weight: 6, arbitrary: fc.constant("valid" as const) },
    { weight: 1, arbitrary: fc.constantFrom("invalid" as const, "coercible" as const, "malformed" as const) },
  ),
  ticks: fc.nat({ max: 6 }),
});

const turnSpec: fc.Arbitrary<TurnSpec> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("text" as const), text: fc.string({ maxLength: 12 }) }) },
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant("tools" as const),
      calls: fc.array(callSpec, { minLength: 1, maxLength: 4 }),
      stopReason: fc.constantFrom("toolUse" as const, "stop" as const),
      text: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("length" as const), calls: fc.array(callSpec, { minLength: 1, maxLength: 2 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constantFrom("error" as const, "aborted" as const), text: fc.boolean() }) },
  { weight: 1, arbitrary: fc.constant({ kind: "torn" as const }) },
);

export const scenarioArbitrary: fc.Arbitrary<Scenario> = fc.record({
  turns: fc.array(turnSpec, { minLength: 0, maxLength: 6 }),
  steering: fc.array(fc.nat({ max: 2 }), { maxLength: 4 }),
  followUps: fc.array(fc.nat({ max: 2 }), { maxLength: 3 }),
  throws: fc.oneof(
    { weight: 2, arbitrary: fc.constant([] as Scenario["throws"]) },
    { weight: 1, arbitrary: fc.array(fc.record({ hook: fc.constantFrom(...HOOKS), nth: fc.nat({ max: 4 }) }), { maxLength: 2 }) },
  ),
  abort: fc.oneof(
    { weight: 3, arbitrary: fc.constant(null) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant("event" as const), index: fc.nat({ max: 40 }) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant("hook" as const), hook: fc.constantFrom(...HOOKS), nth: fc.nat({ max: 3 }) }) },
  ),
  execution: fc.constantFrom("parallel" as const, "sequential" as const),
  maxTurns: fc.integer({ min: 1, max: 8 }),
  stream: fc.boolean(),
});

// ---------------------------------------------------------------------------------------------
// The model and the tools a scenario runs with
// ---------------------------------------------------------------------------------------------

const ticks = async (n: number): Promise<void> => {
  for (let i = 0; i < n; i++) await Promise.resolve();
};

/** Plays scenario turns; records model calls made after the abort. */
class FaultModel implements Model {
  readonly provider = "fault";
  readonly id = "fault-model";
  calls = 0;
  callsAfterAbort = 0;

  constructor(
    private readonly turns: readonly TurnSpec[],
    private readonly hookCall: (hook: Hook) => void,
  ) {}

  stream(_context: Context, options: StreamOptions = {}): AssistantMessageEventStream {
    if (options.signal?.aborted) this.callsAfterAbort++;
    const n = this.calls++;
    this.hookCall("model"); // may throw: a broken model
    const stream = new AssistantMessageEventStream();
    void this.play(stream, this.turns[n], n, options.signal);
    return stream;
  }

  private async play(
    stream: AssistantMessageEventStream,
    turn: TurnSpec | undefined,
    n: number,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    const message = (content: AssistantContent[], stopReason: AssistantMessage["stopReason"]): AssistantMessage => ({
      role: "assistant",
      content,
      provider: this.provider,
      model: this.id,
      usage: { input: 0, output: 0, totalTokens: 0 },
      stopReason,
      timestamp: 0,
    });
    await Promise.resolve();
    if (turn === undefined || signal?.aborted) {
      const reason = signal?.aborted ? "aborted" : "error";
      stream.push({ type: "error", reason, error: { ...message([], reason), errorMessage: "no turn" } });
      return;
    }
    const partial = message([], "stop");
    stream.push({ type: "start", partial });
    const blocks: AssistantContent[] = [];
    if (turn.kind === "text") blocks.push({ type: "text", text: turn.text });
    if ((turn.kind === "tools" || turn.kind === "error" || turn.kind === "aborted") && turn.text) {
      blocks.push({ type: "text", text: "thinking aloud" });
    }
    if (turn.kind === "tools" || turn.kind === "length") {
      turn.calls.forEach((spec, k) => blocks.push(toolCallOf(spec, `t${n}c${k}`)));
    }
    for (const block of blocks) {
      await Promise.resolve();
      if (signal?.aborted) return this.abort(stream, partial);
      const contentIndex = partial.content.length;
      if (block.type === "text") {
        partial.content.push({ type: "text", text: block.text });
        stream.push({ type: "text_delta", contentIndex, delta: block.text, partial });
      } else if (block.type === "toolCall") {
        partial.content.push(block);
        stream.push({ type: "toolcall_delta", contentIndex, delta: block.rawArguments ?? "{}", partial });
        if (turn.kind !== "length") stream.push({ type: "toolcall_end", contentIndex, toolCall: block, partial });
      }
    }
    await Promise.resolve();
    if (signal?.aborted) return this.abort(stream, partial);
    if (turn.kind === "torn") return stream.end();
    if (turn.kind === "error" || turn.kind === "aborted") {
      partial.stopReason = turn.kind;
      partial.errorMessage = `scripted ${turn.kind}`;
      stream.push({ type: "error", reason: turn.kind, error: partial });
      return;
    }
    partial.stopReason = turn.kind === "length" ? "length" : turn.kind === "tools" ? turn.stopReason : "stop";
    stream.push({ type: "done", reason: partial.stopReason, message: partial });
  }

  private abort(stream: AssistantMessageEventStream, partial: AssistantMessage): void {
    partial.stopReason = "aborted";
    partial.errorMessage = "aborted";
    stream.push({ type: "error", reason: "aborted", error: partial });
  }
}

function toolCallOf(spec: CallSpec, id: string): ToolCall {
  const name = spec.tool === "unknown" ? "nope" : spec.tool;
  switch (spec.args) {
    case "valid":
      return { type: "toolCall", id, name, arguments: { ticks: spec.ticks } };
    case "coercible":
      return { type: "toolCall", id, name, arguments: { ticks: String(spec.ticks) } };
    case "invalid":
      return { type: "toolCall", id, name, arguments: { ticks: "many" } };
    case "malformed":
      return { type: "toolCall", id, name, arguments: {}, rawArguments: '{"ticks": ', argumentsError: "Unexpected end of JSON input" };
  }
}

const params = Type.Object({ ticks: Type.Integer({ minimum: 0 }) });

/** The scenario's tools; `onExecute` sees every call of `execute`, by tool-call id. */
function toolsOf(onExecute: (toolCallId: string) => void): AgentTool<typeof params, unknown>[] {
  const result = (text: string, terminate = false) => ({ content: [{ type: "text" as const, text }], details: { text }, ...(terminate && { terminate }) });
  const make = (
    name: string,
    run: AgentTool<typeof params, unknown>["execute"],
    executionMode?: "sequential",
  ): AgentTool<typeof params, unknown> => ({
    name,
    label: name,
    description: name,
    parameters: params,
    execute: (id, args, signal, onUpdate) => {
      onExecute(id);
      return run(id, args, signal, onUpdate);
    },
    ...(executionMode && { executionMode }),
  });
  const honest = async (n: number, signal?: AbortSignal): Promise<void> => {
    for (let i = 0; i < n; i++) {
      if (signal?.aborted) throw new Error("aborted");
      await Promise.resolve();
    }
  };
  return [
    make("ok", async () => result("ok")),
    make("slow", async (_id, { ticks: n }, signal) => (await honest(n, signal), result("slow"))),
    make("throw", async () => {
      throw new Error("tool failed");
    }),
    make("terminate", async () => result("bye", true)),
    make("seq", async (_id, { ticks: n }, signal) => (await honest(n, signal), result("seq")), "sequential"),
    make("update", async (_id, { ticks: n }, _signal, onUpdate) => {
      onUpdate?.(result("0%"));
      await ticks(n);
      onUpdate?.(result("50%"));
      // a late update, after the tool has resolved: must never be reported after its end
      void ticks(n + 1).then(() => onUpdate?.(result("late")));
      return result("100%");
    }),
    make("block", async () => result("should have been blocked")),
    make("deaf", async (_id, { ticks: n }) => (await ticks(n * 3), result("deaf"))),
  ];
}

// ---------------------------------------------------------------------------------------------
// Running one scenario
// ---------------------------------------------------------------------------------------------

/** Runs one scenario; returns the invariants it broke (empty: all held). */
export async function runScenario(scenario: Scenario, deadlineMs = 2000): Promise<string[]> {
  const controller = new AbortController();
  const counts = new Map<Hook, number>();
  const thrown = new Set<Hook>();
  const hookCall = (hook: Hook): void => {
    const nth = counts.get(hook) ?? 0;
    counts.set(hook, nth + 1);
    const abort = scenario.abort;
    if (abort?.kind === "hook" && abort.hook === hook && abort.nth === nth) controller.abort();
    if (scenario.throws.some((t) => t.hook === hook && t.nth === nth)) {
      thrown.add(hook);
      throw new Error(`${hook} threw (injected)`);
    }
  };
  /** What each queue poll returned, in order: "steering 0", "followUp 2", … */
  const polls: string[] = [];
  const badExecutions: string[] = [];
  const onExecute = (id: string): void => {
    if (controller.signal.aborted) badExecutions.push(`${id} executed after the abort`);
    const kind = scenario.turns[Number(/^t(\d+)c/.exec(id)?.[1])]?.kind;
    if (kind !== "tools") badExecutions.push(`${id} executed in a ${kind} turn`);
  };
  const model = new FaultModel(scenario.turns, hookCall);
  const steering = [...scenario.steering];
  const followUps = [...scenario.followUps];
  let said = 0;
  const say = (count: number): AgentMessage[] => Array.from({ length: count }, () => userMessage(`queued ${said++}`));
  const polledAfterAbort: string[] = [];
  const config: AgentLoopConfig = {
    model,
    toolExecution: scenario.execution,
    maxTurns: scenario.maxTurns,
    convertToLlm: (messages) => {
      hookCall("convertToLlm");
      return messages.filter((m) => m.role !== ("note" as string)) as never;
    },
    transformContext: async (messages) => {
      hookCall("transformContext");
      return messages;
    },
    beforeToolCall: async ({ toolCall }) => {
      hookCall("beforeToolCall");
      return toolCall.name === "block" ? { block: true, reason: "blocked by policy" } : undefined;
    },
    afterToolCall: async () => {
      hookCall("afterToolCall");
      return undefined;
    },
    getSteeringMessages: async () => {
      if (controller.signal.aborted) polledAfterAbort.push("steering");
      hookCall("getSteeringMessages");
      const count = steering.shift() ?? 0;
      polls.push(`steering ${count}`);
      return say(count);
    },
    getFollowUpMessages: () => {
      if (controller.signal.aborted) polledAfterAbort.push("followUp");
      hookCall("getFollowUpMessages");
      const count = followUps.shift() ?? 0;
      polls.push(`followUp ${count}`);
      return say(count);
    },
  };
  const context = { systemPrompt: "sys", messages: [] as AgentMessage[], tools: toolsOf(onExecute) };
  const prompts = [userMessage("go")];
  const onEvent = (_event: AgentEvent, index: number): void => {
    if (scenario.abort?.kind === "event" && scenario.abort.index === index) controller.abort();
  };

  const problems: string[] = [];
  let events: AgentEvent[];
  let result: AgentMessage[];
  try {
    if (scenario.stream) {
      ({ events, result } = await finish(agentLoop(prompts, context, config, controller.signal), onEvent, deadlineMs));
    } else {
      const delivered: AgentEvent[] = [];
      const run = runAgentLoop(prompts, context, config, (event) => {
        delivered.push(event);
        onEvent(event, delivered.length - 1);
      }, controller.signal);
      let timer: ReturnType<typeof setTimeout> | undefined;
      result = await Promise.race([
        run,
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`runAgentLoop did not settle within ${deadlineMs} ms`)), deadlineMs);
        }),
      ]).finally(() => clearTimeout(timer));
      // late tool updates and the like would arrive now: nothing may follow agent_end
      await ticks(30);
      events = delivered;
    }
  } catch (error) {
    return [`the run did not end: ${error instanceof Error ? error.message : String(error)}`];
  }
  const site = constructionSiteError(result);
  if (site !== undefined) return [site];
  problems.push(...grammarViolations(events, result));
  if (model.callsAfterAbort > 0) problems.push(`${model.callsAfterAbort} model call(s) after the abort`);
  if (polledAfterAbort.length > 0) problems.push(`queues polled after the abort: ${polledAfterAbort.join(", ")}`);
  // every tool call of the run answered exactly once, by id
  const calls = result.flatMap((m) =>
    m.role === "assistant" && m.stopReason !== "error" && m.stopReason !== "aborted"
      ? m.content.filter((b): b is ToolCall => b.type === "toolCall").map((c) => c.id)
      : [],
  );
  const answers = result.flatMap((m) => (m.role === "toolResult" ? [m.toolCallId] : []));
  if (JSON.stringify(calls) !== JSON.stringify(answers)) {
    problems.push(`calls ${JSON.stringify(calls)} answered by ${JSON.stringify(answers)}`);
  }
  if (context.messages.length !== 0) problems.push("the caller's context was changed");
  if (model.calls > scenario.maxTurns) problems.push(`${model.calls} model calls with maxTurns = ${scenario.maxTurns}`);
  problems.push(...badExecutions);
  problems.push(...terminateViolations(events));
  if (problems.length === 0) {
    problems.push(...endingViolations(events, { model, scenario, thrown, polls, aborted: controller.signal.aborted }));
  }
  return problems;
}

/** The tool_execution_end events of each turn, with the turn's assistant message. */
function turnsOf(events: readonly AgentEvent[]): { message: AssistantMessage; ends: Extract<AgentEvent, { type: "tool_execution_end" }>[] }[] {
  const turns: { message: AssistantMessage; ends: Extract<AgentEvent, { type: "tool_execution_end" }>[] }[] = [];
  let ends: Extract<AgentEvent, { type: "tool_execution_end" }>[] = [];
  for (const event of events) {
    if (event.type === "turn_start") ends = [];
    else if (event.type === "tool_execution_end") ends.push(event);
    else if (event.type === "turn_end") turns.push({ message: event.message, ends });
  }
  return turns;
}

/** A batch whose every result says terminate ends the run; a turn after it is a violation. */
function terminateViolations(events: readonly AgentEvent[]): string[] {
  const turns = turnsOf(events);
  return turns.slice(0, -1).flatMap((turn, k) =>
    turn.ends.length > 0 && turn.ends.every((end) => end.result.terminate === true)
      ? [`turn ${k}: every result said terminate, yet the run went on`]
      : [],
  );
}

/**
 * Why the run ended must be one of: a stop with no calls and no follow-ups (the last polls
 * returned nothing), a unanimous terminate, an error/aborted turn (from the model, a throwing
 * hook or getter, or the turn limit), or the abort. Each loop-made failure needs its cause.
 */
function endingViolations(
  events: readonly AgentEvent[],
  seen: { model: FaultModel; scenario: Scenario; thrown: ReadonlySet<Hook>; polls: readonly string[]; aborted: boolean },
): string[] {
  const last = turnsOf(events).at(-1);
  if (last === undefined) return ["the run ended without a turn"];
  const { message, ends } = last;
  const why = message.errorMessage ?? "";
  if (why.startsWith("The agent loop failed")) return [`the loop itself failed: ${why}`];
  if (message.stopReason === "error" || message.stopReason === "aborted") {
    const needs = (ok: boolean, cause: string): string[] => (ok ? [] : [`ended with "${why}" without ${cause}`]);
    if (why.startsWith("Turn limit reached")) return needs(seen.model.calls === seen.scenario.maxTurns, "reaching maxTurns");
    if (why.startsWith("The run was aborted")) return needs(seen.aborted, "an abort");
    const hook = /^(getSteeringMessages|getFollowUpMessages|beforeToolCall|afterToolCall|convertToLlm|transformContext) failed/.exec(why)?.[1];
    if (hook !== undefined) return needs(seen.thrown.has(hook as Hook), `a throw from ${hook}`);
    return []; // the model's own error/aborted turn (scripted, torn, thrown, or no turn left)
  }
  if (seen.aborted) return [];
  const calls = message.content.filter((block) => block.type === "toolCall");
  if (calls.length > 0) {
    return ends.every((end) => end.result.terminate === true) && ends.length === calls.length
      ? []
      : [`the run ended after a batch without a unanimous terminate`];
  }
  const lastPolls = seen.polls.slice(-2).join(", ");
  return lastPolls === "steering 0, followUp 0" ? [] : [`the run ended after a stop, the last polls being: ${lastPolls}`];
}

/** Collects unhandled rejections while installed; the property checks the list stays empty. */
export function watchUnhandledRejections(): { reasons: unknown[]; stop: () => void } {
  const reasons: unknown[] = [];
  const listener = (reason: unknown): void => {
    reasons.push(reason);
  };
  process.on("unhandledRejection", listener);
  return { reasons, stop: () => process.off("unhandledRejection", listener) };
}
