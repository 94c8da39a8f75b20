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
import type { Model } from "../model.js";
import type { RunOptions } from "./run-options.js";
import { createDemoModel, createDemoWorkspace } from "./demo.js";
import { withPairingCheck } from "./pairing.js";
import { SessionFolder, type SessionSummary } from "./sessions.js";
import { createServerModel } from "./runtime-model.js";
import type { Questioner } from "./io.js";

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
  // (a model taken from the resumed session is chosen before any call: see features/chosen-model.ts)
  return createServerModel(options, modelId ?? (server.model === "" ? "from-the-session" : server.model));
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
  /**
   * A person is there to answer questions (the interactive mode): a feature may leave a decision
   * to the conversation instead of taking it at start (a durable run asks before recovering).
   */
  asks?: boolean;
  /** The features that plug into the runtime (`npm start` and the eval harness give every CLI feature). */
  features?: readonly RuntimeFeature[];
}

/**
 * What a feature sets up on one runtime (`RuntimeFeature.setUp`). The runtime calls each hook at
 * its moment, for every feature in the order it was given them.
 */
export interface RuntimePart {
  /** Changes the tool list the model is given (the `code` tool first); called each time the list is built. */
  exposeTools?(tools: AgentTool<any, any>[]): AgentTool<any, any>[];
  /** Wraps every tool of that list, after every `exposeTools` (a durable run's journal). */
  wrapTools?(tools: AgentTool<any, any>[]): AgentTool<any, any>[];
  /** Before the session is chosen (the model a name picks). */
  beforeSession?(notes: (text: string) => void): Promise<void> | void;
  /** A session file about to be resumed, before the agent reads it (a killed run's recovery). A throw refuses it. */
  opening?(session: SessionFile, notes: (text: string) => void): Promise<void>;
  /** Once the session is chosen (the model the session recorded). */
  afterSession?(notes: (text: string) => void): void | Promise<void>;
  /**
   * Last in `start`: what runs beside the agent (MCP servers). It may go on in the background
   * (then `ready` says when it has settled). A failure of theirs is a note, not a failed start.
   */
  start?(notes: (text: string) => void): Promise<void>;
  /** Resolves once what `start` began has settled (never rejects). */
  ready?(): Promise<void>;
  /** After every part's `start`: what needs the tools they brought (a killed run's recovery). */
  started?(notes: (text: string) => void): Promise<void>;
  /** At `close`, before the session file is closed. */
  close?(): Promise<void>;
}

/** A feature's part of the runtime (`CliFeature` extends it). */
export interface RuntimeFeature {
  name: string;
  /** Values the model's commands must not see besides the key in use (keys the feature picked), by variable. */
  commandSecrets?(options: RunOptions): Readonly<Record<string, string>>;
  /** A section the feature adds to the system prompt (the MCP servers, one line each); undefined: none. */
  promptSection?(options: RunOptions): string | undefined;
  /** Sets the feature up on `runtime` (the agent exists, no session is chosen yet); undefined: nothing to do. */
  setUp?(runtime: Runtime, wiring: RuntimeWiring): Promise<RuntimePart | undefined> | RuntimePart | undefined;
}

/** The wired conversation: agent, workspace, and the session file in use. */
export class Runtime {
  readonly agent: Agent;
  /** The session in use (undefined with `--no-session`). */
  session: SessionFile | undefined;
  /** Session files this runtime created (removed at close while still empty). */
  private readonly created = new Set<SessionFile>();
  /** The project around the agent (context files, skills, templates, extensions), if loaded. */
  readonly resources: Resources | undefined;
  /** The CLI's own tools (coding tools, the skill tool): always declared. */
  private readonly ownTools: AgentTool<any, any>[];
  /** Tools a feature adds (the MCP servers'), after the own ones. */
  private addedTools: AgentTool<any, any>[] = [];
  /** The tool list as the agent runs it now (`toolList`): a run takes it at its next request (`currentTools`). */
  private tools: readonly AgentTool<any, any>[];
  /** What each feature set up on this runtime, by the feature's name. */
  private readonly parts = new Map<string, RuntimePart>();
  private noticeSink: ((text: string) => void) | undefined;
  private readonly heldNotices: string[] = [];
  /**
   * Says what a person should know while the conversation goes on (a fallback, a model's notice,
   * an MCP server that became ready). Until a mode sets where notices go, they are held, then
   * given to it in order.
   */
  get onNotice(): (text: string) => void {
    return (text) => (this.noticeSink === undefined ? void this.heldNotices.push(text) : this.noticeSink(text));
  }
  set onNotice(sink: (text: string) => void) {
    this.noticeSink = sink;
    for (const text of this.heldNotices.splice(0)) sink(text);
  }
  /**
   * The resumed session's run is to go on before anything new (a feature set it: a killed run
   * was recovered): the modes call `agent.continue()` first, and set it back to false.
   */
  unfinished = false;
  /**
   * The person at the terminal, for a feature that must ask while a run goes on (an MCP server's
   * form): set by the interactive mode; undefined where nobody can answer (print, JSON, trace).
   */
  questioner: Questioner | undefined;

