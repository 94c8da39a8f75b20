/**
 * Chapter 19: the run journal, the writing half of a durable run.
 *
 * - **Intent before effect** (`RunJournal.tools`): each tool is wrapped so that, before its
 *   `execute` is called, a `tool_intent` entry (call id, tool name, arguments) is committed to the
 *   session, and right after it returns (or throws) a `tool_outcome` entry with what it returned.
 *   If the intent cannot be written, the tool does not run (the call gets the write's error).
 *   After the run's abort no outcome is written: the loop has answered the call itself.
 * - **Decided outcomes** (`RunJournal.listener`): a call the loop answers without running it (a
 *   `beforeToolCall` that blocks it, an unknown tool, arguments its schema refuses) has its
 *   outcome committed at its `tool_execution_end`, which in a parallel batch comes before the
 *   other calls run: recovery then records that answer and never runs the call, whatever the
 *   moment the process died.
 * - **Streamed answers** (`RunJournal.listener`): each `message_update` of an assistant answer
 *   saves the answer so far to the stream journal before later listeners (what the user sees)
 *   get it; `message_end` clears it, after the session's own recorder wrote the message. The
 *   journal is asked for once per answer (`stream()` at `message_start`) and used for all of it.
 *
 * Messages themselves are recorded by the `Agent`'s session binding (chapter 11) at `message_end`,
 * as before: an assistant message, with its tool calls, is in the session before any of its tools
 * runs (the loop awaits the recording).
 *
 * Order of subscription matters: the agent's recorder first (it always is), then the journal's
 * listener, then everything that shows the run.
 *
 * (Chapter 19 gives this file whole, to read: the CLI runs through it on every run, so it cannot
 * be a construction site while the earlier chapters' CLI tests run. The labs are the recovery.)
 */
import type { AgentEvent } from "../agent/types.js";
import type { AgentTool, AgentToolResult } from "../types.js";
import type { DurableStore, StreamJournal } from "./store.js";

/** Where the journal writes; `store()` undefined (no session) writes nothing and runs tools as they are. */
export interface RunJournalOptions {
  /** The session in use now (a getter: a CLI can switch sessions between runs). */
  store: () => DurableStore | undefined;
  /** The stream journal of that session, if streamed answers are to be kept. */
  stream?: () => StreamJournal | undefined;
}

export class RunJournal {
  /** The answer streaming now: its journal, and the entry it continues. */
  private streaming: { journal: StreamJournal; parentId: string | null } | undefined;
  /** This run's call ids with an intent (the tool's wrapper writes their outcome) or a decided outcome. */
  private readonly journaled = new Set<string>();

  constructor(private readonly options: RunJournalOptions) {}

  /** `tools`, each wrapped by `wrap`. */
  tools(tools: readonly AgentTool<any, any>[]): AgentTool<any, any>[] {
    return tools.map((tool) => this.wrap(tool));
  }

  /**
   * The tool, with intent committed before its `execute` and outcome right after. The wrapper
   * inherits every other field of the tool (its prototype is the tool).
   */
  wrap<T extends AgentTool<any, any>>(tool: T): T {
    const journal = this;
    const wrapped = Object.create(tool) as T;
    // Every argument is passed on as it came (a tool may take more than the first four: the `code`
    // tool of chapter 16 needs the loop's execution context).
    const inner: AgentTool<any, any> = tool;
    wrapped.execute = async function execute(...args: Parameters<AgentTool<any, any>["execute"]>) {
      const [toolCallId, params, signal] = args;
      const store = journal.options.store();
      if (store === undefined) return inner.execute(...args);
      journal.journaled.add(toolCallId);
      await store.append({
        type: "tool_intent",
        parentId: store.leaf?.id ?? null,
        toolCallId,
        toolName: tool.name,
        arguments: params,
      });
      // stopped while the intent was written: the loop has answered the call as aborted; no effect
      signal?.throwIfAborted();
      let result: AgentToolResult<unknown>;
      try {
        result = await inner.execute(...args);
      } catch (error) {
        // After an abort the loop has answered the call already (and recorded that answer): a late
        // outcome would become the file's last line on a side branch, and a resume follows the last
        // line. The check and the append's parentId are in one synchronous step.
        if (signal?.aborted) throw error;
        const text = error instanceof Error ? error.message || error.name : String(error);
        await store.append({
          type: "tool_outcome",
          parentId: store.leaf?.id ?? null,
          toolCallId,
          toolName: tool.name,
          content: [{ type: "text", text }],
          isError: true,
        });
        throw error;
      }
      if (signal?.aborted) return result; // see above: the loop ignores a late result
      await store.append({
        type: "tool_outcome",
        parentId: store.leaf?.id ?? null,
        toolCallId,
        toolName: tool.name,
        content: result.content,
        isError: result.isError === true,
      });
      return result;
    };
    return wrapped;
  }

  /**
   * Subscribe it to the agent right after creating it (before any listener that shows the run):
   * it keeps each streamed answer in the stream journal before it is shown.
   */
  readonly listener = (event: AgentEvent, signal?: AbortSignal): Promise<void> | undefined => {
    if (event.type === "tool_execution_end") return this.decided(event, signal);
    if (event.type === "agent_end") this.journaled.clear();
    if (event.type === "message_start" && event.message.role === "assistant") {
      // one journal for the whole answer: a file journal keeps what it wrote, to append only what changed
      const journal = this.options.stream?.();
      this.streaming =
        journal === undefined ? undefined : { journal, parentId: this.options.store()?.leaf?.id ?? null };
      return undefined;
    }
    const streaming = this.streaming;
    if (streaming === undefined) return undefined;
    if (event.type === "message_update") {
      return streaming.journal.save({ parentId: streaming.parentId, message: event.message });
    }
    if (event.type === "message_end" && event.message.role === "assistant") {
      this.streaming = undefined;
      return streaming.journal.clear();
    }
    return undefined;
  };

  /**
   * Commits the outcome of a call the loop answered without running its tool (the first answer
   * of its id in this run; nested calls are their script's business). Not after an abort: the
   * loop answers every call itself then.
   */
  private async decided(
    event: Extract<AgentEvent, { type: "tool_execution_end" }>,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    if (event.parentToolCallId !== undefined || this.journaled.has(event.toolCallId) || signal?.aborted) return;
    const store = this.options.store();
    if (store === undefined) return;
    this.journaled.add(event.toolCallId);
    await store.append({
      type: "tool_outcome",
      parentId: store.leaf?.id ?? null,
      toolCallId: event.toolCallId,
      toolName: event.toolName,
      content: event.result.content,
      isError: event.isError,
    });
  }
}
