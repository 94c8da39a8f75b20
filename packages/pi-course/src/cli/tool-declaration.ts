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

/** How the run declares MCP tools whose server sets no `exposure`. */
export interface McpDeclarationOptions {
  /** `--codemode`: they are reached through the `code` tool only (never declared directly). */
  codemode?: boolean;
  /** The MCP servers' names, for `tool_search`'s description. */
  servers?: readonly string[];
}

/**
 * The MCP servers' tools as the run declares them. A tool whose server set its `exposure` keeps
 * it. The others: with `codemode`, behind the `code` tool; else as they are, or, when more than
 * `DEFER_MCP_TOOLS_ABOVE` would be declared directly, deferred. Deferred tools come after a
 * `tool_search` tool that comes first; a note says what was done.
 */
export function deferMcpTools(mcp: readonly AgentTool<any, any>[], options: McpDeclarationOptions = {}): ExposedTools {
  const chosen = mcp.filter((tool) => tool.exposure === undefined);
  const direct = mcp.filter((tool) => tool.exposure === undefined || tool.exposure === "direct").length;
  let note: string | undefined;
  let exposure: "codemode" | "deferred" | undefined;
  if (options.codemode === true && chosen.length > 0) {
    exposure = "codemode";
    note = `${chosen.length} MCP tools are reached through the code tool (--codemode): declared in its description only`;
  } else if (direct > DEFER_MCP_TOOLS_ABOVE && chosen.length > 0) {
    exposure = "deferred";
    note =
      `${chosen.length} MCP tools (more than ${DEFER_MCP_TOOLS_ABOVE}) are deferred: the model finds them with ` +
      "tool_search, and each is declared to it once found";
  }
  const tools = mcp.map((tool) =>
    exposure !== undefined && tool.exposure === undefined ? { ...tool, exposure } : tool,
  );
  if (!tools.some((tool) => tool.exposure === "deferred")) return note === undefined ? { tools } : { tools, note };
  const servers = options.servers ?? [];
  const search = createToolSearchTool(
    tools,
    servers.length > 0 ? { from: `the MCP servers ${servers.join(", ")}` } : {},
  );
  return note === undefined ? { tools: [search, ...tools] } : { tools: [search, ...tools], note };
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
  const added = deferMcpTools(mcp, options);
  let tools: AgentTool<any, any>[] = [...own, ...added.tools];
  const note = added.note;
  // #region ch16
  if (options.codemode === true) tools = [createCodeTool({ tools }), ...tools];
  // #endregion
  return note === undefined ? { tools } : { tools, note };
}