  private constructor(
    readonly options: RunOptions,
    readonly workspace: string,
    readonly folder: SessionFolder | undefined,
    model: Model,
    wiring: RuntimeWiring,
    /** How long the demo's scripted model waits between deltas (for a model a feature creates). */
    readonly demoDelayMs: number,
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
    // The keys a feature picked (one per provider of a fallback list): by name and by value.
    for (const feature of wiring.features ?? []) {
      const keys = feature.commandSecrets?.(options) ?? {};
      for (const name of Object.keys(commandEnv)) {
        if (name in keys || Object.values(keys).includes(commandEnv[name]!)) delete commandEnv[name];
      }
    }
    const tools = createCodingTools(workspace, { bash: { env: commandEnv } });
    const resources = wiring.resources;
    this.resources = resources;
    this.ownTools = resources === undefined ? tools : [...tools, ...resourceTools(resources)];
    const host = resources?.extensions;
    const base =
      resources === undefined ? SYSTEM_PROMPT(workspace) : composeSystemPrompt(SYSTEM_PROMPT(workspace), resources);
    const sections = (wiring.features ?? []).flatMap((feature) => feature.promptSection?.(options) ?? []);
    this.tools = this.ownTools;
    this.agent = new Agent({
      // tools that join while a run goes on (an MCP server that became ready) are the model's from its next request
      currentTools: () => this.tools,
      initialState: {
        systemPrompt: [base, ...sections].join("\n\n"),
        model: withPairingCheck(model),
        tools: this.ownTools,
      },
      convertToLlm: toLlm(options.dropToolResult),
      // extension hooks (fail closed before a call; an after-hook's failure is only reported)
      ...(host?.hasBeforeHooks === true && { beforeToolCall: host.beforeToolCall }),
      ...(host?.hasAfterHooks === true && { afterToolCall: host.afterToolCall }),
      ...(options.contextTokens !== undefined && { contextBudget: { budget: options.contextTokens } }),
      ...(wiring.maxTurns !== undefined && { maxTurns: wiring.maxTurns }),
    });
  }

  /** What the feature named `name` set up on this runtime, if anything. */
  part<T extends RuntimePart>(name: string): T | undefined {
    return this.parts.get(name) as T | undefined;
  }

  /** Sets every feature up, then gives the agent the tool list they expose. */
  private async plugIn(features: readonly RuntimeFeature[], wiring: RuntimeWiring): Promise<void> {
    for (const feature of features) {
      const part = await feature.setUp?.(this, wiring);
      if (part !== undefined) this.parts.set(feature.name, part);
    }
    this.tools = this.toolList();
    this.agent.setTools(this.tools);
  }

  /** Calls `hook` of every part, in order. */
  private async each(hook: (part: RuntimePart) => Promise<void> | void): Promise<void> {
    for (const part of this.parts.values()) await hook(part);
  }

  /**
   * The tools as the agent runs them: the own ones and the added ones, as each feature exposes
   * them (`exposeTools`), then wrapped (`wrapTools`, so the `code` tool and `tool_search` are
   * journaled too).
   */
  private toolList(): AgentTool<any, any>[] {
    let tools = [...this.ownTools, ...this.addedTools];
    for (const part of this.parts.values()) tools = part.exposeTools?.(tools) ?? tools;
    for (const part of this.parts.values()) tools = part.wrapTools?.(tools) ?? tools;
    return tools;
  }

  /** Resolves once what every part started in the background has settled (its tools have joined). */
  async whenReady(): Promise<void> {
    await this.each((part) => part.ready?.());
  }

  /**
   * Replaces the tools a feature adds (an MCP server's list changed): the agent has them from its
   * next model request, also in a run already going (`currentTools`).
   */
  setAddedTools(tools: AgentTool<any, any>[]): void {
    this.addedTools = tools;
    this.tools = this.toolList();
    this.agent.setTools(this.tools);
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
    const runtime = new Runtime(
      options,
      workspace,
      folder,
      wiring.model ?? createModel(options, demoDelayMs),
      wiring,
      demoDelayMs,
    );
    await runtime.plugIn(wiring.features ?? [], wiring);
    await runtime.each((part) => part.beforeSession?.(notes));
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
    await runtime.each((part) => part.afterSession?.(notes));
    // last: a session that cannot be found has refused the start before any server runs
    await runtime.each((part) => part.start?.(notes));
    await runtime.each((part) => part.started?.(notes));
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
    try {
      await this.each((part) => part.opening?.(session, notes));
    } catch (error) {
      await session.close();
      throw error;
    }
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
    this.agent.setModel(withPairingCheck(createModel(this.options, 0, name)));
  }

  /** Stops recording and closes the session file (waits for its writes). */
  async close(): Promise<void> {
    await this.each((part) => part.close?.());
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
