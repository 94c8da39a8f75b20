/**
 * Chapter 15: the `tool_search` tool. With a hundred tools (MCP servers bring many), declaring
 * each on every request costs thousands of tokens. Deferred tools (`exposure: "deferred"`) are
 * not declared; the model finds them with `tool_search`, whose result asks the loop to declare
 * the best matches from the next request on (`declareTools`; the loop records them on the result
 * message as `declaredTools`, so a resumed session declares them too).
 *
 * The result text starts with `Declared from your next request on:` followed by one line per
 * tool (`- name: description`), only the matches near the best (`relevantMatches`); with no match it says `No deferred tool matches` and lists a few
 * deferred names.
 */
import { Type } from "typebox";
import { defineTool } from "../agent/tools.js";
import type { AgentTool } from "../types.js";
import { rankTools, type ToolMatch } from "./bm25.js";

/** The most tools one search declares when `maxResults` is not given. */
export const TOOL_SEARCH_MAX_RESULTS = 5;

/** A match is declared only when it scores at least this share of the best match: 0.5. */
export const TOOL_SEARCH_MIN_SHARE = 0.5;

/**
 * `matches` (best first) without those far below the best (under `TOOL_SEARCH_MIN_SHARE` of its
 * score): a query that fits one tool well declares that one, not four that share a common word.
 */
export function relevantMatches(matches: readonly ToolMatch[]): ToolMatch[] {
  const best = matches[0]?.score ?? 0;
  return matches.filter((match) => match.score >= best * TOOL_SEARCH_MIN_SHARE);
}

const toolSearchParameters = Type.Object({
  query: Type.String({ description: "Keywords: what the tool should do, or part of its name." }),
});

/** What `tool_search` reports to programs: the query and the ranked matches. */
export interface ToolSearchDetails {
  query: string;
  matches: ToolMatch[];
}

/** Options of `createToolSearchTool`. */
export interface ToolSearchOptions {
  /** The most tools one search declares (default `TOOL_SEARCH_MAX_RESULTS`). */
  maxResults?: number;
  /** Where the deferred tools come from, named in the description (e.g. `the MCP servers fs, notion`). */
  from?: string;
}

/**
 * The `tool_search` tool over the `deferred` tools of `tools` (others are ignored: they are
 * declared already, or never). Its description gives the number of deferred tools.
 */
export function createToolSearchTool(
  tools: readonly AgentTool<any, any>[],
  options: ToolSearchOptions = {},
): AgentTool<typeof toolSearchParameters, ToolSearchDetails> {
  const deferred = tools.filter((tool) => tool.exposure === "deferred");
  const limit = options.maxResults ?? TOOL_SEARCH_MAX_RESULTS;
  if (!Number.isInteger(limit) || limit < 1) {
    throw new TypeError(`createToolSearchTool: maxResults must be a positive integer, got ${String(limit)}.`);
  }
  return defineTool({
    name: "tool_search",
    label: "Tool search",
    description:
      `Searches ${deferred.length} more tools${options.from === undefined ? "" : ` (${options.from})`} that are not declared to you yet, by keywords (what the tool does, ` +
      `or part of its name). The best ${limit} matches are declared to you from your next request on; then call them ` +
      "as any other tool.",
    parameters: toolSearchParameters,
    execute: async (_id, { query }) => {
      // #region lab 15.4 tool_search
      const matches = relevantMatches(rankTools(deferred, query, limit));
      if (matches.length === 0) {
        const some = deferred.slice(0, 20).map((tool) => tool.name);
        const more = deferred.length > some.length ? `, … (${deferred.length} in all)` : "";
        return {
          content: [
            {
              type: "text",
              text: `No deferred tool matches "${query}". Try other words; some deferred tools: ${some.join(", ") || "(none)"}${more}.`,
            },
          ],
          details: { query, matches },
        };
      }
      const lines = matches.map((match) => {
        const tool = deferred.find((candidate) => candidate.name === match.name)!;
        return `- ${tool.name}: ${firstLine(tool.description)}`;
      });
      return {
        content: [{ type: "text", text: `Declared from your next request on:\n${lines.join("\n")}` }],
        details: { query, matches },
        declareTools: matches.map((match) => match.name),
      };
      // #endregion
    },
  });
}

function firstLine(text: string): string {
  const line = (text ?? "").split("\n", 1)[0]!.trim();
  return line.length > 200 ? `${line.slice(0, 199)}…` : line;
}
