/**
 * Chapter 15: which tools are declared to the model, and which calls the loop refuses.
 *
 * A tool's `exposure` (see `ToolExposure` in types.ts) says who sees it and who may call it. The
 * declared set of one request is every `direct` tool plus every `deferred` tool named by the
 * `declaredTools` of a tool result in the transcript so far, or of a compaction's summary (a user
 * message naming the declarations of the part it condensed): the transcript is the only record,
 * so a run resumed from it, or compacted, declares the same tools as before. Of the deferred ones,
 * only the `MAX_DECLARED_DEFERRED` most recently declared or called stay (declared-window.ts).
 *
 * A model's call to a tool outside that set is answered with an error result that says
 * `was not declared to you in this request`; a script's call (codemode) may reach `direct`,
 * `deferred` and `codemode` tools, never a `hidden` one.
 */
import type { AgentContext, AgentMessage, AgentTool, ToolExposure } from "../types.js";
import { DeclaredWindow } from "./declared-window.js";
import type { AnsweredToolCall, ToolMiddleware } from "./types.js";

/** Who asked for a call: the model (in its message) or a codemode script (a nested call). */
export type CallOrigin = "model" | "script";

/** A tool's exposure, `direct` when it sets none (or an unknown value). */
export function exposureOf(tool: AgentTool<any, any>): ToolExposure {
  const exposure = tool.exposure;
  return exposure === "deferred" || exposure === "codemode" || exposure === "hidden" ? exposure : "direct";
}

/**
 * The names declared to the model for the next request, or `undefined` when every tool is
 * `direct` (nothing to track: the loop's fast path). Deferred tools count once the
 * `declaredTools` of a tool result or of a compaction summary (a user message) in `messages`
 * names them.
 */
export function declaredToolNames(
  tools: readonly AgentTool<any, any>[],
  messages: readonly AgentMessage[],
): Set<string> | undefined {
  if (tools.every((tool) => exposureOf(tool) === "direct")) return undefined;
  // #region lab 15.1 declaredToolNames
  const deferred = new Set<string>();
  const declared = new Set<string>();
  for (const tool of tools) {
    const exposure = exposureOf(tool);
    if (exposure === "direct") declared.add(tool.name);
    else if (exposure === "deferred") deferred.add(tool.name);
  }
  for (const message of messages) {
    // A tool result's declaration, or a compaction summary's (the declarations it condensed).
    if ((message.role !== "toolResult" && message.role !== "user") || !Array.isArray(message.declaredTools)) continue;
    for (const name of message.declaredTools) if (deferred.has(name)) declared.add(name);
  }
  return declared;
  // #endregion
}

/**
 * Why the loop refuses a call before preparing it, or `undefined` to let it through (then an
 * unknown name is answered `Tool "…" not found. Available tools: …`). `declared` is the request's
 * declared set (`undefined`: every tool is direct). `parent` is the name of the tool whose script
 * made a nested call; a script may not call its own tool.
 */
export function exposureRefusal(
  tools: readonly AgentTool<any, any>[],
  declared: ReadonlySet<string> | undefined,
  name: string,
  origin: CallOrigin,
  parent?: string,
): string | undefined {
  if (origin === "model" && declared === undefined) return undefined; // every tool is direct
  // #region lab 15.1 exposureRefusal
  const tool = tools.find((candidate) => candidate.name === name);
  if (origin === "script") {
    if (tool === undefined || exposureOf(tool) === "hidden" || name === parent) {
      const callable = tools
        .filter((candidate) => exposureOf(candidate) !== "hidden" && candidate.name !== parent)
        .map((candidate) => candidate.name);
      return `Tool "${name}" is not callable from a script. Callable tools: ${callable.join(", ") || "(none)"}.`;
    }
    return undefined;
  }
  if (declared === undefined || declared.has(name)) return undefined;
  const names = [...declared].join(", ") || "(none)";
  if (tool === undefined || exposureOf(tool) === "hidden")
    return `Tool "${name}" not found. Available tools: ${names}.`;
  if (exposureOf(tool) === "codemode") {
    return (
      `Tool "${name}" was not declared to you in this request: it can only be called from a script ` +
      `(the code tool), as tools.${name}(args).`
    );
  }
  return (
    `Tool "${name}" was not declared to you in this request: it is a deferred tool. Find it with ` +
    `tool_search first; it is declared to you from the next request on.`
  );
  // #endregion
}

/**
 * The middleware of one run: declares the run's declared set to the model, refuses the calls
 * `exposureRefusal` refuses, records on each result message the deferred tools it newly declared
 * (`declaredTools`), and declares them from the next request on.
 */
export function toolExposure(context: AgentContext): ToolMiddleware {
  const tools = context.tools ?? [];
  const declared = declaredToolNames(tools, context.messages);
  // at most MAX_DECLARED_DEFERRED deferred tools stay declared: the most recently found or called
  const window = declared === undefined ? undefined : DeclaredWindow.read(tools, context.messages);
  if (window !== undefined) {
    for (const tool of tools) if (tool.exposure === "deferred" && !window.has(tool.name)) declared!.delete(tool.name);
  }
  return {
    declares: (tool) => declared === undefined || declared.has(tool.name),
    refuse: (call, parent) =>
      exposureRefusal(tools, declared, call.name, parent === undefined ? "model" : "script", parent?.name),
    result(message, done) {
      const fresh = newlyDeclared(tools, declared, done);
      if (fresh !== undefined) message.declaredTools = fresh;
    },
    afterBatch(results) {
      const names = results.flatMap((result) => result.declaredTools ?? []);
      if (declared === undefined || window === undefined) return false;
      for (const result of results) window.used(result.toolName);
      if (names.length === 0) return false;
      for (const tool of tools) if (tool.exposure === "deferred" && names.includes(tool.name)) declared.add(tool.name);
      for (const name of window.declare(names)) declared.delete(name);
      return true;
    },
  };
}

/**
 * The deferred tools a successful result asks to declare that are not declared yet (in this
 * request's set `declared`), in the order of `tools`, or `undefined`. The loop then declares
 * them from the next request on.
 */
export function newlyDeclared(
  tools: readonly AgentTool<any, any>[],
  declared: ReadonlySet<string> | undefined,
  done: AnsweredToolCall,
): string[] | undefined {
  const names = done.result.declareTools;
  if (names === undefined) return undefined;
  // #region lab 15.2 newlyDeclared
  if (done.isError || declared === undefined) return undefined;
  const fresh = tools
    .filter((tool) => tool.exposure === "deferred" && names.includes(tool.name) && !declared.has(tool.name))
    .map((tool) => tool.name);
  return fresh.length > 0 ? fresh : undefined;
  // #endregion
}
