/**
 * The `Agent`'s state and its reducer: every loop event passes through `reduceAgentEvent`
 * before any listener sees it, so a listener always finds the state as of its event (a
 * `message_end` listener finds the message in the transcript).
 *
 * The working state (`AgentDraft`) is mutable and private to the agent; readers get a frozen
 * `AgentState` snapshot (`snapshotOf`), copied at most once per change.
 */
import type { AgentEvent, AgentState } from "./types.js";
import type { AgentMessage, AgentTool, AssistantMessage } from "../types.js";
import type { Model } from "../model.js";

/** The agent's working state: what the reducer and the agent's setters change. */
export interface AgentDraft {
  systemPrompt: string | undefined;
  model: Model;
  tools: AgentTool<any, any>[];
  messages: AgentMessage[];
  isStreaming: boolean;
  streamingMessage: AssistantMessage | undefined;
  /** Replaced, never mutated: a snapshot may hold the old set. */
  pendingToolCalls: ReadonlySet<string>;
  errorMessage: string | undefined;
}

/** An empty set shared by every state with no tool call running (the reducer never mutates a set). */
export const NO_PENDING_CALLS: ReadonlySet<string> = new Set<string>();

/**
 * Applies one loop event to the state. Returns false for an event that must not reach the
 * listeners: a `tool_execution_update` for a call that is not running (already ended, or never
 * started), which would otherwise bring a finished call back to life in a UI.
 */
export function reduceAgentEvent(state: AgentDraft, event: AgentEvent): boolean {
  // #region lab 9.1 reduceAgentEvent
  switch (event.type) {
    case "message_start":
      if (event.message.role === "assistant") state.streamingMessage = event.message;
      return true;
    case "message_update":
      state.streamingMessage = event.message;
      return true;
    case "message_end":
      state.streamingMessage = undefined;
      state.messages.push(event.message);
      return true;
    case "tool_execution_start": {
      const pending = new Set(state.pendingToolCalls);
      pending.add(event.toolCallId);
      state.pendingToolCalls = pending;
      return true;
    }
    case "tool_execution_update":
      return state.pendingToolCalls.has(event.toolCallId);
    case "tool_execution_end": {
      const running = state.pendingToolCalls;
      if (!running.has(event.toolCallId)) return true;
      if (running.size === 1) {
        state.pendingToolCalls = NO_PENDING_CALLS;
      } else {
        const pending = new Set(running);
        pending.delete(event.toolCallId);
        state.pendingToolCalls = pending;
      }
      return true;
    }
    case "turn_end":
      if (event.message.stopReason === "error" || event.message.stopReason === "aborted") {
        state.errorMessage =
          event.message.errorMessage ?? `The turn ended with stopReason "${event.message.stopReason}".`;
      }
      return true;
    case "agent_end":
      state.streamingMessage = undefined;
      if (event.errorMessage !== undefined) state.errorMessage = event.errorMessage;
      return true;
    default:
      return true;
  }
  // #endregion
}

/**
 * A frozen snapshot of the state. `messages` is passed in so the agent can reuse one frozen
 * copy of the transcript until the transcript changes.
 */
export function snapshotOf(state: AgentDraft, messages: readonly AgentMessage[]): AgentState {
  const snapshot: {
    -readonly [K in keyof AgentState]: AgentState[K];
  } = {
    systemPrompt: state.systemPrompt,
    model: state.model,
    tools: state.tools,
    messages,
    isStreaming: state.isStreaming,
    pendingToolCalls: state.pendingToolCalls,
  };
  if (state.streamingMessage !== undefined) snapshot.streamingMessage = state.streamingMessage;
  if (state.errorMessage !== undefined) snapshot.errorMessage = state.errorMessage;
  return Object.freeze(snapshot);
}
