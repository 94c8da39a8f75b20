/**
 * The composition root of `npm start`: the one place where the parts of the library are put
 * together (model, coding tools, `Agent`, session file), whatever the mode.
 *
 * A conversation is an `Agent` plus, unless `--no-session`, one session file of the sessions
 * folder (sessions.ts), attached to the agent (`agent.setSession`, chapter 11): the transcript is
 * the file's path to its leaf (the newest compaction's summary first), and each message, once
 * the agent has it (`message_end`), is appended as a child of the previous one before the run
 * goes on. A failed append stops the run and `prompt()` rejects with a `SessionWriteError`, so
 * what is on disk is a prefix of what was said, and the rest is named, never silently lost.
 */
import path from "node:path";
import { rm } from "node:fs/promises";
import { Agent } from "../agent/agent.js";
import { commandEnvironment, createCodingTools } from "../coding-tools/index.js";
import { SessionFile } from "../session/session.js";
import { composeSystemPrompt, resourceTools, type Resources } from "../resources/resources.js";
import type { AgentMessage, AgentTool, Message } from "../types.js";
// #region ch15
import { exposeTools } from "./tool-exposure.js";
// #endregion
import type { Model } from "../model.js";
import type { RunOptions } from "./run-options.js";
import { createDemoModel, createDemoWorkspace } from "./demo.js";
import { withPairingCheck } from "./pairing.js";
import { SessionFolder, type SessionSummary } from "./sessions.js";
import { createServerModel } from "./runtime-model.js";
// #region ch17
import { McpServers } from "../mcp/servers.js";
// #endregion
// #region ch18
import { ModelCatalogue } from "../model-choice/catalogue.js";
import { loadModelsFile } from "../model-choice/models-file.js";
import type { RouteReport } from "../model-choice/virtual-model.js";
import type { ThinkingLevel } from "../model.js";
import type { ModelChangeEntry, ModelRouteEntry } from "../session/types.js";
import { setUpModel, type ModelSetup } from "./model-setup.js";
// #endregion
// #region ch19
import { RunJournal } from "../durable/journal.js";
import { applyRecovery, mayNeedRecovery, planRecovery, type RecoveryPlan } from "../durable/recovery.js";
import { fileStreamJournal, streamPathOf } from "../durable/store.js";
// #endregion

/**
 * What a person should know about a session file before going on with it: torn lines (a crash
 * mid-write) that are skipped and kept, and a compaction that starts the transcript.
 */
export function sessionNotes(session: SessionFile): string[] {
  const notes: string[] = [];
  const { tail, kept } = session.recovery;
  if (tail !== null) {
    notes.push(
      `the session file ends in a torn line (${tail.length} bytes on line ${tail.line}, a crash mid-write?); ` +
        "it is skipped, and kept in the file",
    );
  }
  if (kept.length > 0) notes.push(`${kept.length} torn line(s) of earlier crashes are skipped`);
  const leaf = session.leaf;
  if (leaf !== undefined && session.pathToLeaf(leaf.id).some((entry) => entry.type === "compaction")) {
    notes.push("earlier messages are condensed into a summary (/compact)");
  }
  return notes;
}

// #region ch19
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
// #endregion

export const SYSTEM_PROMPT = (workspace: string): string =>
  `You are a careful coding agent working in the folder ${workspace}. ` +
  `Use the tools (read, write, edit, ls, bash) to inspect and change files there; paths are ` +
  `relative to that folder. Read before you edit, check your work by running it, and finish ` +
  `with a short answer that says what you did.`;

/** The messages a model reads: the canonical roles; the break-it experiment drops the first tool result. */
function toLlm(dropToolResult: boolean) {
  return (messages: AgentMessage[]): Message[] => {
    const canonical = messages.filter(
      (m): m is Message => "role" in m && (m.role === "user" || m.role === "assistant" || m.role === "toolResult"),
    );
    if (!dropToolResult) return canonical;
    const first = canonical.findIndex((m) => m.role === "toolResult");
    return first === -1 ? canonical : canonical.filter((_, i) => i !== first);
  };
}

