/**
 * The model ids a server says it serves (`GET /models` of an OpenAI-compatible server,
 * `GET /v1/models` of Anthropic), so that `/model NAME` can refuse a name that is in no
 * catalogue and not on the server, instead of failing at the next message.
 */
import { outboundFetch } from "../models/http/outbound.js";
import type { RunOptions } from "./run-options.js";

/** How long the server may take to list its models (headers and body) before the name is taken on trust. */
export const SERVER_MODELS_TIMEOUT_MS = 5_000;
/** The most bytes of the list read: 4 MiB (a list of thousands of models is ~1 MiB). */
export const SERVER_MODELS_MAX_BYTES = 4 * 1024 * 1024;

/**
 * The ids `options.server` lists, or `undefined` when it cannot say (no such endpoint, an error,
 * no answer within `SERVER_MODELS_TIMEOUT_MS`, an answer of another shape or past
 * `SERVER_MODELS_MAX_BYTES`, a redirect to another origin): never throws. The request goes
 * through the one outbound policy (`outboundFetch`): the key never follows a redirect elsewhere.
 */
export async function serverModelIds(options: RunOptions): Promise<string[] | undefined> {
  const server = options.server;
  if (server === undefined) return undefined;
  const anthropic = server.provider === "anthropic";
  const base = (server.baseUrl ?? "https://api.anthropic.com").replace(/\/+$/, "");
  const url = anthropic ? `${base}/v1/models?limit=1000` : `${base}/models`;
  const headers: Record<string, string> = { accept: "application/json" };
  if (server.apiKey !== undefined) {
    if (anthropic) headers["x-api-key"] = server.apiKey;
    else headers.authorization = `Bearer ${server.apiKey}`;
  }
  if (anthropic) headers["anthropic-version"] = "2023-06-01";
  try {
    const response = await outboundFetch(
      url,
      { headers },
      {
        what: "the server's model list",
        // the providers' rule: a base URL on the local network (a model server) may be http
        secure: false,
        maxRedirects: 5,
        maxBytes: SERVER_MODELS_MAX_BYTES,
        timeoutMs: SERVER_MODELS_TIMEOUT_MS,
      },
    );
    if (!response.ok) return undefined;
    const body = (await response.json()) as { data?: unknown };
    if (!Array.isArray(body.data)) return undefined;
    return body.data.flatMap((m) =>
      typeof (m as { id?: unknown })?.id === "string" ? [(m as { id: string }).id] : [],
    );
  } catch {
    return undefined;
  }
}
