/**
 * Chapter 16: the `code` tool. Instead of one model turn per tool call, the model writes one
 * JavaScript snippet that calls many tools; it runs in the QuickJS sandbox (sandbox.ts) and each
 * `await tools.<name>(args)` goes back through the agent's own tool pipeline
 * (`ToolExecutionContext.callTool`: exposure, validation, hooks, events), so a script can do
 * nothing the model may not.
 *
 * In the script, `tools.<name>(args)` resolves to the tool's text and throws an `Error` with
 * that text when the tool fails; `console.*` is captured; `return` a JSON value to report it.
 *
 * The result text: on success `Result: <json>` (when a value was returned), the console lines
 * under `Console:`, and `Tool calls: N`; on failure `The script failed (<kind>): <message>.`,
 * then every nested call already made under `Tool calls made before the failure (they are not
 * undone):`, numbered `1. name {args} → ok|error`.
 */
import { Type } from "typebox";
import { defineTool } from "../agent/tools.js";
import { exposureOf } from "../agent/tool-exposure.js";
import type { AgentTool, ToolExecutionContext, UserContent } from "../types.js";
import { toolDeclarations, DECLARATIONS_TOKEN_BUDGET } from "./declarations.js";
import { CodeSandbox, DEFAULT_SANDBOX_LIMITS, type SandboxLimits, type ScriptOutcome } from "./sandbox.js";

export const CODE_TOOL_NAME = "code";

const codeParameters = Type.Object({
  code: Type.String({
    description: "JavaScript: the body of an async function. Use await tools.<name>(args); return a JSON value.",
  }),
});

/** Options of `createCodeTool`. */
export interface CodeToolOptions {
  /** The tools a script may call (hidden tools and the code tool itself are left out). */
  tools: readonly AgentTool<any, any>[];
  /** The sandbox to run in (default: one shared by the process, started on first use). */
  sandbox?: CodeSandbox;
  /** Limits for every script (defaults: `DEFAULT_SANDBOX_LIMITS`). */
  limits?: Partial<SandboxLimits>;
  /** Budget of the tool declarations in the description, in tokens (default 3000). */
  tokenBudget?: number;
}

let shared: CodeSandbox | undefined;

/** The process's shared sandbox (one warm worker). */
export function sharedSandbox(): CodeSandbox {
  shared ??= new CodeSandbox();
  return shared;
}

/** The `code` tool over `options.tools`. */
export function createCodeTool(options: CodeToolOptions): AgentTool<typeof codeParameters, ScriptOutcome> {
  const callable = options.tools.filter((tool) => exposureOf(tool) !== "hidden" && tool.name !== CODE_TOOL_NAME);
  const names = callable.map((tool) => tool.name);
  const limits = { ...DEFAULT_SANDBOX_LIMITS, ...options.limits };
  const description =
    "Runs JavaScript as the body of an async function in a QuickJS sandbox: no timers, network, process or " +
    "filesystem, and a fresh sandbox for every script (nothing is kept between scripts). Call tools as " +
    "`await tools.<name>(args)`: each resolves to the tool's text and throws an Error with it if the tool fails. " +
    "`console.log` output and the value you `return` (as JSON) come back to you. Use it to make several tool calls " +
    `in one step. Limits: ${limits.timeoutMs} ms, ${limits.maxCalls} tool calls per script.\n\n` +
    toolDeclarations(
      // a direct tool is declared to the model with its description already: its signature is enough here
      callable.map((tool) => (exposureOf(tool) === "direct" ? { ...tool, description: "" } : tool)),
      options.tokenBudget ?? DECLARATIONS_TOKEN_BUDGET,
    );
  return defineTool({
    name: CODE_TOOL_NAME,
    label: "Code",
    description,
    parameters: codeParameters,
    execute: async (_id, { code }, signal, _onUpdate, context?: ToolExecutionContext) => {
      // #region lab 16.4 createCodeTool
      if (context === undefined) {
        const message = "The code tool runs only inside the agent loop, which hands it the ToolExecutionContext.";
        return { content: [{ type: "text", text: message }], details: failedOutcome(message), isError: true };
      }
      const sandbox = options.sandbox ?? sharedSandbox();
      const outcome = await sandbox.run({
        code,
        tools: names,
        limits,
        ...(signal !== undefined && { signal }),
        callTool: async (name, args, signal) => {
          const { result, isError } = await context.callTool(name, args, { signal });
          return { text: textOfContent(result.content), isError };
        },
      });
      return { content: [{ type: "text", text: reportOutcome(outcome) }], details: outcome, isError: !outcome.ok };
      // #endregion
    },
  });
}

/** The model-facing text of a script's outcome (see the file's comment). */
export function reportOutcome(outcome: ScriptOutcome): string {
  const parts: string[] = [];
  if (outcome.ok) {
    if (outcome.value !== undefined) parts.push(`Result: ${JSON.stringify(outcome.value)}`);
  } else {
    const error = outcome.error ?? { kind: "script", message: "the script failed" };
    parts.push(`The script failed (${error.kind}): ${error.message}.`);
  }
  if (outcome.logs.length > 0) parts.push(`Console:\n${outcome.logs.join("\n")}`);
  const cancelled = outcome.calls.filter((call) => call.cancelled === true).map((call) => call.name);
  if (outcome.ok && cancelled.length > 0) {
    parts.push(
      `Tool calls: ${outcome.calls.length}; ${cancelled.length} still running when the script returned were cancelled ` +
        `(${cancelled.join(", ")}): await every call whose result you need.`,
    );
  } else if (outcome.ok) parts.push(`Tool calls: ${outcome.calls.length}`);
  else if (outcome.calls.length === 0) parts.push("No tool calls were made.");
  else {
    const lines = outcome.calls.map((call, index) => {
      const state = call.cancelled
        ? "cancelled"
        : call.isError === undefined
          ? "unfinished"
          : call.isError
            ? "error"
            : "ok";
      return `${index + 1}. ${call.name} ${preview(call.args)} → ${state}`;
    });
    parts.push(`Tool calls made before the failure (they are not undone):\n${lines.join("\n")}`);
  }
  return parts.join("\n");
}

function preview(args: unknown): string {
  const json = JSON.stringify(args) ?? "undefined";
  return json.length > 200 ? `${json.slice(0, 199)}…` : json;
}

function textOfContent(content: readonly UserContent[]): string {
  return content.map((block) => (block.type === "text" ? block.text : `[${block.type}]`)).join("\n");
}

function failedOutcome(message: string): ScriptOutcome {
  return { ok: false, error: { kind: "sandbox", message }, logs: [], calls: [] };
}
