/**
 * The `Agent` with a session and a context budget (chapter 11): the wiring of chapters 09–11.
 *
 * - **Resume**: `attach(store)` sets the transcript to `transcriptOf(pathToLeaf(place))`: with a
 *   compaction on the path, the newest summary (a user message), the entries it kept, the rest.
 *   The agent's place in the tree starts at the session's leaf (or the entry given).
 * - **Record**: an internal listener, subscribed before every other, appends each `message_end`
 *   message as a child of the previous entry, awaiting each write, so a later listener finds the
 *   message on disk and the run ends only once every message is written. If a write fails, the
 *   message stays in the transcript, the run is aborted (it still ends well formed), and
 *   `prompt()`/`continue()` reject with a `SessionWriteError` listing the messages the session
 *   does not hold; further runs are refused until `setSession` is called again.
 * - **Project**: before every model call, the user's `transformContext` (if any), then
 *   `projectMessages` to the budget; `onProjection` gets the projection (with `overflow` when
 *   even the newest interaction does not fit: it is sent whole, never cut).
 * - **Compact**: at the start of a run (before `agent_start`, so never while a tool call is
 *   pending, and never under a run's feet), when the context reached `compactAt × budget`,
 *   `compact()` runs on the agent's place in the session; on success the transcript restarts
 *   from the new summary. `onCompaction` gets the report, done or failed; a failure appends
 *   nothing and the run goes on with the projection alone.
 */
import { PiCourseError } from "../base/errors.js";
import type { LoopStart, AgentRun, Subscription } from "./agent-run.js";
import { messageOf } from "./tools.js";
import type { AgentDraft } from "./agent-state.js";
import { compact } from "../session/compaction.js";
import type { CompactableSession, CompactionResult } from "../session/compaction.js";
import { projectMessages, transcriptOf } from "../session/context.js";
import { answerInterruptedCalls } from "../session/interrupted.js";
import { countTokens, estimateTokens } from "../session/token-estimate.js";
import type { AgentCompactionReport, AgentContextBudget, AgentLoopConfig, AgentSessionStore } from "./types.js";
import type { AgentContext, AgentMessage } from "../types.js";
import type { CompactionEntry, ModelRouteEntry } from "../session/types.js";

/** `prompt()`/`continue()` rejects with this, once the run has ended, when the session refused a write. */
export class SessionWriteError extends PiCourseError {
  override name = "SessionWriteError";
  /** Stable: `"SESSION_WRITE"`. */
  override readonly code = "SESSION_WRITE";
  constructor(
    /** The messages of the transcript the session does not hold, oldest first. */
    readonly unsaved: readonly AgentMessage[],
    cause: unknown,
  ) {
    super(
      `The session refused a write (${messageOf(cause)}), so the run was stopped; ${unsaved.length} message(s) ` +
        `are in agent.state.messages (and in this error's "unsaved") but not in the session. Further runs are ` +
        `refused: attach a session again with agent.setSession(…) (a reopened file resumes from what it holds), ` +
        `or agent.setSession(undefined) to go on without one.`,
      { cause },
    );
  }
}

/** What the keeper needs of its agent. */
export interface KeeperHost {
  readonly draft: AgentDraft;
  changed(messages: boolean): void;
}

export class SessionKeeper {
  private store: AgentSessionStore | undefined;
  /** The entry the agent continues from (undefined: the session is empty). */
  private place: string | undefined;
  /** Transcript index from which assistant usage is trusted (see `usageAnchor`). */
  private usageFrom = 0;
  /** The last projection dropped messages: the next answer's usage is not the transcript's. */
  private trimmed = false;
  private systemPrompt: string | undefined;
  private failure: SessionWriteError | undefined;
  /** Whether the current run's failure was already thrown. */
  private reported = true;
  private run: AgentRun | undefined;
  /** Synthetic results for interrupted calls at the end of the loaded path, not yet in the session. */
  private unrecorded: AgentMessage[] = [];
  /** Entries to write on the agent's path just before the next message (see `note`). */
  private notes: Omit<ModelRouteEntry, "id" | "timestamp" | "parentId">[] = [];
  /** The recording listener; the agent subscribes it first while a session is attached. */
  readonly subscription: Subscription = {
    listener: (event) => (event.type === "message_end" ? this.record(event.message) : undefined),
  };

