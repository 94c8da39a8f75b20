/**
 * Property-based fault injection for the agent loop, shared by the property test
 * (`07-agent-loop.property.test.ts`, thousands of seeded runs) and the soak script
 * (`soak-agent-loop.ts`, 100,000 runs).
 *
 * A scenario is a random script: model turns (text, parallel and sequential tool calls, unknown /
 * invalid / coercible / malformed calls, calls repeating an earlier call's id, throwing / slow /
 * terminating / updating / never-settling tools, tools throwing or returning hostile values,
 * length and error turns, a stream that ends without a final message, hostile model events),
 * steering and follow-up queues, throws from every hook (of plain errors and of hostile values:
 * `Object.create(null)`, a throwing `toString`, a Proxy, an Error whose `message` getter throws),
 * hostile hook answers, a hook, model or sink that never settles (then the user aborts, or
 * `hookTimeoutMs` bounds a tool hook), and an abort at a random moment. `runScenario` runs it
 * and returns every invariant it broke (none, when the loop is right).
 */
import fc from "fast-check";
import { Type } from "typebox";
import { AssistantMessageEventStream, agentLoop, runAgentLoop, userMessage } from "../../src/index.js";
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

const TOOL_KINDS = [
  "ok",
  "slow",
  "throw",
  "terminate",
  "seq",
  "update",
  "block",
  "deaf",
  "unknown",
  "hostileThrow",
  "hostileResult",
  "stuck",
] as const;
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

/** Kinds of thrown values: a plain Error, and values with no usable string form. */
export const HOSTILE = ["error", "nullProto", "toString", "proxy", "messageGetter", "revoked"] as const;
export type Hostile = (typeof HOSTILE)[number];

/** Hooks whose answer can be hostile (the loop reads it). */
const ANSWERING = ["beforeToolCall", "afterToolCall", "getSteeringMessages", "getFollowUpMessages"] as const;
type AnsweringHook = (typeof ANSWERING)[number];

/** What every trap of `throwingProxy()` throws: the test's own text, which the loop passes on. */
export const TRAP_SPRUNG = "a trap was sprung";

/** A Proxy every operation of which throws (get, has, ownKeys, getPrototypeOf, …). */
export function throwingProxy(): object {
  const trap = (): never => {
    throw new Error(TRAP_SPRUNG);
  };
  return new Proxy({}, new Proxy({}, { get: () => trap }));
}

/** A copy of `base` whose `field` getter throws. */
export function throwingGetter(base: object, field: string): object {
  const value = { ...base };
  Object.defineProperty(value, field, {
    enumerable: true,
    get() {
      throw new Error(`the ${field} getter threw`);
    },
  });
  return value;
}

/** A value to throw, of the given kind; `error` is a plain Error saying `text`. */
export function hostileThrown(kind: Hostile, text: string): unknown {
  switch (kind) {
    case "error":
      return new Error(text);
    case "nullProto":
      return Object.create(null);
    case "toString":
      return {
        toString() {
          throw new Error("no string form");
        },
      };
    case "proxy":
      return throwingProxy();
    case "messageGetter": {
      const error = new Error(text);
      Object.defineProperty(error, "message", {
        get() {
          throw new Error("no message");
        },
      });
      return error;
    }
    case "revoked": {
      const revocable = Proxy.revocable({}, {});
      revocable.revoke();
      return revocable.proxy;
    }
  }
}

export interface CallSpec {
  tool: (typeof TOOL_KINDS)[number];
  args: (typeof ARG_KINDS)[number];
  /** Microtask ticks a slow tool waits; also picks the hostile value of a hostile tool. */
  ticks: number;
  /** Reuses the id of the call before it in the same message. */
  repeat: boolean;
}

export type TurnSpec =
  | { kind: "text"; text: string }
  | { kind: "tools"; calls: CallSpec[]; stopReason: "toolUse" | "stop"; text: boolean }
  | { kind: "length"; calls: CallSpec[] }
  | { kind: "error" | "aborted"; text: boolean }
  /** The stream ends without a final message (a broken model). */
  | { kind: "torn" }
  /** The stream yields something hostile (a Proxy event, a final message whose getters throw, …). */
  | { kind: "hostile"; what: number };

