/**
 * The extension host: loads extensions, keeps what they registered, and runs their hooks.
 *
 * Loading: a file is imported with `jiti` (TypeScript and JavaScript alike, from the built bin as
 * well as under tsx; no cache written to disk, a fresh module per load), its default export is
 * called with a staging API, and its registrations are committed only when the factory has
 * returned (or resolved) within `factoryTimeoutMs`. A module that does not import, has no
 * factory, or whose factory throws, rejects or hangs registers nothing: one warning says why.
 * A tool, command or flag whose name is taken is left out with a warning; the rest of that
 * extension loads.
 *
 * Hooks: `beforeToolCall` and `afterToolCall` are one hook each for the `Agent`, running every
 * extension's hooks in load order. Before-hooks fail closed: a throw, a denial or a timeout
 * blocks the call with an error result the model reads, and never ends the run. After-hooks
 * fail open: a failure is a diagnostic (`onDiagnostic`), and the result stands as it was.
 */
import { readdirSync, statSync } from "node:fs";
import path from "node:path";
import type { Jiti } from "jiti";
import { Type } from "typebox";
import type {
  AfterToolCallContext,
  AfterToolCallResult,
  BeforeToolCallContext,
  BeforeToolCallResult,
} from "../agent/types.js";
import { settle } from "../agent/settle.js";
import type { AgentTool, AgentToolResult, UserContent } from "../types.js";
import {
  DEFAULT_HOOK_TIMEOUT_MS,
  type ExtensionAfterHook,
  type ExtensionAPI,
  type ExtensionBeforeHook,
  type ExtensionBeforeResult,
  type ExtensionCommand,
  type ExtensionFactory,
  type ExtensionToolCall,
  type HookOptions,
} from "./extension-api.js";
import { checkedFlag, ExtensionFlags, type RegisteredFlag } from "./extension-flags.js";
import type { ResourceScope, ResourceWarning } from "./types.js";

/** The file names an extensions folder may hold (and `NAME/index.*`). */
export const EXTENSION_EXTENSIONS = [".ts", ".mts", ".js", ".mjs"] as const;

/**
 * The extension files of `folder`, sorted: its `*.ts`, `*.mts`, `*.js` and `*.mjs` files, and each
 * sub-folder's `index.*` (the first of those that exists). Nothing is imported. A missing folder
 * holds none.
 */
export function extensionFiles(folder: string): string[] {
  let entries;
  try {
    entries = readdirSync(folder, { withFileTypes: true });
  } catch {
    return [];
  }
  const files: string[] = [];
  for (const entry of entries) {
    if (entry.name.startsWith(".") || entry.name.endsWith(".d.ts")) continue;
    const full = path.join(folder, entry.name);
    let isFolder = entry.isDirectory();
    if (entry.isSymbolicLink()) {
      try {
        isFolder = statSync(full).isDirectory();
      } catch {
        continue;
      }
    }
    if (isFolder) {
      if (entry.name === "node_modules") continue;
      const index = EXTENSION_EXTENSIONS.map((ext) => path.join(full, `index${ext}`)).find((f) => isFile(f));
      if (index !== undefined) files.push(index);
    } else if (EXTENSION_EXTENSIONS.some((ext) => entry.name.endsWith(ext))) files.push(full);
  }
  return files.sort();
}

