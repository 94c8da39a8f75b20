/**
 * Chapter 19: recovery, the reading half of a durable run.
 *
 * `planRecovery` reads a session (and its stream journal) and says, without changing anything,
 * what a run killed mid-way left unfinished at the session's leaf:
 *
 * - an answer cut mid-stream (the stream journal continues the leaf): it becomes an `aborted`
 *   assistant message holding what had arrived (`partial`);
 * - each tool call of the last assistant message without a result (`calls`), decided by what the
 *   journal committed for it:
 *   - `recorded`: its outcome was committed: the result is that outcome (nothing runs again);
 *   - `run`: no intent was committed, so it never started: it runs now;
 *   - `replay`: it started and did not finish, and its tool says `replay: "safe"`: it runs again;
 *   - `interrupted`: it started, did not finish, and is not safe to replay: an error result says
 *     it may or may not have taken effect, so the model can check;
 * - `unfinished`: whether the run had not ended (something above, or the transcript ends with a
 *   user message or a tool result): the model is to be asked again.
 *
 * `applyRecovery` carries the plan out: each result (and the aborted answer) is appended to the
 * session, in order, after the leaf; tools run through the journal (so a recovery killed in turn
 * is recovered in turn). With `{ run: false }` (the user declined) nothing runs: a call that
 * never started gets a result saying it was not run, one that started the interrupted result.
 *
 * `resumeRun` does it all for an `Agent`: plan, apply, attach the session, and `continue()` when
 * the run was unfinished. Calls inside the path (not at its leaf) are left to chapter 10's repair
 * (`answerInterruptedCalls`, applied whenever a transcript is loaded).
 */
import type { Agent } from "../agent/agent.js";
import { prepareToolArguments } from "../agent/tools.js";
import { transcriptOf } from "../session/context.js";
import { answerInterruptedCalls } from "../session/interrupted.js";
import type { SessionEntry, ToolIntentEntry, ToolOutcomeEntry } from "../session/types.js";
import type { AgentMessage, AgentTool, AssistantMessage, ToolCall, ToolResultMessage } from "../types.js";
import type { DurableStore, StreamJournal } from "./store.js";
import { type RecoveryHooks, underToolHooks } from "./recovery-hooks.js";

/** What recovery does with one unanswered tool call. */
export type RecoveryAction = "recorded" | "run" | "replay" | "interrupted";

/** One unanswered tool call and what recovery does with it. */
export interface PlannedCall {
  call: ToolCall;
  action: RecoveryAction;
  /** The committed outcome (`recorded` only). */
  outcome?: ToolOutcomeEntry;
}

/** What `planRecovery` found. */
export interface RecoveryPlan {
  /** The leaf the plan was made at (recovery appends after it). */
  leafId: string | undefined;
  /** The answer cut mid-stream, as the aborted message recovery records. */
  partial?: AssistantMessage;
  /** The unanswered calls of the last assistant message, in its order. */
  calls: PlannedCall[];
  /** The run had not ended: after recovery the model is asked again. */
  unfinished: boolean;
}

/** What `applyRecovery` appended, in order. */
export interface RecoveryReport {
  plan: RecoveryPlan;
  /** The messages appended (the aborted answer, then one result per call). */
  appended: AgentMessage[];
}

/** The error text of a call that started and may or may not have taken effect. */
export function uncertainText(toolName: string, settled?: string): string {
  return (
    `Tool call "${toolName}" was interrupted: the process stopped while it ran, so it may or may not ` +
    `have taken effect. Check before running it again.${settled === undefined ? "" : ` ${settled}`}`
  );
}

/**
 * Asks the tool of every call that started and did not finish (`interrupted`, `replay`) to
 * settle what is left of it (`AgentTool.settleInterrupted`: a command still running is stopped),
 * before anything runs; the sentence each says, by call id. A throw says nothing.
 */
export async function settleInterrupted(
  plan: RecoveryPlan,
  tools: readonly AgentTool<any, any>[],
): Promise<Map<string, string>> {
  const said = new Map<string, string>();
  for (const { call, action } of plan.calls) {
    if (action !== "interrupted" && action !== "replay") continue;
    const tool = tools.find((t) => t.name === call.name);
    if (tool?.settleInterrupted === undefined) continue;
    try {
      const text = await tool.settleInterrupted(call.id, call.arguments);
      if (typeof text === "string" && text !== "") said.set(call.id, text);
    } catch {
      // nothing to say
    }
  }
  return said;
}

/** The error text of a call that never started and was not run (the user declined recovery). */
export function notRunText(toolName: string): string {
  return `Tool call "${toolName}" was not run: the process stopped before it started. Run it again if it is still needed.`;
}

/** The `errorMessage` of an answer cut mid-stream. */
export const CUT_ANSWER = "the process stopped while this answer streamed; this is what had arrived";

/** The entries a run appends (see `mayNeedRecovery`): a `model_route` is written just before an answer. */
const RUN_ENTRY_TYPES: ReadonlySet<string> = new Set([
  "message",
  "tool_intent",
  "tool_outcome",
  "compaction",
  "model_route",
]);

