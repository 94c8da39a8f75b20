/**
 * MCP tools as agent tools: each tool of a server becomes an `AgentTool` named
 * `mcp__<server>__<tool>`, whose schema is the tool's `inputSchema` as the server wrote it (the
 * agent loop checks the arguments against it before the call), and whose result is mapped to
 * what a model reads.
 *
 * Result mapping: `text` → text; `image` → `ImageContent`; `audio` → a text saying it was left
 * out; `resource` → text naming the URI, followed by the resource's text when it has one;
 * `resource_link` → text naming the URI; `structuredContent` (and the raw result) → `details`;
 * `isError` → an error result whose text the model reads.
 */
import { createHash } from "node:crypto";
import type { TSchema } from "typebox";
import type { AgentTool, AgentToolResult, UserContent } from "../types.js";
import type { McpCallResult, McpClient, McpContent, McpToolInfo } from "./client.js";
import { ErrorCode, McpError } from "./json-rpc.js";
import { withoutRiskyPatterns } from "./schema-patterns.js";

/** What an MCP tool's result keeps for programs and UIs (`AgentToolResult.details`). */
export interface McpToolDetails {
  /** The server's name in the configuration. */
  server: string;
  /** The tool's own name on that server. */
  tool: string;
  /** The result's `structuredContent`, when it had one. */
  structuredContent?: Record<string, unknown>;
}

/** Characters a tool name may hold (the providers' rule); others become `_`. */
const NAME_CHARS = /[^A-Za-z0-9_-]/g;
/** The providers' limit on a tool name. */
export const MAX_TOOL_NAME = 64;

/**
 * `mcp__<server>__<tool>` with characters outside `[A-Za-z0-9_-]` replaced by `_`. A name longer
 * than 64 characters, or one already in `taken`, is cut and given a short hash of the server and
 * tool names (`_` and 6 hex digits), so it is stable between runs and unique.
 */
export function mcpToolName(server: string, tool: string, taken: ReadonlySet<string> = new Set()): string {
  // #region lab 17.4 mcpToolName
  const name = `mcp__${server.replace(NAME_CHARS, "_")}__${tool.replace(NAME_CHARS, "_")}`;
  if (name.length <= MAX_TOOL_NAME && !taken.has(name)) return name;
  for (let salt = 0; ; salt++) {
    const hash = createHash("sha256")
      .update(`${server}\u0000${tool}\u0000${salt || ""}`)
      .digest("hex")
      .slice(0, 6);
    const candidate = `${name.slice(0, MAX_TOOL_NAME - 7)}_${hash}`;
    if (!taken.has(candidate)) return candidate;
  }
  // #endregion
}

/**
 * A tool result as a model reads it (see the table at the top of this file). Never throws.
 */
export function mapCallResult(server: string, tool: string, result: McpCallResult): AgentToolResult<McpToolDetails> {
  // #region lab 17.4 mapCallResult
  const content: UserContent[] = [];
  for (const block of result.content) content.push(mapBlock(block));
  if (content.length === 0)
    content.push({
      type: "text",
      text: result.isError === true ? "The tool failed and said nothing." : "(no content)",
    });
  const details: McpToolDetails = { server, tool };
  if (result.structuredContent !== undefined) details.structuredContent = result.structuredContent;
  return result.isError === true ? { content, details, isError: true } : { content, details };
  // #endregion
}

function mapBlock(block: McpContent): UserContent {
  switch (block.type) {
    case "text":
      return { type: "text", text: block.text };
    case "image":
      return { type: "image", data: block.data, mimeType: block.mimeType };
    case "audio":
      return {
        type: "text",
        text: `[audio (${block.mimeType}) left out: this agent does not pass audio to the model]`,
      };
    case "resource": {
      const { uri, mimeType, text, blob } = block.resource;
      const kind = mimeType !== undefined ? ` (${mimeType})` : "";
      if (typeof text === "string") return { type: "text", text: `Resource ${uri}${kind}:\n${text}` };
      const size = typeof blob === "string" ? `, ${Math.floor((blob.length * 3) / 4)} bytes of binary data` : "";
      return { type: "text", text: `Resource ${uri}${kind}${size}` };
    }
    case "resource_link": {
      const name = block.name !== undefined && block.name !== block.uri ? `${block.name}: ` : "";
      const about = block.description !== undefined ? ` — ${block.description}` : "";
      return {
        type: "text",
        text: `Resource link: ${name}${block.uri}${block.mimeType !== undefined ? ` (${block.mimeType})` : ""}${about}`,
      };
    }
    default:
      return {
        type: "text",
        text: `[a content block of type ${JSON.stringify((block as { type?: unknown }).type)} that this agent cannot show]`,
      };
  }
}