export interface Scenario {
  turns: TurnSpec[];
  /** How many steering messages each poll returns, in order (then 0). */
  steering: number[];
  /** How many follow-up messages each poll returns, in order (then 0). */
  followUps: number[];
  /** Throw from a hook on its n-th call (0-based), a value of the given kind. */
  throws: { hook: Hook; nth: number; value: Hostile }[];
  /** Answer with a hostile value (getters that throw, a Proxy) from a hook on its n-th call. */
  answers: { hook: AnsweringHook; nth: number }[];
  /**
   * Never settle in a hook, the model or the sink (sink runs only), on its n-th call; then the
   * user aborts (`abort`), except for a tool hook bounded by `hookTimeoutMs`, which may wait it out.
   */
  stuck: { hook: Hook | "sink"; nth: number; abort: boolean } | null;
  /** `hookTimeoutMs` in the config, or none. */
  hookTimeoutMs: number | undefined;
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
  repeat: fc.oneof({ weight: 9, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
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
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("length" as const),
      calls: fc.array(callSpec, { minLength: 1, maxLength: 2 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constantFrom("error" as const, "aborted" as const), text: fc.boolean() }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: "torn" as const }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("hostile" as const), what: fc.nat({ max: 5 }) }) },
);

export const scenarioArbitrary: fc.Arbitrary<Scenario> = fc.record({
  turns: fc.array(turnSpec, { minLength: 0, maxLength: 6 }),
  steering: fc.array(fc.nat({ max: 2 }), { maxLength: 4 }),
  followUps: fc.array(fc.nat({ max: 2 }), { maxLength: 3 }),
  throws: fc.oneof(
    { weight: 2, arbitrary: fc.constant([] as Scenario["throws"]) },
    {
      weight: 1,
      arbitrary: fc.array(
        fc.record({ hook: fc.constantFrom(...HOOKS), nth: fc.nat({ max: 4 }), value: fc.constantFrom(...HOSTILE) }),
        { maxLength: 2 },
      ),
    },
  ),
  answers: fc.oneof(
    { weight: 4, arbitrary: fc.constant([] as Scenario["answers"]) },
    {
      weight: 1,
      arbitrary: fc.array(fc.record({ hook: fc.constantFrom(...ANSWERING), nth: fc.nat({ max: 3 }) }), {
        maxLength: 2,
      }),
    },
  ),
  stuck: fc.oneof(
    { weight: 5, arbitrary: fc.constant(null) },
    {
      weight: 1,
      arbitrary: fc.record({
        hook: fc.constantFrom(...HOOKS, "sink" as const),
        nth: fc.nat({ max: 12 }),
        abort: fc.boolean(),
      }),
    },
  ),
  hookTimeoutMs: fc.oneof(
    { weight: 3, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: fc.integer({ min: 1, max: 4 }) },
  ),
  abort: fc.oneof(
    { weight: 3, arbitrary: fc.constant(null) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant("event" as const), index: fc.nat({ max: 40 }) }) },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant("hook" as const),
        hook: fc.constantFrom(...HOOKS),
        nth: fc.nat({ max: 3 }),
      }),
    },
  ),
  execution: fc.constantFrom("parallel" as const, "sequential" as const),
  maxTurns: fc.integer({ min: 1, max: 8 }),
  stream: fc.boolean(),
});

/** What a hook does instead of its usual answer: never settle, or answer with a hostile value. */
type Directive = { kind: "stuck"; promise: Promise<never> } | { kind: "answer"; odd: boolean } | undefined;

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
    private readonly hookCall: (hook: Hook) => Directive,
  ) {}

  stream(_context: Context, options: StreamOptions = {}): AssistantMessageEventStream {
    if (options.signal?.aborted) this.callsAfterAbort++;
    const n = this.calls++;
    const directive = this.hookCall("model"); // may throw: a broken model
    if (directive?.kind === "stuck") {
      // a stream that ignores its signal and never yields, nor settles result()
      const stuck = directive.promise;
      return {
        [Symbol.asyncIterator]: () => ({ next: () => stuck }),
        result: () => stuck,
      } as unknown as AssistantMessageEventStream;
    }
    const turn = this.turns[n];
    if (turn?.kind === "hostile") return hostileStream(turn.what, this.message([], "stop"));
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
    const message = (content: AssistantContent[], stopReason: AssistantMessage["stopReason"]) =>
      this.message(content, stopReason);
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
      let id = "";
      turn.calls.forEach((spec, k) => {
        id = spec.repeat && k > 0 ? id : `t${n}c${k}`; // a repeat reuses the id before it
        blocks.push(toolCallOf(spec, id));
      });
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

  message(content: AssistantContent[], stopReason: AssistantMessage["stopReason"]): AssistantMessage {
    return {
      role: "assistant",
      content,
      provider: this.provider,
      model: this.id,
      usage: { input: 0, output: 0, totalTokens: 0 },
      stopReason,
      timestamp: 0,
    };
  }

  private abort(stream: AssistantMessageEventStream, partial: AssistantMessage): void {
    partial.stopReason = "aborted";
    partial.errorMessage = "aborted";
    stream.push({ type: "error", reason: "aborted", error: partial });
  }
}

