/**
 * What an extension sees: the API its factory receives, and the shapes it registers.
 *
 * An extension is an ES module (TypeScript or JavaScript) whose default export is a factory:
 *
 * ```ts
 * export default function (api: ExtensionAPI) {
 *   api.registerTool({ name: "now", label: "Now", description: "The time.", parameters: api.Type.Object({}),
 *     execute: async () => ({ content: [{ type: "text", text: new Date().toISOString() }], details: undefined }) });
 *   api.beforeToolCall((call) => (call.toolName === "bash" && /rm -rf/.test(String(call.args.command)) ? { block: true, reason: "no rm -rf" } : undefined));
 *   api.registerCommand("hello", { description: "Says hello", run: (args) => `hello ${args}` });
 *   api.addSystemPrompt("Always answer in English.");
 *   api.registerFlag("plan", { description: "plan only, change nothing" }); // pi-course --plan
 * }
 * ```
 *
 * Registrations are staged while the factory runs and committed only when it returns (or its
 * promise resolves): a factory that throws, rejects or outlasts its time registers nothing.
 * After that the API refuses registrations.
 */
import type { Type } from "typebox";
import type { AgentTool, AgentToolResult, UserContent } from "../types.js";

/** A tool call as a hook sees it. */
export interface ExtensionToolCall {
  toolName: string;
  toolCallId: string;
  /** The validated arguments (read them; changing them changes nothing). */
  args: Record<string, unknown>;
  /** The working folder of the agent. */
  cwd: string;
}

/** `{ block: true, reason }` stops the call; the reason is what the model reads. */
export interface ExtensionBeforeResult {
  block?: boolean;
  reason?: string;
}

/**
 * Runs before a tool call. Contract (fail closed): a throw, a rejection, or no answer within its
 * timeout blocks the call, as `{ block: true }` does; the model reads why in the call's result.
 */
export type ExtensionBeforeHook = (
  call: ExtensionToolCall,
  signal?: AbortSignal,
  // biome-ignore lint/suspicious/noConfusingVoidType: a hook or command with no return statement returns void
) => ExtensionBeforeResult | undefined | void | Promise<ExtensionBeforeResult | undefined | void>;

/** A change to a tool's result: fields given replace the result's (the next hook sees the change). */
export interface ExtensionAfterResult {
  content?: UserContent[];
  details?: unknown;
  isError?: boolean;
}

/**
 * Runs after a tool call, in registration order. Contract: a throw, a rejection, an unreadable
 * answer or no answer within its timeout is reported as a diagnostic and changes nothing: the
 * tool's result (as earlier hooks left it) stands, and the tool is never run again.
 */
export type ExtensionAfterHook = (
  call: ExtensionToolCall & { result: AgentToolResult<unknown>; isError: boolean },
  signal?: AbortSignal,
  // biome-ignore lint/suspicious/noConfusingVoidType: a hook or command with no return statement returns void
) => ExtensionAfterResult | undefined | void | Promise<ExtensionAfterResult | undefined | void>;

/** What a command's `run` is given. */
export interface ExtensionCommandContext {
  cwd: string;
  /** Shows a line to the user (not to the model). */
  say(text: string): void;
}

/** A slash command: `/NAME args` in the conversation. */
export interface ExtensionCommand {
  description: string;
  /**
   * Contract: runs when the user types `/NAME args` (the text after the name, trimmed). A string
   * it returns is shown to the user; a throw is shown as an error.
   */
  // biome-ignore lint/suspicious/noConfusingVoidType: a hook or command with no return statement returns void
  run(args: string, ctx: ExtensionCommandContext): string | undefined | void | Promise<string | undefined | void>;
}

/**
 * An option of the command line an extension adds: `--NAME` (a switch) or `--NAME VALUE`. It is
 * read once every extension has loaded, so `getFlag` answers from the tools, hooks and commands
 * (while the factory runs it gives the default). Not listed by `--help`, which loads nothing.
 */
export interface ExtensionFlag {
  description: string;
  /** `"boolean"` (the default): `--NAME`; `"string"`: `--NAME VALUE`. */
  type?: "boolean" | "string";
  /** What `getFlag` gives when the option is not given. */
  default?: boolean | string;
}

export interface HookOptions {
  /** How long the hook may take (default `DEFAULT_HOOK_TIMEOUT_MS`). */
  timeoutMs?: number;
}

/** The default time a hook may take: 5 seconds. */
export const DEFAULT_HOOK_TIMEOUT_MS = 5_000;

/** The API an extension's factory receives. Every method throws after the factory has returned. */
export interface ExtensionAPI {
  /** The agent's working folder. */
  readonly cwd: string;
  /** TypeBox's `Type`, to build tool parameters without installing anything. */
  readonly Type: typeof Type;
  /** Adds a tool the model can call (a name no other tool has: `[A-Za-z0-9_-]`, 1–64 characters). */
  registerTool(tool: AgentTool<any, any>): void;
  /** Adds `/NAME` to the conversation (`[a-z0-9-]`, not a built-in command). */
  registerCommand(name: string, command: ExtensionCommand): void;
  /** Runs `hook` before every tool call (fail closed; see `ExtensionBeforeHook`). */
  beforeToolCall(hook: ExtensionBeforeHook, options?: HookOptions): void;
  /** Runs `hook` after every tool call (see `ExtensionAfterHook`). */
  afterToolCall(hook: ExtensionAfterHook, options?: HookOptions): void;
  /** Appends `text` to the system prompt, in a section named after the extension. */
  addSystemPrompt(text: string): void;
  /** Adds `--NAME` to the command line (`[a-z0-9-]`, not an option the CLI has; see `ExtensionFlag`). */
  registerFlag(name: string, flag: ExtensionFlag): void;
  /** The value of a registered flag (any extension's): given on the command line, else its default. */
  getFlag(name: string): boolean | string | undefined;
}

/** An extension module's default export. */
export type ExtensionFactory = (api: ExtensionAPI) => void | Promise<void>;
