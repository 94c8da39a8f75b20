/**
 * What the loop takes from user code, read once and checked before it is used: a model's
 * message, a tool's result, a queue getter's messages. Each reader is total: whatever it is given
 * (getters that throw, a Proxy, the wrong shape) it returns the value or says what is wrong,
 * and never throws. Plus the one repair the loop makes to a model's message: unique call ids.
 */
import { messageOf } from "./tools.js";
import type { AgentMessage, AgentToolResult, AssistantMessage, ToolCall } from "../types.js";

const STOP_REASONS: ReadonlySet<unknown> = new Set(["stop", "length", "toolUse", "error", "aborted"]);

/**
 * What is wrong with a model's message, checked before it is reported (the partial) or recorded
 * (the final one, `final`); undefined if nothing. Reads every field the loop reads later, so that
 * a message whose getters throw (or a Proxy) is refused here, once: never throws.
 */
export function malformation(message: unknown, final = true): string | undefined {
  try {
    if (typeof message !== "object" || message === null) return "it is not an object";
    const m = message as Partial<AssistantMessage>;
    if (m.role !== "assistant") return `its role is ${show(m.role)}, not "assistant"`;
    const content: unknown = m.content;
    if (!final) return undefined; // a partial may still be odd; the final message decides
    if (!Array.isArray(content)) return "its content is not an array";
    if (!STOP_REASONS.has(m.stopReason)) {
      return `its stopReason ${show(m.stopReason)} is not one of stop, length, toolUse, error, aborted`;
    }
    for (const block of content as unknown[]) {
      if (typeof block !== "object" || block === null) return "a content block is not an object";
      const b = block as Partial<ToolCall>;
      if (b.type !== "toolCall") continue;
      if (typeof b.id !== "string" || typeof b.name !== "string") return "a tool call has no string id or name";
      void b.arguments;
      void b.argumentsError;
      void b.rawArguments;
    }
    return undefined;
  } catch (error) {
    return `it cannot be read (${messageOf(error)})`;
  }
}

/** A value in a message, for an error text (never throws). */
function show(value: unknown): string {
  try {
    return typeof value === "string" ? JSON.stringify(value) : String(value);
  } catch {
    return "(unreadable)";
  }
}

/**
 * What a tool resolved to, read once into a plain result; a string says what is wrong with it.
 * Never throws: a result whose getters throw (or a Proxy) is reported, not propagated.
 */
export function readToolResult(value: unknown): AgentToolResult<unknown> | string {
  const expected = "execute must resolve to {content, details}";
  try {
    if (typeof value !== "object" || value === null) return `returned no valid result: ${expected}.`;
    const { content, details, isError, terminate } = value as AgentToolResult<unknown>;
    if (!Array.isArray(content)) return `returned no valid result: ${expected}.`;
    const result: AgentToolResult<unknown> = { content: [...content], details };
    if (isError !== undefined && isError !== null) result.isError = isError === true;
    if (terminate !== undefined && terminate !== null) result.terminate = terminate === true;
    const declareTools: unknown = (value as AgentToolResult<unknown>).declareTools;
    if (Array.isArray(declareTools)) result.declareTools = declareTools.filter((name) => typeof name === "string");
    return result;
  } catch (error) {
    return `returned a result that cannot be read (${messageOf(error)}): ${expected}, as plain data.`;
  }
}

/**
 * Two tool calls of one message with the same id: providers refuse a transcript in which two
 * calls, or two results, share an id (OpenAI: "Duplicate value for 'tool_call_id'"; Anthropic:
 * tool_use ids must be unique), so answering both under one id would break the next request.
 * The first call keeps its id and runs; each repeat gets a fresh id (`<id>_dup1`, `<id>_dup2`, …,
 * unused in the message) in a copy of the message, and the batch answers it with an error result
 * without running it. The result: one call, one id, one start/end, one result, on every wire.
 * Sets `run.repeatedCalls` for the batch (fresh id → repeated id; undefined when none).
 */
export function withUniqueCallIds(
  run: { repeatedCalls: ReadonlyMap<string, string> | undefined },
  message: AssistantMessage,
): AssistantMessage {
  run.repeatedCalls = undefined;
  let calls = 0;
  for (const block of message.content) if (block.type === "toolCall") calls++;
  if (calls < 2) return message; // the common case, without a set
  const ids = new Set<string>();
  let repeats = 0;
  for (const block of message.content) {
    if (block.type !== "toolCall") continue;
    if (ids.has(block.id)) repeats++;
    ids.add(block.id);
  }
  if (repeats === 0) return message;
  const repeated = new Map<string, string>();
  const seen = new Set<string>();
  const content = message.content.map((block) => {
    if (block.type !== "toolCall") return block;
    if (!seen.has(block.id)) {
      seen.add(block.id);
      return block;
    }
    let k = 1;
    while (ids.has(`${block.id}_dup${k}`)) k++;
    const id = `${block.id}_dup${k}`;
    ids.add(id);
    repeated.set(id, block.id);
    return { ...block, id };
  });
  run.repeatedCalls = repeated;
  return { ...message, content };
}

/** A getter's answer as a fresh array of messages, or what is wrong with it (never throws). */
export function readMessages(value: unknown): AgentMessage[] | string {
  if (value === undefined || value === null) return [];
  try {
    if (!Array.isArray(value)) return "it must return an array of messages";
    const messages = [...(value as unknown[])];
    for (const message of messages) {
      if (typeof message !== "object" || message === null || typeof (message as AgentMessage).role !== "string") {
        return "it returned something that is not a message (an object with a role)";
      }
    }
    return messages as AgentMessage[];
  } catch (error) {
    return `it returned messages that cannot be read (${messageOf(error)})`;
  }
}
