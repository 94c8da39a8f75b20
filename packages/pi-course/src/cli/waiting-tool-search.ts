/**
 * `tool_search` while MCP servers are still starting. The print, JSON and trace modes do not wait
 * for a server whose tools need not be declared up front (issue 53: a server that never answers
 * must not hold the first answer back), so its tools may arrive after the run has begun: they join
 * the model's next request (the runtime gives the agent `currentTools`). Until then the model
 * reaches them through this search: it first waits for the servers still starting, each within
 * its own start-up timeout (and the run's abort), then searches the deferred tools as they are by
 * then. Its answer names each server that arrived with tools declared directly (the model has them
 * from its next request on), and each that did not start, with its reason and what to do; it is
 * an error result when nothing was found and a server did not start.
 */
import type { AgentTool } from "../types.js";
import type { ToolSearchDetails } from "../tool-search/tool-search.js";

/** What the search needs of the MCP servers. */
export interface StartingServers {
  /** The servers the search waits for that are still starting now. */
  starting(): string[];
  /** Resolves once each of `names` is ready or failed (its start-up timeout bounds it; never rejects). */
  settled(names: readonly string[]): Promise<void>;
  /** Why `name` has no tools now (it failed, or is still starting), or undefined when it is ready. */
  problem(name: string): string | undefined;
  /** The names of `name`'s tools declared to the model directly (none when they are deferred). */
  directTools(name: string): string[];
  /** The `tool_search` over the deferred MCP tools as they are now, or undefined when there are none. */
  search(): AgentTool<any, ToolSearchDetails> | undefined;
}

/**
 * A `tool_search` that waits for `servers` still starting before it searches. `search` is the one
 * over the tools already there (its name, label and parameters are kept; `deferred`: how many
 * tools it searches). The description names the servers it waits for.
 */
export function waitingToolSearch(
  search: AgentTool<any, ToolSearchDetails>,
  servers: StartingServers,
  deferred: number,
): AgentTool<any, ToolSearchDetails> {
  const waits =
    `The MCP servers ${servers.starting().join(", ")} are still starting: a search waits for them (up to each one's ` +
    "start-up limit) and says which of their tools you have from your next request on.";
  return {
    ...search,
    description: deferred > 0 ? `${search.description} ${waits}` : `Finds tools by keywords. ${waits}`,
    execute: async (id, params, signal, onUpdate, context) => {
      const waited = servers.starting();
      if (waited.length > 0) {
        const aborted = new Promise<void>((resolve) =>
          signal?.addEventListener("abort", () => resolve(), { once: true }),
        );
        await Promise.race([servers.settled(waited), aborted]);
        if (signal?.aborted) throw new Error("the search was aborted while MCP servers were starting");
      }
      const lines: string[] = [];
      let arrived = 0;
      for (const name of waited) {
        const problem = servers.problem(name);
        if (problem !== undefined) {
          lines.push(
            `The MCP server ${name} did not start (${problem}): its tools cannot be used in this run. ` +
              `Tell the user; its entry in mcp.json (command, "startupTimeoutMs") is what to check.`,
          );
          continue;
        }
        const direct = servers.directTools(name);
        arrived++;
        if (direct.length > 0)
          lines.push(
            `The MCP server ${name} is ready; declared to you from your next request on: ${direct.join(", ")}.`,
          );
      }
      const query = String((params as { query?: unknown }).query);
      const found = await servers.search()?.execute(id, params, signal, onUpdate, context);
      const matched = found?.declareTools !== undefined && found.declareTools.length > 0;
      const text = found?.content.flatMap((block) => (block.type === "text" ? [block.text] : [])).join("\n");
      const said = [...lines, ...(text ? [text] : [])].join("\n") || `No deferred tool matches "${query}".`;
      // nothing found, and a server it waited for never came: an error result that says which and why
      if (!matched && arrived === 0 && lines.length > 0) throw new Error(said);
      return {
        content: [{ type: "text", text: said }],
        details: found?.details ?? { query, matches: [] },
        ...(matched && { declareTools: found.declareTools }),
      };
    },
  };
}