/** The model `options` name: the demo's scripted model, or a server's (`modelId` replaces its id). */
export function createModel(options: RunOptions, demoDelayMs: number, modelId?: string): Model {
  const server = options.server;
  if (server === undefined) return createDemoModel({ delayMs: demoDelayMs });
  return createServerModel(options, modelId ?? server.model);
}

/**
 * What the caller wires in besides `options`: the project's resources (`npm start` loads them
 * after the trust decision), and for callers other than `npm start` (the eval harness of chapter
 * 14 runs every case through this same composition root) a model of its own (a case's script),
 * the workspace, a turn limit, and the environment the commands start from. Each replaces what
 * `options` would give.
 */
export interface RuntimeWiring {
  /** The project around the agent (context files, skills, templates, extensions), if loaded. */
  resources?: Resources;
  model?: Model;
  workspace?: string;
  maxTurns?: number;
  env?: NodeJS.ProcessEnv;
  // #region ch19
  /**
   * Ask before recovering a killed run (the interactive mode): `resume` then only finds what the
   * run left (`pendingRecovery`), and `settleRecovery` carries it out once the person has answered.
   * Without it (the other modes) recovery is done at once, and goes on unless `--no-recover`.
   */
  askRecovery?: boolean;
  // #endregion
}

/** The wired conversation: agent, workspace, and the session file in use. */
export class Runtime {
  readonly agent: Agent;
  /** The session in use (undefined with `--no-session`). */
  session: SessionFile | undefined;
  /** Session files this runtime created (removed at close while still empty). */
  private readonly created = new Set<SessionFile>();
  // #region ch17
  /** The MCP servers of `options.mcpServers` (undefined when none is configured). */
  mcp: McpServers | undefined;
  // #endregion
  /** The project around the agent (context files, skills, templates, extensions), if loaded. */
  readonly resources: Resources | undefined;
  // #region ch15
  /** The CLI's own tools (coding tools, the skill tool): always declared. */
  private readonly ownTools: AgentTool<any, any>[];
  // #endregion
  // #region ch18
  /** The models the runtime knows by name (built in, plus `~/.pi-course/models.json`). */
  catalogue: ModelCatalogue = ModelCatalogue.builtin();
  /** The model in use as chosen (undefined when the caller wired in a model of its own). */
  choice: ModelSetup | undefined;
  /** Hears what a person should know while the conversation goes on (a fallback, a model's notice). */
  onNotice: (text: string) => void = () => {};
  // #endregion
  // #region ch19
  /** Commits each tool call's intent and outcome, and the streamed answer, to the session in use. */
  readonly journal = new RunJournal({
    // while a session is recovered, the calls recovery runs are journaled into it
    store: () => this.recovering ?? this.session,
    stream: () => (this.session === undefined ? undefined : fileStreamJournal(streamPathOf(this.session.path))),
  });
  /** The resumed session's run was killed mid-way and recovered: it is to go on (`agent.continue()`). */
  unfinished = false;
  /** The session being recovered (before it is attached). */
  private recovering: SessionFile | undefined;
  /** Ask before recovering (`RuntimeWiring.askRecovery`). */
  private readonly askRecovery: boolean;
  /**
   * What a killed run left in the session in use, found while asking (`askRecovery`) and not yet
   * recovered: the session is attached as it is (its unanswered calls are answered as interrupted
   * in memory only) until `settleRecovery` records the recovery.
   */
  pendingRecovery: RecoveryPlan | undefined;
  // #endregion