/**
 * The agent tools of one server. Tools that require task augmentation are left out and named
 * in `hidden` (this client does not run tasks). `taken` holds names already used (other
 * servers' tools, the agent's own tools); the new names are added to it. Calls go through
 * `client.callTool` (an `McpClient`, or whatever starts one first).
 */
export function mcpAgentTools(
  server: string,
  client: Pick<McpClient, "callTool">,
  tools: readonly McpToolInfo[],
  taken: Set<string> = new Set(),
): { tools: AgentTool<TSchema, McpToolDetails>[]; hidden: string[]; notes: string[] } {
  const out: AgentTool<TSchema, McpToolDetails>[] = [];
  const hidden: string[] = [];
  const notes: string[] = [];
  for (const info of tools) {
    if (info.execution?.taskSupport === "required") {
      hidden.push(`${info.name} (it requires task augmentation, which this client does not support)`);
      continue;
    }
    const name = mcpToolName(server, info.name, taken);
    taken.add(name);
    out.push({
      name,
      label: `${server}: ${info.title ?? info.name}`,
      description: info.description ?? info.title ?? `The ${info.name} tool of the MCP server ${server}.`,
      parameters: schemaOf(info.inputSchema, (paths) =>
        notes.push(
          `${info.name}: patterns that could take exponential time are not checked here (${paths.join(", ")})`,
        ),
      ),
      execute: async (_id, params, signal, onUpdate) => {
        const result = await client
          .callTool(info.name, params as Record<string, unknown>, {
            ...(signal !== undefined && { signal }),
            ...(onUpdate !== undefined && {
              onProgress: (p) =>
                onUpdate({
                  content: [
                    {
                      type: "text",
                      text: `progress ${p.progress}${p.total !== undefined ? `/${p.total}` : ""}${p.message !== undefined ? `: ${p.message}` : ""}`,
                    },
                  ],
                  details: { server, tool: info.name },
                }),
            }),
          })
          .catch((error: unknown) => {
            throw pagesToOpen(error) ?? error;
          });
        return mapCallResult(server, info.name, result);
      },
    });
  }
  return { tools: out, hidden, notes };
}

/**
 * A tool call refused with -32042 (URL elicitation required, 2025-11-25) as an error that names
 * the pages the person must open before the call is tried again; undefined for any other error.
 */
function pagesToOpen(error: unknown): Error | undefined {
  if (!(error instanceof McpError) || error.kind !== "remote" || error.code !== ErrorCode.UrlElicitationRequired)
    return undefined;
  const asked = (error.data as { elicitations?: unknown } | undefined)?.elicitations;
  const pages = (Array.isArray(asked) ? asked : []).flatMap((item: unknown) => {
    const { url, message } = (item ?? {}) as { url?: unknown; message?: unknown };
    if (typeof url !== "string") return [];
    return [`${url}${typeof message === "string" && message !== "" ? ` (${message})` : ""}`];
  });
  if (pages.length === 0) return undefined;
  return new Error(
    `${error.message}: the person must open ${pages.length === 1 ? "this page" : "these pages"} first, then the call can be tried again: ${pages.join("; ")}`,
  );
}

/**
 * The tool's schema as the server sent it, without patterns that could take exponential time
 * (`onDropped` hears where they were; see schema-patterns.ts); an object schema at least (some
 * servers omit `type`).
 */
function schemaOf(inputSchema: Record<string, unknown> | undefined, onDropped: (paths: string[]) => void): TSchema {
  if (typeof inputSchema !== "object" || inputSchema === null)
    return { type: "object", properties: {} } as unknown as TSchema;
  const { schema, dropped } = withoutRiskyPatterns(inputSchema);
  if (dropped.length > 0) onDropped(dropped);
  return schema as TSchema;
}
