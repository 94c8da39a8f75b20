/**
 * A durable run on the runtime (chapter 19): every tool call is journaled (intent before effect)
 * and the streamed answer kept, in the session in use; a session resumed after a crash has what
 * its killed run left recovered before the agent reads it (or, when a person is there to answer,
 * found and recovered once they have). Set up on the runtime by the durable feature (durable.ts).
 */
import { RunJournal } from "../../durable/journal.js";
import { applyRecovery, mayNeedRecovery, planRecovery, type RecoveryPlan } from "../../durable/recovery.js";
import { fileStreamJournal, streamPathOf } from "../../durable/store.js";
import type { SessionFile } from "../../session/session.js";
import type { AgentTool } from "../../types.js";
import type { Runtime, RuntimePart } from "../runtime.js";

/** How each unanswered call of a killed run stands, as a person reads it before recovery. */
const FOUND = {
  recorded: "finished before the crash, its result is recorded",
  run: "never started",
  replay: "interrupted, safe to repeat",
  interrupted: "interrupted, may or may not have taken effect",
} as const;

/** What a killed run left, in one line for a person, before anything is recovered (the interactive mode asks next). */
export function recoveryFound(plan: RecoveryPlan): string {
  const said: string[] = [];
  if (plan.partial !== undefined) said.push("an answer was cut mid-stream");
  for (const { call, action } of plan.calls) said.push(`${call.name} (${call.id}): ${FOUND[action]}`);
  return `the session's last run was killed mid-way: ${said.length > 0 ? said.join("; ") : "it had not ended"}`;
}

/**
 * Why a killed run was recovered without going on: `--no-recover` (the flag), or the person
 * answered no to the interactive mode's question.
 */
export type RecoveryDeclined = "flag" | "answer";

/** What recovery did, in one line for a person. */
export function recoveryNote(plan: RecoveryPlan, run: boolean, declined: RecoveryDeclined = "flag"): string {
  const said: string[] = [];
  if (plan.partial !== undefined) said.push("an answer cut mid-stream was kept as interrupted");
  const verbs = {
    recorded: "result recorded before the crash",
    run: run ? "never started, run now" : "never started, not run",
    replay: run ? "safe to repeat, run again" : "interrupted",
    interrupted: "interrupted, may or may not have taken effect",
  };
  for (const { call, action } of plan.calls) said.push(`${call.name} (${call.id}): ${verbs[action]}`);
  const then = run
    ? "the run goes on"
    : declined === "flag"
      ? "not continued (--no-recover)"
      : "recorded as it stands, nothing ran again; your next message goes on from there";
  return `the session's last run was killed mid-way: ${said.length > 0 ? said.join("; ") : "it had not ended"}; ${then}`;
}

/** The durable run of one runtime; see the module comment. */
export class DurableRun implements RuntimePart {
  /** Commits each tool call's intent and outcome, and the streamed answer, to the session in use. */
  readonly journal: RunJournal;
  /** The session being recovered (before it is attached). */
  private recovering: SessionFile | undefined;
  /**
   * What a killed run left in the session in use, found while asking and not yet recovered: the
   * session is attached as it is (its unanswered calls are answered as interrupted in memory
   * only) until `settle` records the recovery.
   */
  pending: RecoveryPlan | undefined;
  /**
   * Set while the runtime starts, when the killed run left calls to run with tools that are not
   * there yet (an MCP server's): the recovery waits for every part to start (`started`).
   */
  private waiting = false;
  /** Whether the runtime has started (every part's tools are there). */
  private up = false;

  /** `asks`: a person answers before a killed run is recovered (the interactive mode). */
  constructor(
    private readonly runtime: Runtime,
    private readonly asks: boolean,
  ) {
    this.journal = new RunJournal({
      // while a session is recovered, the calls recovery runs are journaled into it
      store: () => this.recovering ?? runtime.session,
      stream: () => (runtime.session === undefined ? undefined : fileStreamJournal(streamPathOf(runtime.session.path))),
    });
    // first after the session's recorder: a streamed answer is kept before any listener shows it
    runtime.agent.subscribe(this.journal.listener);
  }

  /** Every tool the model is given, journaled (the `code` tool and `tool_search` too). */
  wrapTools(tools: AgentTool<any, any>[]): AgentTool<any, any>[] {
    return this.journal.tools(tools);
  }

  /**
   * Recovers what a run killed mid-way left at the leaf of `session`, before the agent reads it:
   * the cut answer is recorded as aborted, each unanswered tool call gets its committed outcome,
   * runs (never started, or safe to replay), or is answered as interrupted. Tells what it did
   * through `notes`; with `--no-recover` nothing runs and the run is not continued.
   */
  async opening(session: SessionFile, notes: (text: string) => void): Promise<void> {
    this.pending = undefined;
    const { agent, options } = this.runtime;
    const stream = fileStreamJournal(streamPathOf(session.path));
    if (!(await mayNeedRecovery(session, stream))) return; // the common case: the last run ended
    const plan = await planRecovery(session, agent.state.tools, stream);
    if (!plan.unfinished) {
      await stream.clear();
      return;
    }
    const run = options.session?.noRecover !== true;
    if (run && !this.up && !this.asks && this.missesTools(plan)) {
      // e.g. an MCP tool: its server starts with the runtime, after the session is opened
      this.pending = plan;
      this.waiting = true;
      return;
    }
    if (run && this.asks) {
      // the interactive mode asks first (settle); --no-recover skips the question
      this.pending = plan;
      return;
    }
    this.recovering = session;
    try {
      await applyRecovery(session, plan, { tools: agent.state.tools, hooks: agent.toolHooks, run, stream });
    } finally {
      this.recovering = undefined;
    }
    notes(recoveryNote(plan, run));
    this.runtime.unfinished = run;
  }

  /** A recovery that waited for the tools the runtime starts is carried out now (see `waiting`). */
  async started(notes: (text: string) => void): Promise<void> {
    this.up = true;
    if (!this.waiting) return;
    this.waiting = false;
    await this.settle(true, notes);
  }

  /** Whether `plan` runs a call whose tool the agent does not have (yet). */
  private missesTools(plan: RecoveryPlan): boolean {
    const names = new Set(this.runtime.agent.state.tools.map((tool) => tool.name));
    return plan.calls.some(({ call, action }) => (action === "run" || action === "replay") && !names.has(call.name));
  }

  /**
   * Carries out the recovery `pending` found, once the person answered: `run` true recovers as
   * the other modes do (never-started and safe calls run) and marks the run to go on
   * (`runtime.unfinished`); false records it as it stands (no call runs; interrupted calls get
   * their error results) and the run does not go on. Tells what it did through `notes`.
   */
  async settle(run: boolean, notes: (text: string) => void): Promise<void> {
    const { session, agent } = this.runtime;
    const found = this.pending;
    this.pending = undefined;
    if (session === undefined || found === undefined) return;
    // e.g. an MCP tool whose server still starts in the background: recovery waits for it
    if (this.missesTools(found)) await this.runtime.whenReady();
    const stream = fileStreamJournal(streamPathOf(session.path));
    // planned again at the leaf it is applied to (reading is cheap; the tools may have grown since)
    const plan = await planRecovery(session, agent.state.tools, stream);
    if (!plan.unfinished) {
      await stream.clear();
      return;
    }
    await applyRecovery(session, plan, { tools: agent.state.tools, hooks: agent.toolHooks, run, stream });
    this.runtime.reload();
    notes(recoveryNote(plan, run, "answer"));
    this.runtime.unfinished = run;
  }
}