  constructor(
    private readonly host: KeeperHost,
    private budget: AgentContextBudget | undefined,
  ) {
    if (budget !== undefined) checkBudget(budget);
  }

  /**
   * Writes `entry` (a `model_route`: which real model answered) on the agent's path just before the next
   * message recorded, so it sits at its place in the run (a route heard while an answer streams
   * comes right before that answer). Nothing without a session; dropped by `attach`.
   */
  note(entry: Omit<ModelRouteEntry, "id" | "timestamp" | "parentId">): void {
    if (this.store !== undefined) this.notes.push(entry);
  }

  /** Appends the pending notes in order, each the next one's parent. A failure stops the run, as `record`'s does. */
  private async writeNotes(): Promise<void> {
    const store = this.store;
    for (const entry of this.notes.splice(0)) {
      if (store === undefined || this.failure !== undefined) return;
      try {
        this.place = await store.append({ ...entry, parentId: this.place ?? null });
      } catch (error) {
        this.failure = new SessionWriteError([], error);
        this.run?.controller.abort(this.failure);
      }
    }
  }

  /** Replaces the budget (e.g. to follow a newly chosen model's context window). Checked as at construction. */
  setBudget(budget: AgentContextBudget | undefined): void {
    if (budget !== undefined) checkBudget(budget);
    this.budget = budget;
  }

  get session(): AgentSessionStore | undefined {
    return this.store;
  }

  /** True when runs need the keeper: a session or a budget. */
  get active(): boolean {
    return this.store !== undefined || this.budget !== undefined;
  }

  /** Throws while a write failure is unresolved (see `SessionWriteError`). */
  refuseIfBroken(what: string): void {
    if (this.failure !== undefined) {
      throw new Error(`Agent.${what}: refused, the session stopped taking writes: ${this.failure.message}`);
    }
  }

  /**
   * Attaches `store` (or detaches with undefined: the transcript stays as it is) and sets the
   * transcript from the store's path to `leafId` (default: its leaf).
   */
  attach(store: AgentSessionStore | undefined, leafId?: string): void {
    // #region lab 11.5 SessionKeeper.attach
    // read first: a bad leaf or a malformed path throws before anything changes
    const place = leafId ?? store?.leaf?.id;
    const transcript = store === undefined || place === undefined ? undefined : transcriptOf(store.pathToLeaf(place));
    this.failure = undefined;
    this.trimmed = false;
    this.unrecorded = [];
    this.store = store;
    this.place = place;
    if (store === undefined) return; // detached: the transcript, and what usage is trusted in it, stay
    this.usageFrom = transcript?.usageFrom ?? 0;
    this.host.draft.messages = transcript?.messages ?? [];
    this.host.changed(true);
    // #endregion
    this.notes = []; // routes noted for the previous session are not this one's
    this.answerInterrupted();
  }

  /**
   * Gives each tool call of the loaded transcript that has no result (a crash while the tool ran)
   * an error result saying it was interrupted (see session/interrupted.ts). Results at the end of
   * the path are appended to the session at the start of the next run, before anything else;
   * results inside the path (a file where a later prompt followed the crash) cannot be appended
   * there, so they are given again at every load, identically.
   */
  private answerInterrupted(): void {
    const draft = this.host.draft;
    const { messages, added } = answerInterruptedCalls(draft.messages);
    if (added.length === 0) return;
    this.usageFrom += added.filter((a) => a.index < this.usageFrom).length;
    this.unrecorded = added.filter((a) => a.atEnd).map((a) => a.message);
    draft.messages = messages;
    this.host.changed(true);
  }