  private constructor(
    readonly options: RunOptions,
    readonly workspace: string,
    readonly folder: SessionFolder | undefined,
    model: Model,
    wiring: RuntimeWiring = {},
  ) {
    // Commands the model runs never see the API key: secret-looking variables are dropped, also
    // the variable named by --api-key-env, and any other holding the key in use.
    const server = options.server;
    const commandEnv = commandEnvironment(
      wiring.env ?? process.env,
      server?.apiKeyEnv === undefined ? [] : [server.apiKeyEnv],
    );
    for (const name of Object.keys(commandEnv)) {
      if (server?.apiKey !== undefined && commandEnv[name] === server.apiKey) delete commandEnv[name];
    }
    // #region ch18
    // The keys a catalogue name picked (one per provider of a fallback list): by name and by value.
    const keys = server?.keys ?? {};
    for (const name of Object.keys(commandEnv)) {
      if (name in keys || Object.values(keys).includes(commandEnv[name]!)) delete commandEnv[name];
    }
    // #endregion
    const tools = createCodingTools(workspace, { bash: { env: commandEnv } });
    const resources = wiring.resources;
    this.resources = resources;
    let initialTools = resources === undefined ? tools : [...tools, ...resourceTools(resources)];
    // #region ch15
    this.ownTools = initialTools;
    const exposure: { codemode?: boolean } = {};
    // #region ch16
    exposure.codemode = options.codemode;
    // #endregion
    initialTools = exposeTools(initialTools, [], exposure).tools;
    // #endregion
    const host = resources?.extensions;
    this.agent = new Agent({
      initialState: {
        systemPrompt:
          resources === undefined ? SYSTEM_PROMPT(workspace) : composeSystemPrompt(SYSTEM_PROMPT(workspace), resources),
        model: withPairingCheck(model),
        tools: this.wrapTools(initialTools),
      },
      convertToLlm: toLlm(options.dropToolResult),
      // extension hooks (fail closed before a call; an after-hook's failure is only reported)
      ...(host?.hasBeforeHooks === true && { beforeToolCall: host.beforeToolCall }),
      ...(host?.hasAfterHooks === true && { afterToolCall: host.afterToolCall }),
      ...(options.contextTokens !== undefined && { contextBudget: { budget: options.contextTokens } }),
      ...(wiring.maxTurns !== undefined && { maxTurns: wiring.maxTurns }),
    });
    // #region ch19
    // first after the session's recorder: a streamed answer is kept before any listener shows it
    this.agent.subscribe(this.journal.listener);
    this.askRecovery = wiring.askRecovery === true;
    // #endregion
  }

  /**
   * The tools as the agent runs them, each call journaled (intent before effect) for a durable run. Applied
   * once, to the whole list the model is given, so the `code` tool and `tool_search` are journaled too.
   */
  private wrapTools(tools: AgentTool<any, any>[]): AgentTool<any, any>[] {
    let wrapped = tools;
    // #region ch19
    wrapped = this.journal.tools(wrapped);
    // #endregion
    return wrapped;
  }

  /**
   * Wires a conversation for `options`: the workspace (a fresh demo folder offline), the model,
   * and the session (`--continue`, `--resume ID`, else a new one). `notes` hears what a person
   * should know about the session. Rejects with an `Error` that says what to do when the session
   * asked for cannot be found or read.
   */
  static async start(
    options: RunOptions,
    notes: (text: string) => void,
    demoDelayMs = 0,
    wiring: RuntimeWiring = {},
  ): Promise<Runtime> {
    const workspace = wiring.workspace ?? options.server?.workspace ?? (await createDemoWorkspace());
    const folder = options.session === undefined ? undefined : new SessionFolder(options.session.root, options.folder);
    const runtime = new Runtime(options, workspace, folder, wiring.model ?? createModel(options, demoDelayMs), wiring);
    // #region ch18
    if (wiring.model === undefined) {
      if (options.modelsFile !== undefined)
        runtime.catalogue = await loadModelsFile(runtime.catalogue, options.modelsFile);
      const name = options.server?.model ?? "demo";
      runtime.choose(
        setUpModel(options, runtime.catalogue, name, options.thinking, demoDelayMs, runtime.routeHeard),
        notes,
      );
    }
    // #endregion
    if (folder !== undefined) {
      const wanted = options.session!.resume;
      let found: SessionSummary | undefined;
      if (wanted !== undefined) found = await folder.find(wanted);
      else if (options.session!.continue) {
        found = await folder.newest();
        if (found === undefined) notes(`no earlier session of ${options.folder}: starting a new one`);
      }
      if (found !== undefined) await runtime.resume(found, notes);
      else await runtime.startNew();
    }
    // #region ch18
    if (wiring.model === undefined) runtime.restoreChoice(notes, demoDelayMs);
    // #endregion
    // #region ch17
    // last: a session that cannot be found has refused the start before any server runs
    await runtime.startMcp(notes);
    // #endregion
    return runtime;
  }