/**
 * Whether `planRecovery` could find anything at the leaf of `store`: false when there is no kept
 * streamed answer and either the leaf is an entry a person wrote between runs (a label, a model
 * change: not a message, the journal or a compaction) or the leaf's last message is a finished
 * answer (an assistant message without tool calls, or an error or aborted one). The cheap check a resume makes first; true proves nothing.
 */
export async function mayNeedRecovery(store: DurableStore, stream?: StreamJournal): Promise<boolean> {
  if ((await stream?.load()) !== undefined) return true;
  const leaf = store.leaf;
  if (leaf === undefined) return false;
  // A run writes messages, its journal, compactions and routes. Any other last entry (a /fork or /label's
  // label, a /model change) was written by a person between runs: the place was moved on purpose,
  // even when it is now a question with no answer yet.
  if (!RUN_ENTRY_TYPES.has(leaf.type)) return false;
  const messages = transcriptOf(store.pathToLeaf(leaf.id)).messages;
  const last = messages[messages.length - 1];
  if (last === undefined || !("role" in last)) return false;
  if (last.role !== "assistant") return last.role === "user" || last.role === "toolResult";
  if (last.stopReason === "error" || last.stopReason === "aborted") return false;
  return last.content.some((block) => block.type === "toolCall");
}

/** Reads what a killed run left at the leaf of `store`. Changes nothing. */
export async function planRecovery(
  store: DurableStore,
  tools: readonly AgentTool<any, any>[],
  stream?: StreamJournal,
): Promise<RecoveryPlan> {
  // #region lab 19.1 planRecovery
  const leaf = store.leaf;
  const plan: RecoveryPlan = { leafId: leaf?.id, calls: [], unfinished: false };
  const streamed = await stream?.load();
  if (streamed !== undefined && streamed.parentId === (leaf?.id ?? null)) {
    plan.partial = { ...streamed.message, stopReason: "aborted", errorMessage: CUT_ANSWER };
  }
  if (leaf === undefined) {
    plan.unfinished = plan.partial !== undefined;
    return plan;
  }
  const path = store.pathToLeaf(leaf.id);
  const messages = transcriptOf(path).messages;
  const unanswered = answerInterruptedCalls(messages).added.filter((a) => a.atEnd);
  if (unanswered.length > 0) {
    const ids = new Set(unanswered.map((a) => a.message.toolCallId));
    const assistant = [...messages]
      .reverse()
      .find((m): m is AssistantMessage => "role" in m && m.role === "assistant") as AssistantMessage;
    const assistantEntry = path.find((e) => e.type === "message" && e.message === assistant)!;
    const marks = journalMarks(store, assistantEntry.id);
    for (const block of assistant.content) {
      if (block.type !== "toolCall" || !ids.has(block.id)) continue;
      const mark = marks.get(block.id);
      const tool = tools.find((t) => t.name === block.name);
      let action: RecoveryAction;
      if (mark?.outcome !== undefined) action = "recorded";
      else if (mark?.intent === undefined) action = "run";
      else action = tool?.replay === "safe" ? "replay" : "interrupted";
      plan.calls.push({ call: block, action, ...(mark?.outcome && { outcome: mark.outcome }) });
    }
  }
  const last = messages[messages.length - 1];
  const open = last !== undefined && "role" in last && (last.role === "user" || last.role === "toolResult");
  plan.unfinished = plan.partial !== undefined || plan.calls.length > 0 || open;
  return plan;
  // #endregion
}

/** The intent and outcome committed for each call id, among the entries below `assistantId`. */
function journalMarks(
  store: DurableStore,
  assistantId: string,
): Map<string, { intent?: ToolIntentEntry; outcome?: ToolOutcomeEntry }> {
  const marks = new Map<string, { intent?: ToolIntentEntry; outcome?: ToolOutcomeEntry }>();
  const below = new Map<string, boolean>(); // entry id → is it below the assistant message?
  const isBelow = (entry: SessionEntry): boolean => {
    const known = below.get(entry.id);
    if (known !== undefined) return known;
    const answer = store.pathToLeaf(entry.id).some((e) => e.id === assistantId);
    below.set(entry.id, answer);
    return answer;
  };
  for (const entry of store.entries()) {
    if (entry.type !== "tool_intent" && entry.type !== "tool_outcome") continue;
    if (!isBelow(entry)) continue;
    const mark = marks.get(entry.toolCallId) ?? {};
    if (entry.type === "tool_intent") mark.intent = entry;
    else mark.outcome = entry;
    marks.set(entry.toolCallId, mark);
  }
  return marks;
}