  /** Runs `start` as one run of the agent, with projection, compaction and recording. */
  async execute(run: AgentRun, start: LoopStart, config: AgentLoopConfig): Promise<void> {
    this.run = run;
    this.reported = false;
    // what a load gave interrupted calls goes to the session first (a failure stops the run)
    for (const message of this.unrecorded.splice(0)) await this.record(message);
    if (this.budget !== undefined) config.transformContext = this.projector(config.transformContext);
    const started: LoopStart = async (context, loopConfig, sink, signal) => {
      this.systemPrompt = context.systemPrompt;
      await this.compactIfDue(context, signal);
      return start(context, loopConfig, sink, signal);
    };
    let thrown: unknown;
    try {
      await run.execute(started, config);
    } catch (error) {
      thrown = error;
    } finally {
      this.run = undefined;
    }
    if (this.failure !== undefined && !this.reported) {
      this.reported = true;
      this.host.draft.errorMessage = this.failure.message;
      this.host.changed(false);
      throw this.failure;
    }
    if (thrown !== undefined) throw thrown;
  }

  /** Appends one message after the previous entry. Never rejects: a failure stops the run. */
  private async record(message: AgentMessage): Promise<void> {
    await this.writeNotes();
    // #region lab 11.5 SessionKeeper.record
    const draft = this.host.draft;
    if (message.role === "assistant" && this.trimmed) this.usageFrom = draft.messages.length;
    const store = this.store;
    if (store === undefined) return;
    if (this.failure !== undefined) {
      (this.failure.unsaved as AgentMessage[]).push(message);
      return;
    }
    try {
      this.place = await store.append({ type: "message", parentId: this.place ?? null, message });
    } catch (error) {
      this.failure = new SessionWriteError([message], error);
      this.run?.controller.abort(this.failure);
    }
    // #endregion
  }

  /** The run's `transformContext`: the user's first, then the projection to the budget. */
  private projector(user: AgentLoopConfig["transformContext"]): NonNullable<AgentLoopConfig["transformContext"]> {
    const budget = this.budget!;
    return async (messages, signal) => {
      // #region lab 11.5 SessionKeeper.projector
      const input = user === undefined ? messages : await user(messages, signal);
      if (!Array.isArray(input)) throw new TypeError("transformContext must return an array of messages");
      const projection = projectMessages(input, {
        budget: budget.budget,
        systemPrompt: this.systemPrompt,
        estimator: budget.estimator ?? estimateTokens,
        usageFrom: usageAnchor(messages, input, this.usageFrom),
      });
      this.trimmed = projection.firstKept > 0;
      budget.onProjection?.(projection);
      return projection.context.messages;
      // #endregion
    };
  }