function isFile(file: string): boolean {
  try {
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

/** One extension that loaded, and what it added. */
export interface LoadedExtension {
  /** The file (or a name given to `loadFactory`). */
  path: string;
  scope: ResourceScope;
  tools: string[];
  commands: string[];
  /** Its command-line flags (names without `--`). */
  flags: string[];
  beforeHooks: number;
  afterHooks: number;
  promptSections: number;
}

interface Hook<T> {
  extension: string;
  hook: T;
  timeoutMs: number;
}

export interface ExtensionHostOptions {
  /** The agent's working folder (the API's `cwd`). */
  cwd: string;
  /** Tool names already taken (the built-in tools). */
  reservedTools?: readonly string[];
  /** Command names already taken (the built-in commands). */
  reservedCommands?: readonly string[];
  /** Option names already taken (the CLI's own options, without `--`). */
  reservedFlags?: readonly string[];
  /** How long a factory may take (default 10 s). */
  factoryTimeoutMs?: number;
  /** Hears what goes wrong while the agent runs (an after-hook that failed). */
  onDiagnostic?: (warning: ResourceWarning) => void;
}

const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const COMMAND_NAME = /^[a-z0-9][a-z0-9-]*$/;

/** What a factory registered while it ran, committed only when it finishes in time. */
interface Staged {
  tools: AgentTool<any, any>[];
  commands: [string, ExtensionCommand][];
  flags: RegisteredFlag[];
  before: Hook<ExtensionBeforeHook>[];
  after: Hook<ExtensionAfterHook>[];
  prompts: string[];
}

/** What extensions registered, and their hooks composed for the `Agent`. */
export class ExtensionHost {
  readonly extensions: LoadedExtension[] = [];
  readonly tools: AgentTool<any, any>[] = [];
  readonly commands = new Map<string, ExtensionCommand & { extension: string }>();
  readonly promptSections: { extension: string; text: string }[] = [];
  /** The command-line flags extensions registered, and their values once the CLI has read them. */
  readonly flags: ExtensionFlags;
  /** Problems found while loading (each says which file and what to do). */
  readonly warnings: ResourceWarning[] = [];
  private readonly beforeHooks: Hook<ExtensionBeforeHook>[] = [];
  private readonly afterHooks: Hook<ExtensionAfterHook>[] = [];
  /** The loader, made on the first extension file (jiti costs half a second to load on a busy machine). */
  private jiti: Jiti | undefined;

  constructor(readonly options: ExtensionHostOptions) {
    this.flags = new ExtensionFlags(options.reservedFlags);
  }

  /**
   * Imports `file` and runs its factory (see the file comment). Resolves with whether it loaded;
   * never rejects: every failure is a warning.
   */
  async load(file: string, scope: ResourceScope): Promise<boolean> {
    let module: unknown;
    try {
      if (this.jiti === undefined) {
        const { createJiti } = await import("jiti");
        this.jiti = createJiti(import.meta.url, { fsCache: false, moduleCache: false });
      }
      module = await this.jiti.import(path.resolve(file));
    } catch (error) {
      this.warnings.push({ path: file, message: `not loaded: it cannot be imported (${firstLine(error)})` });
      return false;
    }
    const factory = (module as { default?: unknown } | null)?.default;
    if (typeof factory !== "function") {
      this.warnings.push({
        path: file,
        message: "not loaded: its default export must be a function (api) => void (the extension's factory)",
      });
      return false;
    }
    return this.loadFactory(factory as ExtensionFactory, file, scope);
  }

  /**
   * Runs `factory` with a staging API and commits what it registered if it returns (or resolves)
   * within the time limit; else registers nothing and records a warning. For programs that build
   * extensions in code; `name` stands for the file in warnings and listings.
   */
  async loadFactory(factory: ExtensionFactory, name: string, scope: ResourceScope): Promise<boolean> {
    // #region lab 12.4 ExtensionHost.loadFactory
    const staged: Staged = { tools: [], commands: [], flags: [], before: [], after: [], prompts: [] };
    let open = true;
    const guard = (what: string) => {
      if (!open) throw new Error(`${what}: register while the extension's factory runs, not later`);
    };
    const timeoutOf = (options: HookOptions | undefined) => {
      const ms = options?.timeoutMs ?? DEFAULT_HOOK_TIMEOUT_MS;
      if (!(Number.isFinite(ms) && ms > 0))
        throw new TypeError(`a hook's timeoutMs must be a positive number of milliseconds, got ${ms}`);
      return ms;
    };
    const api: ExtensionAPI = {
      cwd: this.options.cwd,
      Type,
      registerTool: (tool) => {
        guard("registerTool");
        if (
          typeof tool !== "object" ||
          tool === null ||
          typeof tool.execute !== "function" ||
          typeof tool.description !== "string"
        ) {
          throw new TypeError(
            "registerTool needs a tool with a name, a description, parameters and an execute function",
          );
        }
        if (!TOOL_NAME.test(String(tool.name)))
          throw new TypeError(`tool name "${tool.name}": use 1-64 of A-Z a-z 0-9 _ -`);
        if (typeof tool.parameters !== "object" || tool.parameters === null)
          throw new TypeError(`tool "${tool.name}" needs parameters (a JSON Schema object)`);
        staged.tools.push({ ...tool, label: typeof tool.label === "string" ? tool.label : tool.name });
      },
      registerCommand: (commandName, command) => {
        guard("registerCommand");
        if (!COMMAND_NAME.test(commandName))
          throw new TypeError(`command name "${commandName}": use a-z, 0-9 and -, a letter or digit first`);
        if (typeof command?.run !== "function") throw new TypeError(`command "/${commandName}" needs a run function`);
        staged.commands.push([commandName, command]);
      },
      beforeToolCall: (hook, options) => {
        guard("beforeToolCall");
        if (typeof hook !== "function") throw new TypeError("beforeToolCall needs a function");
        staged.before.push({ extension: name, hook, timeoutMs: timeoutOf(options) });
      },
      afterToolCall: (hook, options) => {
        guard("afterToolCall");
        if (typeof hook !== "function") throw new TypeError("afterToolCall needs a function");
        staged.after.push({ extension: name, hook, timeoutMs: timeoutOf(options) });
      },
      addSystemPrompt: (text) => {
        guard("addSystemPrompt");
        if (typeof text !== "string") throw new TypeError("addSystemPrompt needs a string");
        staged.prompts.push(text);
      },
      registerFlag: (flagName, flag) => {
        guard("registerFlag");
        staged.flags.push(checkedFlag(flagName, flag, name));
      },
      getFlag: (flagName) => this.flags.get(flagName),
    };
    const limit = this.options.factoryTimeoutMs ?? 10_000;
    const outcome = await settle(() => factory(api), undefined, limit);
    open = false;
    if (outcome.kind !== "value") {
      const why =
        outcome.kind === "timedOut"
          ? `its factory did not finish within ${limit} ms`
          : `its factory threw: ${firstLine((outcome as { error: unknown }).error)}`;
      this.warnings.push({ path: name, message: `not loaded (nothing of it is registered): ${why}` });
      return false;
    }
    this.commit(staged, name, scope);
    return true;
    // #endregion
  }

  /**
   * Commits what a factory staged once it finished: a tool or command whose name is taken (a
   * built-in's, or an earlier extension's) is left out with a warning, the rest is registered.
   */
  private commit(staged: Staged, name: string, scope: ResourceScope): void {
    // #region lab 12.4 ExtensionHost.commit
    const loaded: LoadedExtension = {
      path: name,
      scope,
      tools: [],
      commands: [],
      flags: this.flags.commit(staged.flags, this.warnings),
      beforeHooks: staged.before.length,
      afterHooks: staged.after.length,
      promptSections: staged.prompts.length,
    };
    const takenTools = new Set([...(this.options.reservedTools ?? []), ...this.tools.map((t) => t.name)]);
    for (const tool of staged.tools) {
      if (takenTools.has(tool.name)) {
        this.warnings.push({ path: name, message: `its tool "${tool.name}" is left out: another tool has that name` });
        continue;
      }
      takenTools.add(tool.name);
      this.tools.push(tool);
      loaded.tools.push(tool.name);
    }
    for (const [commandName, command] of staged.commands) {
      if ((this.options.reservedCommands ?? []).includes(commandName) || this.commands.has(commandName)) {
        this.warnings.push({
          path: name,
          message: `its command /${commandName} is left out: another command has that name`,
        });
        continue;
      }
      this.commands.set(commandName, { ...command, extension: name });
      loaded.commands.push(commandName);
    }
    this.beforeHooks.push(...staged.before);
    this.afterHooks.push(...staged.after);
    for (const text of staged.prompts) this.promptSections.push({ extension: name, text });
    this.extensions.push(loaded);
    // #endregion
  }

  /** Whether any extension registered a before-hook (else the `Agent` needs no `beforeToolCall`). */
  get hasBeforeHooks(): boolean {
    return this.beforeHooks.length > 0;
  }

  /** Whether any extension registered an after-hook. */
  get hasAfterHooks(): boolean {
    return this.afterHooks.length > 0;
  }

  /** The system prompt's section for what extensions added (empty text when nothing). */
  systemPromptSection(): string {
    return this.promptSections
      .map((s) => `<extension path="${s.extension}">\n${s.text.trim()}\n</extension>`)
      .join("\n");
  }

  /**
   * The `Agent`'s `beforeToolCall`: every extension's before-hook in load order; the first that
   * blocks, throws or times out blocks the call (fail closed). Never throws.
   */
  readonly beforeToolCall = async (
    ctx: BeforeToolCallContext,
    signal?: AbortSignal,
  ): Promise<BeforeToolCallResult | undefined> => {
    // #region lab 12.4 ExtensionHost.beforeToolCall
    const call = this.callView(ctx);
    for (const { extension, hook, timeoutMs } of this.beforeHooks) {
      const outcome = await settle(() => hook(call, signal), signal, timeoutMs);
      if (outcome.kind === "aborted")
        return { block: true, reason: "the run was aborted before the call's checks finished" };
      const failed = (why: string) => ({
        block: true,
        reason: `the tool call was not run: a check of the extension ${extension} ${why} (extension checks fail closed).`,
      });
      if (outcome.kind === "timedOut") return failed(`did not answer within ${timeoutMs} ms`);
      if (outcome.kind === "threw") return failed(`failed (${firstLine(outcome.error)})`);
      try {
        const answer: unknown = outcome.value;
        if (answer === undefined || answer === null) continue;
        // a JavaScript extension can answer anything: what is not a clear yes or no blocks
        if (typeof answer !== "object")
          return failed(`gave an answer that cannot be read (a ${typeof answer}, not an object)`);
        const { block } = answer as ExtensionBeforeResult;
        if (block !== undefined && typeof block !== "boolean")
          return failed(`gave an answer that cannot be read (its block is a ${typeof block}, not true or false)`);
        if (block === true) {
          const given = (answer as ExtensionBeforeResult).reason;
          const reason = typeof given === "string" && given !== "" ? given : "no reason given";
          return { block: true, reason: `blocked by the extension ${extension}: ${reason}` };
        }
      } catch (error) {
        return failed(`gave an answer that cannot be read (${firstLine(error)})`);
      }
    }
    return undefined;
    // #endregion
  };

  /**
   * The `Agent`'s `afterToolCall`: every extension's after-hook in load order, each seeing the
   * result as the earlier ones left it. A failing hook is a diagnostic and changes nothing.
   * Never throws.
   */
  readonly afterToolCall = async (
    ctx: AfterToolCallContext,
    signal?: AbortSignal,
  ): Promise<AfterToolCallResult | undefined> => {
    if (this.afterHooks.length === 0) return undefined;
    let result: AgentToolResult<unknown> = ctx.result;
    let isError = ctx.isError;
    let changed = false;
    for (const { extension, hook, timeoutMs } of this.afterHooks) {
      const outcome = await settle(() => hook({ ...this.callView(ctx), result, isError }, signal), signal, timeoutMs);
      if (outcome.kind === "aborted") break;
      const report = (why: string) =>
        this.options.onDiagnostic?.({
          path: extension,
          message: `its afterToolCall hook ${why} for "${ctx.toolCall.name}"; the result is kept as it was`,
        });
      if (outcome.kind === "timedOut") {
        report(`did not answer within ${timeoutMs} ms`);
        continue;
      }
      if (outcome.kind === "threw") {
        report(`failed (${firstLine(outcome.error)})`);
        continue;
      }
      try {
        const patch = outcome.value;
        if (patch === undefined || patch === null) continue;
        if (typeof patch !== "object") throw new TypeError("it must return an object or nothing");
        const next: AgentToolResult<unknown> = { ...result };
        if (patch.content !== undefined) {
          if (!Array.isArray(patch.content)) throw new TypeError("its content must be an array of content blocks");
          next.content = [...(patch.content as UserContent[])];
        }
        if ("details" in patch) next.details = patch.details;
        let nextIsError = isError;
        if (patch.isError !== undefined) nextIsError = patch.isError === true;
        result = next;
        isError = nextIsError;
        changed = true;
      } catch (error) {
        report(`gave an answer that cannot be used (${firstLine(error)})`);
      }
    }
    if (!changed) return undefined;
    return { content: result.content, details: result.details, isError };
  };

  private callView(ctx: BeforeToolCallContext): ExtensionToolCall {
    const args = typeof ctx.args === "object" && ctx.args !== null ? (ctx.args as Record<string, unknown>) : {};
    return {
      toolName: ctx.toolCall.name,
      toolCallId: ctx.toolCall.id,
      args: structuredClone(args),
      cwd: this.options.cwd,
    };
  }
}

function firstLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.split("\n")[0]!;
}
