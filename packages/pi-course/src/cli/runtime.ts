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
import { createAnthropicModel } from "../models/anthropic/anthropic.js";
import { commandEnvironment, createCodingTools } from "../coding-tools/index.js";
import { createOpenAICompatibleModel } from "../models/openai/openai-compatible.js";
import { SessionFile } from "../session/session.js";
import { composeSystemPrompt, resourceTools, type Resources } from "../resources/resources.js";
import type { AgentMessage, AgentTool, Message } from "../types.js";
import type { Model } from "../model.js";
import type { RunOptions } from "./args.js";
import { createDemoModel, createDemoWorkspace } from "./demo.js";
import { withPairingCheck } from "./pairing.js";
import { SessionFolder, type SessionSummary } from "./sessions.js";
// #region ch17
import { McpServers } from "../mcp/servers.js";
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
/** What recovery did, in one line for a person. */
export function recoveryNote(plan: RecoveryPlan, run: boolean): string {
  const said: string[] = [];
  if (plan.partial !== undefined) said.push("an answer cut mid-stream was kept as interrupted");
  const verbs = {
    recorded: "result recorded before the crash",
    run: run ? "never started, run now" : "never started, not run",
    replay: run ? "safe to repeat, run again" : "interrupted",
    interrupted: "interrupted, may or may not have taken effect",
  };
  for (const { call, action } of plan.calls) said.push(`${call.name} (${call.id}): ${verbs[action]}`);
  const then = run ? "the run goes on" : "not continued (--no-recover)";
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
  const id = modelId ?? server.model;
  const key = server.apiKey !== undefined ? { apiKey: server.apiKey } : {};
  if (server.provider === "anthropic") {
    return createAnthropicModel({
      ...(server.baseUrl !== undefined && { baseUrl: server.baseUrl }),
      model: id,
      maxTokens: 8192,
      ...key,
    });
  }
  return createOpenAICompatibleModel({ baseUrl: server.baseUrl!, model: id, ...key });
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
    const tools = this.wrapTools(createCodingTools(workspace, { bash: { env: commandEnv } }));
    const resources = wiring.resources;
    this.resources = resources;
    const host = resources?.extensions;
    this.agent = new Agent({
      initialState: {
        systemPrompt:
          resources === undefined ? SYSTEM_PROMPT(workspace) : composeSystemPrompt(SYSTEM_PROMPT(workspace), resources),
        model: withPairingCheck(model),
        tools: resources === undefined ? tools : [...tools, ...this.wrapTools(resourceTools(resources))],
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
    // #endregion
  }

  /** The tools, journaled from chapter 19 on (intent before effect). */
  private wrapTools(tools: AgentTool<any, any>[]): AgentTool<any, any>[] {
    // #region ch19
    return this.journal.tools(tools);
    // #endregion
    // biome-ignore lint/correctness/noUnreachable: before chapter 19 the tools are used as they are
    return tools;
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
   * Recovers what a run killed mid-way left at the leaf of `session` (chapter 19), before the agent
   * reads it: the cut answer is recorded as aborted, each unanswered tool call gets its committed
   * outcome, runs (never started, or safe to replay), or is answered as interrupted. Tells what it
   * did through `notes`; with `--no-recover` nothing runs and the run is not continued.
   */
  private async recover(session: SessionFile, notes: (text: string) => void): Promise<void> {
    const stream = fileStreamJournal(streamPathOf(session.path));
    if (!(await mayNeedRecovery(session, stream))) return; // the common case: the last run ended
    const plan = await planRecovery(session, this.agent.state.tools, stream);
    if (!plan.unfinished) {
      await stream.clear();
      return;
    }
    const run = this.options.session?.noRecover !== true;
    this.recovering = session;
    try {
      await applyRecovery(session, plan, { tools: this.agent.state.tools, run, stream });
    } finally {
      this.recovering = undefined;
    }
    notes(recoveryNote(plan, run));
    this.unfinished = run;
  }
  // #endregion

  /** Reads the transcript from the session again (after `/compact` appended a summary to it). */
  reload(): void {
    if (this.session !== undefined) this.agent.setSession(this.session);
  }

  /** Changes the model id (same provider and server) for the next run. */
  switchModel(id: string): void {
    this.agent.setModel(withPairingCheck(createModel(this.options, 0, id)));
  }

  // #region ch17
  /**
   * Starts the configured MCP servers in parallel and waits until each is ready or failed (each
   * within its start-up timeout); their tools join the coding tools, and follow later changes of
   * a server's tool list. A failed server is a note, never a failed start.
   */
  private async startMcp(notes: (text: string) => void): Promise<void> {
    for (const notice of this.options.mcpNotices) notes(notice);
    if (this.options.mcpServers.length === 0) return;
    const own = this.agent.state.tools.slice();
    this.mcp = McpServers.start(this.options.mcpServers, {
      root: this.workspace,
      reservedNames: own.map((tool) => tool.name),
      clientInfo: { name: "pi-course", version: "0.1.0" },
      onToolsChanged: (tools) => this.agent.setTools([...own, ...this.wrapTools(tools)]),
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
