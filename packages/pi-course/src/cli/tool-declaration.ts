/**
 * Chapters 15 and 16 in the CLI: which tools the model sees. The CLI's own tools (coding tools,
 * the skill tool) are always direct. MCP servers may bring many more: above
 * `DEFER_MCP_TOOLS_ABOVE` they are deferred, and the `tool_search` tool finds them
 * (`deferMcpTools`, which the MCP feature applies to its servers' tools). With `--codemode`, the
 * `code` tool runs scripts over every tool the model may reach (the codemode feature puts it
 * first). `exposeTools` is the whole list at once, as those two features build it.
 */
import type { AgentTool } from "../types.js";
// #region ch16
import { createCodeTool } from "../codemode/code-tool.js";
// #endregion
import { createToolSearchTool } from "../tool-search/tool-search.js";

/** More MCP tools than this are deferred (found with tool_search) instead of declared on every request. */
export const DEFER_MCP_TOOLS_ABOVE = 20;

/** The tools of a run, and what a person should know about them (one line, or none). */
export interface ExposedTools {
  tools: AgentTool<any, any>[];
  note?: string;
}

/**
 * The MCP servers' tools as the run declares them: as they are, or, when there are more than
 * `DEFER_MCP_TOOLS_ABOVE`, deferred behind a `tool_search` tool that comes first (with a note).
 */
export function deferMcpTools(mcp: readonly AgentTool<any, any>[]): ExposedTools {
  if (mcp.length <= DEFER_MCP_TOOLS_ABOVE) return { tools: [...mcp] };
  const deferred = mcp.map((tool) => ({ ...tool, exposure: "deferred" as const }));
  return {
    tools: [createToolSearchTool(deferred), ...deferred],
    note:
      `${mcp.length} MCP tools (more than ${DEFER_MCP_TOOLS_ABOVE}) are deferred: the model finds them with ` +
      "tool_search, and each is declared to it once found",
  };
}

/**
 * The run's tool list from its own tools and the MCP servers' tools: MCP tools deferred behind
 * `tool_search` when there are more than `DEFER_MCP_TOOLS_ABOVE`; with `codemode`, the `code`
 * tool first.
 */
export function exposeTools(
  own: readonly AgentTool<any, any>[],
  mcp: readonly AgentTool<any, any>[],
  options: { codemode?: boolean } = {},
): ExposedTools {
  const added = deferMcpTools(mcp);
  let tools: AgentTool<any, any>[] = [...own, ...added.tools];
  const note = added.note;
  // #region ch16
  if (options.codemode === true) tools = [createCodeTool({ tools }), ...tools];
  // #endregion
  return note === undefined ? { tools } : { tools, note };
}