/** A model stream yielding something hostile; `what` picks which. Its result() is a sound message. */
function hostileStream(what: number, sound: AssistantMessage): AssistantMessageEventStream {
  const events: unknown[] = [
    [throwingProxy()],
    [null],
    [{ type: "start", partial: throwingProxy() }],
    [{ type: "start", partial: sound }, throwingGetter({ type: "done", reason: "stop" }, "message")],
    [
      { type: "start", partial: sound },
      { type: "done", reason: "stop", message: throwingGetter(sound, "content") },
    ],
    [{ type: "done", reason: "toolUse", message: { ...sound, stopReason: "toolUse", content: [throwingProxy()] } }],
  ][what % 6]!;
  return {
    async *[Symbol.asyncIterator]() {
      yield* events as unknown[];
    },
    result: async () => sound,
  } as unknown as AssistantMessageEventStream;
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
      return {
        type: "toolCall",
        id,
        name,
        arguments: {},
        rawArguments: '{"ticks": ',
        argumentsError: "Unexpected end of JSON input",
      };
  }
}

const params = Type.Object({ ticks: Type.Integer({ minimum: 0 }) });

/** The scenario's tools; `onExecute` sees every call of `execute`, by tool-call id; `hang` never settles. */
function toolsOf(
  onExecute: (toolCallId: string) => void,
  hang: () => Promise<never>,
): AgentTool<typeof params, unknown>[] {
  const result = (text: string, terminate = false) => ({
    content: [{ type: "text" as const, text }],
    details: { text },
    ...(terminate && { terminate }),
  });
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
    make("hostileThrow", async (_id, { ticks: n }) => {
      throw hostileThrown(HOSTILE[n % HOSTILE.length]!, "tool failed");
    }),
    make("hostileResult", async (_id, { ticks: n }) => {
      const fields = ["content", "isError", "terminate", "details"];
      return (n % 5 < 4 ? throwingGetter(result("odd"), fields[n % 5]!) : throwingProxy()) as never;
    }),
    make("stuck", () => hang()),
  ];
}

// ---------------------------------------------------------------------------------------------
// Running one scenario
// ---------------------------------------------------------------------------------------------