  /** Switches to a new, empty session (and an empty transcript). */
  async startNew(): Promise<void> {
    if (this.folder === undefined) {
      this.agent.reset();
      return;
    }
    const session = await this.folder.create();
    this.created.add(session);
    await this.attach(session);
  }

  /** Switches to the session `summary` describes and restores its transcript. */
  async resume(summary: SessionSummary, notes: (text: string) => void): Promise<void> {
    // The session in use already holds the file's write lock: going back to it is a reload.
    if (this.session !== undefined && path.resolve(this.session.path) === path.resolve(summary.file)) {
      this.reload();
      return;
    }
    const session = await SessionFile.open(summary.file);
    for (const note of sessionNotes(session)) notes(note);
    // #region ch19
    try {
      await this.recover(session, notes);
    } catch (error) {
      await session.close();
      throw error;
    }
    // #endregion
    await this.attach(session);
  }

  /**
   * Makes `session` the conversation's: the agent's transcript becomes the session's and the
   * agent records into it; the session in use before is closed. If the agent refuses it (a
   * malformed path), the new file is closed and the conversation stays as it was.
   */
  private async attach(session: SessionFile): Promise<void> {
    // #region lab 13.3 Runtime.attach
    try {
      // It reads the whole path first: a refusal changes nothing.
      this.agent.setSession(session);
    } catch (error) {
      await this.closeSession(session);
      throw error;
    }
    const previous = this.session;
    this.session = session;
    if (previous !== undefined) await this.closeSession(previous);
    // #endregion
  }

  // #region ch19
  /**
   * Recovers what a run killed mid-way left at the leaf of `session` (a durable run), before the agent
   * reads it: the cut answer is recorded as aborted, each unanswered tool call gets its committed
   * outcome, runs (never started, or safe to replay), or is answered as interrupted. Tells what it
   * did through `notes`; with `--no-recover` nothing runs and the run is not continued.
   */
  private async recover(session: SessionFile, notes: (text: string) => void): Promise<void> {
    this.pendingRecovery = undefined;
    const stream = fileStreamJournal(streamPathOf(session.path));
    if (!(await mayNeedRecovery(session, stream))) return; // the common case: the last run ended
    const plan = await planRecovery(session, this.agent.state.tools, stream);
    if (!plan.unfinished) {
      await stream.clear();
      return;
    }
    const run = this.options.session?.noRecover !== true;
    if (run && this.askRecovery) {
      // the interactive mode asks first (settleRecovery); --no-recover skips the question
      this.pendingRecovery = plan;
      return;
    }
    this.recovering = session;
    try {
      await applyRecovery(session, plan, { tools: this.agent.state.tools, run, stream });
    } finally {
      this.recovering = undefined;
    }
    notes(recoveryNote(plan, run));
    this.unfinished = run;
  }

