/**
 * Where each provider of the catalogue is reached (chapter 18): its endpoint, its wire format,
 * and the environment variable that holds its key. With these, a catalogue name alone picks the
 * server and the key: `--model deepseek-chat` goes to DeepSeek with `$DEEPSEEK_API_KEY`.
 *
 * Read from each provider's own documentation (2026-12): OpenAI's API reference
 * (https://platform.openai.com/docs/api-reference), Anthropic's Messages API
 * (https://docs.anthropic.com/en/api/messages), DeepSeek's first call
 * (https://api-docs.deepseek.com/: base_url https://api.deepseek.com, or /v1 "for compatibility
 * with OpenAI"), Groq's OpenAI compatibility (https://console.groq.com/docs/openai), OpenRouter's
 * quick start (https://openrouter.ai/docs/quickstart), and Ollama's OpenAI compatibility
 * (https://ollama.com/blog/openai-compatibility: a local server needs no key; clients that require
 * one may send any text, which it ignores).
 *
 * A user's `~/.pi-course/models.json` may replace any of these (`"providers"`), add a provider,
 * or give one model its own `baseUrl` / `apiKeyEnv` (see `models-file.ts`).
 */
import type { ModelApi, ModelOverride } from "./types.js";

/** How a provider is reached. */
export interface ProviderEndpoint {
  api: ModelApi;
  /** The server's base (the adapter adds `/chat/completions` or `/v1/messages`). */
  baseUrl: string;
  /** The variable holding the key; absent: the server needs none (a local server). */
  apiKeyEnv?: string;
  /** Extra request headers for every model of the provider (a models file's `headers`). */
  headers?: Record<string, string>;
  /** Also send the key as `Authorization: Bearer <key>` (pi's `authHeader: true`; for a proxy in front of Anthropic). */
  authHeader?: boolean;
}

/** A provider as a models file gives it: fields over the known provider's, and changes to its known models. */
export interface ProviderSettings extends Partial<ProviderEndpoint> {
  /** pi's `modelOverrides`: model id → what to change of that known model of this provider (unknown ids are ignored). */
  modelOverrides?: Record<string, ModelOverride>;
}

/** The providers of the built-in catalogue. */
export const BUILTIN_PROVIDERS: Readonly<Record<string, ProviderEndpoint>> = {
  openai: { api: "openai-compatible", baseUrl: "https://api.openai.com/v1", apiKeyEnv: "OPENAI_API_KEY" },
  anthropic: { api: "anthropic", baseUrl: "https://api.anthropic.com", apiKeyEnv: "ANTHROPIC_API_KEY" },
  deepseek: { api: "openai-compatible", baseUrl: "https://api.deepseek.com/v1", apiKeyEnv: "DEEPSEEK_API_KEY" },
  groq: { api: "openai-compatible", baseUrl: "https://api.groq.com/openai/v1", apiKeyEnv: "GROQ_API_KEY" },
  openrouter: { api: "openai-compatible", baseUrl: "https://openrouter.ai/api/v1", apiKeyEnv: "OPENROUTER_API_KEY" },
  local: { api: "openai-compatible", baseUrl: "http://127.0.0.1:11434/v1" },
};

/** Where one model is reached: its provider's endpoint with the model's own overrides. */
export interface ModelEndpoint extends ProviderEndpoint {
  /** The model's id (the name the provider's API takes). */
  model: string;
  provider: string;
}