/** Runs one scenario; returns the invariants it broke (empty: all held). */
export async function runScenario(scenario: Scenario, deadlineMs = 2000): Promise<string[]> {
  const controller = new AbortController();
  const counts = new Map<Hook, number>();
  /** Hooks whose failure (a throw, a hostile answer, a timeout) may end the run. */
  const thrown = new Set<Hook>();
  /** Rejects what never settled, once the run has ended: the loop must ignore it. */
  const late: ((error: unknown) => void)[] = [];
  const hang = (abort = true): Promise<never> => {
    if (abort) setImmediate(() => controller.abort()); // the user gives up waiting
    return new Promise<never>((_, reject) => late.push(reject));
  };
  const hookCall = (hook: Hook): Directive => {
    const nth = counts.get(hook) ?? 0;
    counts.set(hook, nth + 1);
    const abort = scenario.abort;
    if (abort?.kind === "hook" && abort.hook === hook && abort.nth === nth) controller.abort();
    const throws = scenario.throws.find((t) => t.hook === hook && t.nth === nth);
    if (throws !== undefined) {
      thrown.add(hook);
      throw hostileThrown(throws.value, `${hook} threw (injected)`);
    }
    const stuck = scenario.stuck;
    if (stuck?.hook === hook && stuck.nth === nth) {
      const bounded = (hook === "beforeToolCall" || hook === "afterToolCall") && scenario.hookTimeoutMs !== undefined;
      if (bounded) thrown.add(hook); // it may time out before the user aborts
      return { kind: "stuck", promise: hang(stuck.abort || !bounded) };
    }
    if (scenario.answers.some((a) => a.hook === hook && a.nth === nth)) {
      thrown.add(hook);
      return { kind: "answer", odd: nth % 2 === 1 };
    }
    return undefined;
  };
  /** What each queue poll returned, in order: "steering 0", "followUp 2", … */
  const polls: string[] = [];
  /** Queue polls after the last allowed model call: the turn limit ends the run without any. */
  const polledAtLimit: string[] = [];
  const badExecutions: string[] = [];
  const onExecute = (id: string): void => {
    if (controller.signal.aborted) badExecutions.push(`${id} executed after the abort`);
    const kind = scenario.turns[Number(/^t(\d+)c/.exec(id)?.[1])]?.kind;
    if (kind !== "tools") badExecutions.push(`${id} executed in a ${kind} turn`);
    if (id.includes("_dup")) badExecutions.push(`${id} executed, a call repeating an earlier call's id`);
  };
  const model = new FaultModel(scenario.turns, hookCall);
  const revoked = (): unknown => {
    const revocable = Proxy.revocable([], {});
    revocable.revoke();
    return revocable.proxy;
  };
  const steering = [...scenario.steering];
  const followUps = [...scenario.followUps];
  let said = 0;
  const say = (count: number): AgentMessage[] => Array.from({ length: count }, () => userMessage(`queued ${said++}`));
  const polledAfterAbort: string[] = [];
  const config: AgentLoopConfig = {
    model,
    toolExecution: scenario.execution,
    maxTurns: scenario.maxTurns,
    ...(scenario.hookTimeoutMs !== undefined && { hookTimeoutMs: scenario.hookTimeoutMs }),
    convertToLlm: (messages) => {
      const directive = hookCall("convertToLlm");
      if (directive?.kind === "stuck") return directive.promise;
      return messages.filter((m) => m.role !== ("note" as string)) as never;
    },
    transformContext: async (messages) => {
      const directive = hookCall("transformContext");
      if (directive?.kind === "stuck") return directive.promise;
      return messages;
    },
    beforeToolCall: async ({ toolCall }) => {
      const directive = hookCall("beforeToolCall");
      if (directive?.kind === "stuck") return directive.promise;
      if (directive?.kind === "answer")
        return (directive.odd ? throwingProxy() : throwingGetter({ reason: "r" }, "block")) as never;
      return toolCall.name === "block" ? { block: true, reason: "blocked by policy" } : undefined;
    },
    afterToolCall: async () => {
      const directive = hookCall("afterToolCall");
      if (directive?.kind === "stuck") return directive.promise;
      if (directive?.kind === "answer")
        return (directive.odd ? throwingProxy() : throwingGetter({}, "content")) as never;
      return undefined;
    },
    getSteeringMessages: async () => {
      if (controller.signal.aborted) polledAfterAbort.push("steering");
      if (model.calls >= scenario.maxTurns) polledAtLimit.push("steering");
      const directive = hookCall("getSteeringMessages");
      if (directive?.kind === "stuck") return directive.promise;
      if (directive?.kind === "answer") return (directive.odd ? revoked() : [throwingProxy()]) as never;
      const count = steering.shift() ?? 0;
      polls.push(`steering ${count}`);
      return say(count);
    },
    getFollowUpMessages: () => {
      if (controller.signal.aborted) polledAfterAbort.push("followUp");
      if (model.calls >= scenario.maxTurns) polledAtLimit.push("followUp");
      const directive = hookCall("getFollowUpMessages");
      if (directive?.kind === "stuck") return directive.promise;
      if (directive?.kind === "answer") return (directive.odd ? revoked() : [throwingProxy()]) as never;
      const count = followUps.shift() ?? 0;
      polls.push(`followUp ${count}`);
      return say(count);
    },
  };
  const context = { systemPrompt: "sys", messages: [] as AgentMessage[], tools: toolsOf(onExecute, () => hang()) };
  const prompts = [userMessage("go")];
  const onEvent = (_event: AgentEvent, index: number): undefined | Promise<never> => {
    if (scenario.abort?.kind === "event" && scenario.abort.index === index) controller.abort();
    // a subscriber that never settles (only a sink's promise is awaited by the loop)
    if (!scenario.stream && scenario.stuck?.hook === "sink" && scenario.stuck.nth === index) return hang();
  };

  const problems: string[] = [];
  let events: AgentEvent[];
  let result: AgentMessage[];
  try {
    if (scenario.stream) {
      ({ events, result } = await finish(agentLoop(prompts, context, config, controller.signal), onEvent, deadlineMs));
    } else {
      const delivered: AgentEvent[] = [];
      const run = runAgentLoop(
        prompts,
        context,
        config,
        (event) => {
          delivered.push(event);
          return onEvent(event, delivered.length - 1);
        },
        controller.signal,
      );
      let timer: ReturnType<typeof setTimeout> | undefined;
      result = await Promise.race([
        run,
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`runAgentLoop did not settle within ${deadlineMs} ms`)),
            deadlineMs,
          );
        }),
      ]).finally(() => clearTimeout(timer));
      // late tool updates, late failures of what never settled: nothing may follow agent_end
      for (const reject of late) reject(new Error("a late failure (injected)"));
      await ticks(30);
      events = delivered;
    }
  } catch (error) {
    return [`the run did not end: ${error instanceof Error ? error.message : String(error)}`];
  }
  for (const reject of late) reject(new Error("a late failure (injected)"));
  const site = constructionSiteError(result);
  if (site !== undefined) return [site];
  problems.push(...grammarViolations(events, result));
  if (model.callsAfterAbort > 0) problems.push(`${model.callsAfterAbort} model call(s) after the abort`);
  if (polledAfterAbort.length > 0) problems.push(`queues polled after the abort: ${polledAfterAbort.join(", ")}`);
  if (polledAtLimit.length > 0)
    problems.push(
      `queues polled after the last allowed model call (maxTurns = ${scenario.maxTurns}): ${polledAtLimit.join(", ")}`,
    );
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
function turnsOf(
  events: readonly AgentEvent[],
): { message: AssistantMessage; ends: Extract<AgentEvent, { type: "tool_execution_end" }>[] }[] {
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
  return turns
    .slice(0, -1)
    .flatMap((turn, k) =>
      turn.ends.length > 0 && turn.ends.every((end) => end.result.terminate === true)
        ? [`turn ${k}: every result said terminate, yet the run went on`]
        : [],
    );
}