/** Options of `applyRecovery`. */
export interface ApplyRecoveryOptions {
  /** The tools to run calls with (wrapped by the journal, so reruns are journaled too). */
  tools: readonly AgentTool<any, any>[];
  /** False: the user declined; nothing runs (see the module comment). Default true. */
  run?: boolean;
  /** Stops a tool that recovery runs (its call then gets the interrupted result). */
  signal?: AbortSignal;
  /** The stream journal, cleared once the aborted answer is in the session. */
  stream?: StreamJournal;
  /**
   * The agent's tool hooks (`Agent.toolHooks`): a call recovery runs passes them as in a run, so a
   * call `beforeToolCall` would block is blocked here too (recovery-hooks.ts).
   */
  hooks?: RecoveryHooks;
}

/** Carries `plan` out: appends the aborted answer and one result per call after the plan's leaf. */
export async function applyRecovery(
  store: DurableStore,
  plan: RecoveryPlan,
  options: ApplyRecoveryOptions,
): Promise<RecoveryReport> {
  if (store.leaf?.id !== plan.leafId) {
    throw new Error("applyRecovery: the session changed since the plan was made; make a new plan with planRecovery");
  }
  if (options.hooks !== undefined) {
    const tools = underToolHooks(options.tools, options.hooks, store, plan.leafId, options.signal);
    options = { ...options, tools };
  }
  const settled = await settleInterrupted(plan, options.tools);
  // #region lab 19.2 applyRecovery
  const appended: AgentMessage[] = [];
  let place = plan.leafId ?? null;
  const record = async (message: AgentMessage) => {
    place = await store.append({ type: "message", parentId: place, message });
    appended.push(message);
  };
  if (plan.partial !== undefined) await record(plan.partial);
  await options.stream?.clear();
  const run = options.run ?? true;
  for (const { call, action, outcome } of plan.calls) {
    let content: ToolResultMessage["content"];
    let isError = true;
    let details: unknown;
    if (action === "recorded") {
      content = outcome!.content;
      isError = outcome!.isError;
    } else if (action === "interrupted" || (!run && action === "replay")) {
      content = [{ type: "text", text: uncertainText(call.name, settled.get(call.id)) }];
    } else if (!run) {
      content = [{ type: "text", text: notRunText(call.name) }];
    } else {
      const result = await runCall(call, options);
      content = result.content;
      isError = result.isError;
      details = result.details;
    }
    await record({
      role: "toolResult",
      toolCallId: call.id,
      toolName: call.name,
      content,
      ...(details !== undefined && { details }),
      isError,
      timestamp: Date.now(),
    });
  }
  return { plan, appended };
  // #endregion
}

/** Runs one call as the loop would: find, prepare and validate, execute; never throws. */
async function runCall(
  call: ToolCall,
  options: ApplyRecoveryOptions,
): Promise<{ content: ToolResultMessage["content"]; isError: boolean; details?: unknown }> {
  const tool = options.tools.find((t) => t.name === call.name);
  if (tool === undefined) {
    const names = options.tools.map((t) => t.name).join(", ") || "(none)";
    return {
      content: [{ type: "text", text: `Tool "${call.name}" not found. Available tools: ${names}.` }],
      isError: true,
    };
  }
  try {
    const args = prepareToolArguments(tool, call);
    if (options.signal?.aborted) throw new Error("recovery was stopped");
    const result = await tool.execute(call.id, args, options.signal);
    return { content: result.content, isError: result.isError === true, details: result.details };
  } catch (error) {
    if (options.signal?.aborted) return { content: [{ type: "text", text: uncertainText(call.name) }], isError: true };
    const text = error instanceof Error ? error.message || error.name : String(error);
    return { content: [{ type: "text", text }], isError: true };
  }
}

/** Options of `resumeRun`. */
export interface ResumeRunOptions {
  /** The stream journal of the session, if answers were kept while they streamed. */
  stream?: StreamJournal;
  /** Hears the plan before anything is changed; resolve false to decline (nothing runs, no continue). */
  confirm?: (plan: RecoveryPlan) => boolean | Promise<boolean>;
  signal?: AbortSignal;
}

/**
 * Attaches `store` to `agent` after recovering what a killed run left at its leaf, and, when the
 * run was unfinished and not declined, goes on with it (`agent.continue()`). Resolves with the
 * report (undefined when there was nothing to recover) once the resumed run has ended.
 */
export async function resumeRun(
  agent: Agent,
  store: DurableStore & Parameters<Agent["setSession"]>[0],
  options: ResumeRunOptions,
): Promise<RecoveryReport | undefined> {
  // the agent's tools: wrapped by the run's journal, so what recovery runs is journaled too
  const tools = agent.state.tools;
  if (!(await mayNeedRecovery(store, options.stream))) {
    agent.setSession(store);
    return undefined;
  }
  const plan = await planRecovery(store, tools, options.stream);
  if (!plan.unfinished) {
    agent.setSession(store);
    return undefined;
  }
  const accepted = options.confirm === undefined ? true : await options.confirm(plan);
  const report = await applyRecovery(store, plan, {
    tools,
    hooks: agent.toolHooks,
    run: accepted,
    ...(options.signal && { signal: options.signal }),
    ...(options.stream && { stream: options.stream }),
  });
  agent.setSession(store);
  if (accepted) await agent.continue();
  return report;
}