  /**
   * Carries out the recovery `pendingRecovery` found, once the person answered: `run` true
   * recovers as the other modes do (never-started and safe calls run) and marks the run to go on
   * (`unfinished`); false records it as it stands (no call runs; interrupted calls get their error
   * results) and the run does not go on. Tells what it did through `notes`.
   */
  async settleRecovery(run: boolean, notes: (text: string) => void): Promise<void> {
    const session = this.session;
    const found = this.pendingRecovery;
    this.pendingRecovery = undefined;
    if (session === undefined || found === undefined) return;
    const stream = fileStreamJournal(streamPathOf(session.path));
    // planned again at the leaf it is applied to (reading is cheap; the tools may have grown since)
    const plan = await planRecovery(session, this.agent.state.tools, stream);
    if (!plan.unfinished) {
      await stream.clear();
      return;
    }
    await applyRecovery(session, plan, { tools: this.agent.state.tools, run, stream });
    this.reload();
    notes(recoveryNote(plan, run, "answer"));
    this.unfinished = run;
  }
  // #endregion

  /** Reads the transcript from the session again (after `/compact` appended a summary to it). */
  reload(): void {
    if (this.session !== undefined) this.agent.setSession(this.session);
  }

  /**
   * Switches to another model of the same server for the next run. `name` is
   * a catalogue id, a virtual model, or `a,b`, and the choice is recorded in the session (a
   * `model_change` entry after the leaf), so `--continue` resumes with it; a name that names no
   * model throws, changing nothing.
   */
  async switchModel(name: string): Promise<void> {
    // #region ch18
    if (this.choice !== undefined) {
      const setup = setUpModel(this.options, this.catalogue, name, this.choice.thinking, 0, this.routeHeard);
      this.choose(setup, this.onNotice);
      await this.recordChoice();
      return;
    }
    // #endregion
    this.agent.setModel(withPairingCheck(createModel(this.options, 0, name)));
  }

  // #region ch18

  /** Sets the thinking level of every call from the next run on, recorded as `switchModel` records it. */
  async setThinking(level: ThinkingLevel): Promise<ModelSetup> {
    const name = this.choice?.name ?? this.options.server?.model ?? "demo";
    const setup = setUpModel(this.options, this.catalogue, name, level, 0, this.routeHeard);
    this.choose(setup, this.onNotice);
    await this.recordChoice();
    return setup;
  }

  /** Makes `setup` the agent's model; the budget follows its window unless `--context-tokens` set one. */
  private choose(setup: ModelSetup, notes: (text: string) => void): void {
    this.choice = setup;
    this.agent.setModel(withPairingCheck(setup.model));
    if (this.options.contextTokens === undefined) {
      this.agent.setContextBudget(setup.budget === undefined ? undefined : { budget: setup.budget });
    }
    for (const notice of setup.notices) notes(notice);
  }

  /** Appends the choice in use to the session after its leaf, and goes on from there. */
  private async recordChoice(): Promise<void> {
    const session = this.session;
    const choice = this.choice;
    if (session === undefined || choice === undefined) return;
    await session.append({
      type: "model_change",
      parentId: session.leaf?.id ?? null,
      model: choice.name,
      thinking: choice.thinking ?? "off",
    });
    this.reload();
  }

  /**
   * The newest `model_route` on the session's path, unless a `model_change` came after it (a new
   * choice: its first answer is a change). Undefined without a session.
   */
  private lastRoute(): ModelRouteEntry | undefined {
    const leaf = this.session?.leaf;
    if (leaf === undefined) return undefined;
    const path = this.session!.pathToLeaf(leaf.id);
    for (let i = path.length - 1; i >= 0; i--) {
      const entry = path[i]!;
      if (entry.type === "model_route") return entry;
      if (entry.type === "model_change") return undefined;
    }
    return undefined;
  }

  /** The newest `model_change` on the session's path: the choice a resumed conversation goes on with. */
  private restoreChoice(notes: (text: string) => void, demoDelayMs: number): void {
    const leaf = this.session?.leaf;
    if (leaf === undefined) return;
    const path = this.session!.pathToLeaf(leaf.id);
    const entry = path.filter((e): e is ModelChangeEntry => e.type === "model_change").at(-1);
    if (entry === undefined) return;
    if (entry.model === this.choice?.name && entry.thinking === (this.choice?.thinking ?? "off")) return;
    try {
      const setup = setUpModel(this.options, this.catalogue, entry.model, entry.thinking, demoDelayMs, this.routeHeard);
      this.choose(setup, notes);
      notes(`model from the session: ${entry.model} · thinking ${entry.thinking}`);
    } catch (error) {
      notes(
        `the session's model ${entry.model} cannot be used (${(error as Error).message}); going on with ${this.choice?.name}`,
      );
    }
  }