/**
 * Why the run ended must be one of: a stop with no calls and no follow-ups (the last polls
 * returned nothing), a unanimous terminate, an error/aborted turn (from the model, a throwing
 * hook or getter), the turn limit (the last turn made the maxTurns-th model call; no poll after
 * it; agent_end.errorMessage set exactly when its calls were answered by no model call), or the
 * abort. Each loop-made failure needs its cause; no turn is opened without a model call.
 */
function endingViolations(
  events: readonly AgentEvent[],
  seen: {
    model: FaultModel;
    scenario: Scenario;
    thrown: ReadonlySet<Hook>;
    polls: readonly string[];
    aborted: boolean;
  },
): string[] {
  const last = turnsOf(events).at(-1);
  if (last === undefined) return ["the run ended without a turn"];
  const { message, ends } = last;
  const why = message.errorMessage ?? "";
  if (why.startsWith("The agent loop failed")) return [`the loop itself failed: ${why}`];
  const end = events.at(-1);
  const limit = end?.type === "agent_end" ? end.errorMessage : undefined;
  const atLimit = seen.model.calls === seen.scenario.maxTurns; // an abort may come after the decision
  const calls = message.content.filter((block) => block.type === "toolCall");
  const failed = message.stopReason === "error" || message.stopReason === "aborted";
  const unanimous = ends.length === calls.length && ends.every((e) => e.result.terminate === true);
  if (limit !== undefined) {
    const reported = atLimit && !failed && calls.length > 0 && !unanimous && limit.startsWith("Turn limit reached");
    return reported
      ? []
      : [`agent_end says "${limit}" after a turn that did not leave the limit's tool results unanswered`];
  }
  if (failed) {
    const needs = (ok: boolean, cause: string): string[] => (ok ? [] : [`ended with "${why}" without ${cause}`]);
    if (why.startsWith("Turn limit reached")) return [`the turn limit took a turn of its own: "${why}"`];
    if (why.startsWith("The run was aborted")) return needs(seen.aborted, "an abort");
    const hook =
      /^(getSteeringMessages|getFollowUpMessages|beforeToolCall|afterToolCall|convertToLlm|transformContext) failed/.exec(
        why,
      )?.[1];
    if (hook !== undefined) return needs(seen.thrown.has(hook as Hook), `a throw from ${hook}`);
    return []; // the model's own error/aborted turn (scripted, torn, thrown, or no turn left)
  }
  if (seen.aborted) return [];
  if (calls.length > 0) {
    return unanimous ? [] : [`the run ended after a batch without a unanimous terminate, nor at the turn limit`];
  }
  if (atLimit) return [];
  const lastPolls = seen.polls.slice(-2).join(", ");
  return lastPolls === "steering 0, followUp 0"
    ? []
    : [`the run ended after a stop, the last polls being: ${lastPolls}`];
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
