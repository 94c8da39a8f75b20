/**
 * The composition root of `npm start`: the one place where the parts of the library are put
 * together (model, coding tools, `Agent`, session file), whatever the mode.
 *
 * A conversation is an `Agent` plus, unless `--no-session`, one session file of the sessions
 * folder (sessions.ts). Resuming restores the transcript from the path to the file's leaf (the
 * newest compaction's summary first, chapter 11); from then on each message, once the agent has
 * it (`message_end`), is appended as a child of the previous one. The listener awaits the append,
 * so a run goes on only once what it said is on disk; a failed append stops the run (the agent's
 * listener contract) and the file takes no more appends (chapter 10), so what is on disk is a
 * prefix of what was said.
 */
import { Agent } from "../agent.js";
import { createAnthropicModel } from "../anthropic.js";
import { commandEnvironment, createCodingTools } from "../coding-tools/index.js";
import { transcriptOf } from "../context.js";
import { createOpenAICompatibleModel } from "../openai-compatible.js";
import { SessionFile } from "../session.js";
import type { AgentMessage, Message, Model } from "../types.js";
import type { RunOptions } from "./args.js";
import { createDemoModel, createDemoWorkspace } from "./demo.js";
import { withPairingCheck } from "./pairing.js";
import { SessionFolder, type SessionSummary } from "./sessions.js";

/** What resuming a session found. */
export interface Restored {
  /** The transcript, as the model will read it. */
  messages: AgentMessage[];
  /** The entry the next message continues (null: an empty session). */
  leafId: string | null;
  /** What a person should know: torn lines skipped, a compaction that starts the transcript. */
  notes: string[];
}

/** The transcript of `session` at its leaf, and what was odd about the file. */
export function restoreSession(session: SessionFile): Restored {
  // #region lab 13.3 restoreSession
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
  if (leaf === undefined) return { messages: [], leafId: null, notes };
  const transcript = transcriptOf(session.pathToLeaf(leaf.id));
  if (transcript.compaction !== undefined) notes.push("earlier messages are condensed into a summary (/compact)");
  return { messages: transcript.messages, leafId: leaf.id, notes };
  // #endregion
}

/**
 * Appends every message the agent ends (`message_end`) to `session`, each a child of the one
 * before, from `leafId` on. Returns the function that stops recording.
 */
export function recordSession(agent: Agent, session: SessionFile, leafId: string | null): () => void {
  // #region lab 13.3 recordSession
  let parentId = leafId;
  return agent.subscribe(async (event) => {
    if (event.type !== "message_end") return;
    parentId = await session.append({ type: "message", parentId, message: event.message });
  });
  // #endregion
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
  const id = modelId ?? server.model;
  const key = server.apiKey !== undefined ? { apiKey: server.apiKey } : {};
  if (server.provider === "anthropic") {
    return createAnthropicModel({ ...(server.baseUrl !== undefined && { baseUrl: server.baseUrl }), model: id, maxTokens: 8192, ...key });
  }
  return createOpenAICompatibleModel({ baseUrl: server.baseUrl!, model: id, ...key });
}

/** The wired conversation: agent, workspace, and the session file in use. */
export class Runtime {
  readonly agent: Agent;
  /** The session in use (undefined with `--no-session`). */
  session: SessionFile | undefined;
  private stopRecording: (() => void) | undefined;

  private constructor(
    readonly options: RunOptions,
    readonly workspace: string,
    readonly folder: SessionFolder | undefined,
    model: Model,
  ) {
    // Commands the model runs never see the API key: secret-looking variables are dropped, also
    // the variable named by --api-key-env, and any other holding the key in use.
    const server = options.server;
    const commandEnv = commandEnvironment(process.env, server?.apiKeyEnv === undefined ? [] : [server.apiKeyEnv]);
    for (const name of Object.keys(commandEnv)) {
      if (server?.apiKey !== undefined && commandEnv[name] === server.apiKey) delete commandEnv[name];
    }
    this.agent = new Agent({
      initialState: {
        systemPrompt: SYSTEM_PROMPT(workspace),
        model: withPairingCheck(model),
        tools: createCodingTools(workspace, { bash: { env: commandEnv } }),
      },
      convertToLlm: toLlm(options.dropToolResult),
    });
  }

  /**
   * Wires a conversation for `options`: the workspace (a fresh demo folder offline), the model,
   * and the session (`--continue`, `--resume ID`, else a new one). `notes` hears what a person
   * should know about the session. Rejects with an `Error` that says what to do when the session
   * asked for cannot be found or read.
   */
  static async start(options: RunOptions, notes: (text: string) => void, demoDelayMs = 0): Promise<Runtime> {
    const workspace = options.server?.workspace ?? (await createDemoWorkspace());
    const folder = options.session === undefined ? undefined : new SessionFolder(options.session.root, options.folder);
    const runtime = new Runtime(options, workspace, folder, createModel(options, demoDelayMs));
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
    return runtime;
  }

  /** Switches to a new, empty session (and an empty transcript). */
  async startNew(): Promise<void> {
    await this.detach();
    this.agent.reset();
    if (this.folder === undefined) return;
    this.session = await this.folder.create();
    this.stopRecording = recordSession(this.agent, this.session, null);
  }

  /** Switches to the session `summary` describes and restores its transcript. */
  async resume(summary: SessionSummary, notes: (text: string) => void): Promise<void> {
    const session = await SessionFile.open(summary.file);
    let restored: Restored;
    try {
      restored = restoreSession(session);
    } catch (error) {
      await session.close();
      throw error;
    }
    await this.detach();
    this.agent.reset();
    this.agent.replaceMessages(restored.messages);
    for (const note of restored.notes) notes(note);
    this.session = session;
    this.stopRecording = recordSession(this.agent, session, restored.leafId);
  }

  /** Changes the model id (same provider and server) for the next run. */
  switchModel(id: string): void {
    this.agent.setModel(withPairingCheck(createModel(this.options, 0, id)));
  }

  /** Stops recording and closes the session file (waits for its writes). */
  async close(): Promise<void> {
    await this.detach();
  }

  private async detach(): Promise<void> {
    this.stopRecording?.();
    this.stopRecording = undefined;
    const session = this.session;
    this.session = undefined;
    await session?.close();
  }
}