  /** Compacts the session when the context reached the threshold; see the module comment. */
  private async compactIfDue(context: AgentContext, signal: AbortSignal): Promise<void> {
    const budget = this.budget;
    const store = this.store;
    if (budget === undefined || store === undefined || budget.compactAt === false || this.place === undefined) return;
    // #region lab 11.5 SessionKeeper.compactIfDue
    const draft = this.host.draft;
    const estimator = budget.estimator ?? estimateTokens;
    const threshold = (budget.compactAt ?? DEFAULT_COMPACT_AT) * budget.budget;
    const tokensBefore = this.tokens(draft.messages, this.usageFrom);
    if (tokensBefore < threshold) return;
    const keeper = this;
    const view: CompactableSession = {
      get leaf() {
        return keeper.place;
      },
      pathToLeaf: (id) => store.pathToLeaf(id),
      append: (entry) => store.append(entry),
    };
    let result: CompactionResult;
    try {
      result = await compact(view, {
        model: budget.summaryModel ?? draft.model,
        keepRecentTokens: budget.keepRecentTokens ?? Math.floor(budget.budget / 4),
        ...(budget.summarize && { summarize: budget.summarize }),
        ...(this.systemPrompt !== undefined && { systemPrompt: this.systemPrompt }),
        estimator,
        // The summary must fit beside the kept messages.
        maxSummaryTokens: Math.max(1, budget.budget - (budget.keepRecentTokens ?? Math.floor(budget.budget / 4))),
        signal,
      });
    } catch (error) {
      result = { ok: false, reason: { kind: "summary_failed", message: `compact threw: ${messageOf(error)}` } };
    }
    let report: AgentCompactionReport;
    if (result.ok) {
      this.place = result.entryId;
      const path = store.pathToLeaf(result.entryId);
      const transcript = transcriptOf(path);
      this.usageFrom = transcript.usageFrom;
      this.trimmed = false;
      draft.messages = transcript.messages;
      context.messages = transcript.messages;
      this.answerInterrupted();
      context.messages = draft.messages;
      this.host.changed(true);
      const entry = path[path.length - 1] as CompactionEntry;
      report = {
        ok: true,
        tokensBefore,
        tokensAfter: this.tokens(transcript.messages, transcript.usageFrom),
        threshold,
        entry,
      };
    } else {
      report = { ok: false, tokensBefore, threshold, reason: result.reason };
    }
    budget.onCompaction?.(report);
    // #endregion
  }

  /** The estimator's count of the system prompt and the whole transcript. */
  private tokens(messages: readonly AgentMessage[], usageFrom: number): number {
    const estimator = this.budget?.estimator ?? estimateTokens;
    const counts = countTokens(
      estimator,
      { systemPrompt: this.systemPrompt, messages, usageFrom },
      "Agent contextBudget",
    );
    let total = counts.systemPrompt;
    for (const n of counts.messages) total += n;
    return total;
  }
}

/** Default `compactAt`: compact once the context reaches 80% of the budget. */
export const DEFAULT_COMPACT_AT = 0.8;

/**
 * `usageFrom` carried from the run's transcript to what the user's `transformContext` returned:
 * just after the same message object there, or (if it was dropped) nothing trusted.
 */
function usageAnchor(original: readonly AgentMessage[], input: readonly AgentMessage[], usageFrom: number): number {
  if (usageFrom === 0) return 0;
  if (input === original) return usageFrom;
  const at = input.lastIndexOf(original[usageFrom - 1]!);
  return at >= 0 ? at + 1 : input.length;
}

/** Refuses a malformed budget when the agent is built. */
function checkBudget(budget: AgentContextBudget): void {
  const { budget: tokens, compactAt, keepRecentTokens } = budget;
  if (typeof tokens !== "number" || !(tokens > 0) || tokens === Infinity) {
    throw new TypeError(`Agent: contextBudget.budget must be a finite number of tokens > 0, got ${String(tokens)}.`);
  }
  if (
    compactAt !== undefined &&
    compactAt !== false &&
    !(typeof compactAt === "number" && compactAt > 0 && compactAt <= 1)
  ) {
    throw new TypeError(
      `Agent: contextBudget.compactAt must be a fraction in (0, 1] or false, got ${String(compactAt)}.`,
    );
  }
  if (
    keepRecentTokens !== undefined &&
    !(typeof keepRecentTokens === "number" && keepRecentTokens >= 0 && keepRecentTokens < Infinity)
  ) {
    throw new TypeError(
      `Agent: contextBudget.keepRecentTokens must be a finite number >= 0, got ${String(keepRecentTokens)}.`,
    );
  }
}

/** Refuses anything that is not a session store, with what to pass instead. */
export function checkStore(store: unknown): asserts store is AgentSessionStore | undefined {
  if (store === undefined) return;
  const s = store as Partial<AgentSessionStore> | null;
  if (typeof s !== "object" || s === null || typeof s.pathToLeaf !== "function" || typeof s.append !== "function") {
    throw new TypeError(
      "Agent.setSession: expected a session (a SessionFile from SessionFile.create/open), or undefined for none.",
    );
  }
}