  /**
   * A fallback is said as it happens. The real model that answered is recorded in the session
   * (a `model_route` entry, just before its answer) when it differs from the one recorded last
   * on the path since the newest choice (`lastRoute`): unchanged, nothing is written.
   */
  private readonly routeHeard = (report: RouteReport): void => {
    const { provider, id } = report.answeredBy;
    const last = this.lastRoute();
    if (this.choice !== undefined && (last?.provider !== provider || last.answeredBy !== id)) {
      this.agent.noteRoute({
        type: "model_route",
        model: this.choice.name,
        provider,
        answeredBy: id,
        skipped: report.skipped.map((s) => ({ model: s.model.id, error: s.error })),
      });
    }
    if (report.skipped.length === 0) return;
    this.onNotice(
      `fell back from ${report.skipped.map((s) => s.model.id).join(" and ")} to ${report.answeredBy.id} ` +
        `(${report.skipped.map((s) => `${s.model.id}: ${s.error}`).join("; ")})`,
    );
  };
  // #endregion

  // #region ch17
  /**
   * Starts the configured MCP servers in parallel and waits until each is ready or failed (each
   * within its start-up timeout); their tools join the coding tools, and follow later changes of
   * a server's tool list. A failed server is a note, never a failed start.
   */
  private async startMcp(notes: (text: string) => void): Promise<void> {
    for (const notice of this.options.mcpNotices) notes(notice);
    if (this.options.mcpServers.length === 0) return;
    const own = this.ownTools;
    const exposure = { codemode: this.options.codemode };
    let note: string | undefined;
    this.mcp = McpServers.start(this.options.mcpServers, {
      root: this.workspace,
      reservedNames: this.agent.state.tools.map((tool) => tool.name),
      clientInfo: { name: "pi-course", version: "0.1.0" },
      onToolsChanged: (tools) => {
        const exposed = exposeTools(own, tools, exposure);
        note = exposed.note;
        this.agent.setTools(this.wrapTools(exposed.tools));
      },
    });
    await this.mcp.ready();
    for (const entry of this.mcp.entries()) {
      const state = entry.state;
      if (state.status === "ready") {
        const hidden = state.hidden.length > 0 ? ` (${state.hidden.length} hidden: ${state.hidden.join("; ")})` : "";
        notes(`MCP server ${entry.name}: ready with ${state.tools} tool${state.tools === 1 ? "" : "s"}${hidden}`);
      } else if (state.status === "failed") {
        const tail = entry.stderrTail.at(-1);
        notes(
          `MCP server ${entry.name} failed: ${state.reason}${tail !== undefined && !state.reason.includes(tail) ? ` (stderr: ${tail})` : ""}`,
        );
      }
    }
    if (note !== undefined) notes(note);
  }
  // #endregion

  /** Stops recording and closes the session file (waits for its writes). */
  async close(): Promise<void> {
    // #region ch17
    await this.mcp?.close();
    // #endregion
    const session = this.session;
    this.session = undefined;
    if (session === undefined) return;
    this.agent.setSession(undefined);
    await this.closeSession(session);
  }

  /**
   * Closes a session file; one this runtime created that never took an entry is removed, so a
   * conversation left before its first prompt leaves no file behind (and `--continue` finds the
   * last real one).
   */
  private async closeSession(session: SessionFile): Promise<void> {
    await session.close();
    if (this.created.delete(session) && session.entries().length === 0) await rm(session.path, { force: true });
  }
}
