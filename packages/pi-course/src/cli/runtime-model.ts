/**
 * One real model on the server the command line names (`--base-url` or `--provider anthropic`,
 * with its key): the provider's factory with the model id given.
 */
import { createAnthropicModel } from "../models/anthropic/anthropic.js";
import { createOpenAICompatibleModel } from "../models/openai/openai-compatible.js";
import type { Model } from "../model.js";
import type { RunOptions } from "./run-options.js";

/** What a caller may set besides the id: the answer's room (Anthropic needs one) and the transport's retries. */
export interface ServerModelOptions {
  /** Anthropic's `max_tokens` (default 8192); not sent to OpenAI-compatible servers. */
  maxTokens?: number;
  /** Retries before the first byte (default: the transport's). */
  maxRetries?: number;
}

/** The model `id` on `options.server` (which must be set). */
export function createServerModel(options: RunOptions, id: string, extra: ServerModelOptions = {}): Model {
  const server = options.server;
  if (server === undefined) throw new Error("createServerModel: the offline demo has no server");
  const reach: { apiKey?: string; headers?: Record<string, string> } =
    server.apiKey !== undefined ? { apiKey: server.apiKey } : {};
  // #region ch18
  if (server.headers !== undefined) reach.headers = server.headers; // a models file's headers
  // #endregion
  const retries = extra.maxRetries !== undefined ? { maxRetries: extra.maxRetries } : {};
  if (server.provider === "anthropic") {
    return createAnthropicModel({
      ...(server.baseUrl !== undefined && { baseUrl: server.baseUrl }),
      model: id,
      maxTokens: extra.maxTokens ?? 8192,
      ...reach,
      ...retries,
    });
  }
  return createOpenAICompatibleModel({ baseUrl: server.baseUrl!, model: id, ...reach, ...retries });
}
