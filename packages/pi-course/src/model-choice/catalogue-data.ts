/**
 * The models the course knows (chapter 18): plain data, one entry per model a user can name.
 *
 * Each price is in US dollars per million tokens, copied from the provider's public price list;
 * `prices` says where (`source`) and as of when (`asOf`, the month the list was read). Prices
 * change: a user who needs today's price puts the model in `~/.pi-course/models.json` (see
 * `catalogue.ts`), whose entries replace these. Models served on your own machine cost nothing
 * (`local`). `cacheRead` / `cacheWrite` are absent where the provider has no such price: those
 * tokens are then priced as input (see `cost.ts`).
 */
import type { CatalogueEntry } from "./types.js";

const OPENAI = { source: "https://openai.com/api/pricing/", asOf: "2025-10" };
const ANTHROPIC = { source: "https://docs.anthropic.com/en/docs/about-claude/pricing", asOf: "2025-10" };
const DEEPSEEK = { source: "https://api-docs.deepseek.com/quick_start/pricing", asOf: "2025-10" };
const GROQ = { source: "https://groq.com/pricing", asOf: "2025-10" };
const OPENROUTER = {
  source: "https://openrouter.ai/models (the provider's own price, passed through)",
  asOf: "2025-10",
};
const LOCAL = { source: "runs on your own machine: no price per token", asOf: "2025-10" };

const text = ["text"] as const;
const textImage = ["text", "image"] as const;

/** The built-in catalogue. Ids are the names the provider's API takes. */
// biome-ignore format: one model per line, read as a table
export const BUILTIN_MODELS: readonly CatalogueEntry[] = [
  // OpenAI (Chat Completions)
  { id: "gpt-4o", provider: "openai", api: "openai-compatible", contextWindow: 128_000, maxOutput: 16_384, input: textImage, reasoning: false, prices: { input: 2.5, output: 10, cacheRead: 1.25, ...OPENAI } },
  { id: "gpt-4o-mini", provider: "openai", api: "openai-compatible", contextWindow: 128_000, maxOutput: 16_384, input: textImage, reasoning: false, prices: { input: 0.15, output: 0.6, cacheRead: 0.075, ...OPENAI } },
  { id: "gpt-4.1", provider: "openai", api: "openai-compatible", contextWindow: 1_047_576, maxOutput: 32_768, input: textImage, reasoning: false, prices: { input: 2, output: 8, cacheRead: 0.5, ...OPENAI } },
  { id: "gpt-4.1-mini", provider: "openai", api: "openai-compatible", contextWindow: 1_047_576, maxOutput: 32_768, input: textImage, reasoning: false, prices: { input: 0.4, output: 1.6, cacheRead: 0.1, ...OPENAI } },
  { id: "gpt-4.1-nano", provider: "openai", api: "openai-compatible", contextWindow: 1_047_576, maxOutput: 32_768, input: textImage, reasoning: false, prices: { input: 0.1, output: 0.4, cacheRead: 0.025, ...OPENAI } },
  { id: "gpt-5", provider: "openai", api: "openai-compatible", contextWindow: 400_000, maxOutput: 128_000, input: textImage, reasoning: true, prices: { input: 1.25, output: 10, cacheRead: 0.125, ...OPENAI } },
  { id: "gpt-5-mini", provider: "openai", api: "openai-compatible", contextWindow: 400_000, maxOutput: 128_000, input: textImage, reasoning: true, prices: { input: 0.25, output: 2, cacheRead: 0.025, ...OPENAI } },
  { id: "gpt-5-nano", provider: "openai", api: "openai-compatible", contextWindow: 400_000, maxOutput: 128_000, input: textImage, reasoning: true, prices: { input: 0.05, output: 0.4, cacheRead: 0.005, ...OPENAI } },
  { id: "o3", provider: "openai", api: "openai-compatible", contextWindow: 200_000, maxOutput: 100_000, input: textImage, reasoning: true, prices: { input: 2, output: 8, cacheRead: 0.5, ...OPENAI } },
  { id: "o4-mini", provider: "openai", api: "openai-compatible", contextWindow: 200_000, maxOutput: 100_000, input: textImage, reasoning: true, prices: { input: 1.1, output: 4.4, cacheRead: 0.275, ...OPENAI } },
  // Anthropic (Messages API); a 5-minute cache write costs 1.25 × input, a read 0.1 ×
  { id: "claude-sonnet-4-5", provider: "anthropic", api: "anthropic", contextWindow: 200_000, maxOutput: 64_000, input: textImage, reasoning: true, prices: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75, ...ANTHROPIC } },
  { id: "claude-sonnet-4-0", provider: "anthropic", api: "anthropic", contextWindow: 200_000, maxOutput: 64_000, input: textImage, reasoning: true, prices: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75, ...ANTHROPIC } },
  { id: "claude-opus-4-1", provider: "anthropic", api: "anthropic", contextWindow: 200_000, maxOutput: 32_000, input: textImage, reasoning: true, prices: { input: 15, output: 75, cacheRead: 1.5, cacheWrite: 18.75, ...ANTHROPIC } },
  { id: "claude-haiku-4-5", provider: "anthropic", api: "anthropic", contextWindow: 200_000, maxOutput: 64_000, input: textImage, reasoning: true, prices: { input: 1, output: 5, cacheRead: 0.1, cacheWrite: 1.25, ...ANTHROPIC } },
  { id: "claude-3-5-haiku-latest", provider: "anthropic", api: "anthropic", contextWindow: 200_000, maxOutput: 8_192, input: textImage, reasoning: false, prices: { input: 0.8, output: 4, cacheRead: 0.08, cacheWrite: 1, ...ANTHROPIC } },
  // DeepSeek (OpenAI-compatible); cache hits are `cacheRead`
  { id: "deepseek-chat", provider: "deepseek", api: "openai-compatible", contextWindow: 128_000, maxOutput: 8_192, input: text, reasoning: false, prices: { input: 0.28, output: 0.42, cacheRead: 0.028, ...DEEPSEEK } },
  { id: "deepseek-reasoner", provider: "deepseek", api: "openai-compatible", contextWindow: 128_000, maxOutput: 64_000, input: text, reasoning: true, prices: { input: 0.28, output: 0.42, cacheRead: 0.028, ...DEEPSEEK } },
  // Groq (OpenAI-compatible)
  { id: "llama-3.3-70b-versatile", provider: "groq", api: "openai-compatible", contextWindow: 131_072, maxOutput: 32_768, input: text, reasoning: false, prices: { input: 0.59, output: 0.79, ...GROQ } },
  { id: "openai/gpt-oss-120b", provider: "groq", api: "openai-compatible", contextWindow: 131_072, maxOutput: 65_536, input: text, reasoning: true, prices: { input: 0.15, output: 0.75, ...GROQ } },
  { id: "openai/gpt-oss-20b", provider: "groq", api: "openai-compatible", contextWindow: 131_072, maxOutput: 65_536, input: text, reasoning: true, prices: { input: 0.1, output: 0.5, ...GROQ } },
  // OpenRouter (OpenAI-compatible; ids are vendor/model)
  { id: "anthropic/claude-sonnet-4.5", provider: "openrouter", api: "openai-compatible", contextWindow: 200_000, maxOutput: 64_000, input: textImage, reasoning: true, prices: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75, ...OPENROUTER } },
  { id: "openai/gpt-4o-mini", provider: "openrouter", api: "openai-compatible", contextWindow: 128_000, maxOutput: 16_384, input: textImage, reasoning: false, prices: { input: 0.15, output: 0.6, cacheRead: 0.075, ...OPENROUTER } },
  { id: "deepseek/deepseek-chat", provider: "openrouter", api: "openai-compatible", contextWindow: 128_000, maxOutput: 8_192, input: text, reasoning: false, prices: { input: 0.28, output: 0.42, ...OPENROUTER } },
  // Local servers (llama.cpp, Ollama, vLLM): the README's examples
  { id: "qwen2.5-coder", provider: "local", api: "openai-compatible", contextWindow: 32_768, maxOutput: 8_192, input: text, reasoning: false, prices: { input: 0, output: 0, ...LOCAL } },
  { id: "llama3.1", provider: "local", api: "openai-compatible", contextWindow: 131_072, maxOutput: 8_192, input: text, reasoning: false, prices: { input: 0, output: 0, ...LOCAL } },
  { id: "qwen3", provider: "local", api: "openai-compatible", contextWindow: 40_960, maxOutput: 8_192, input: text, reasoning: true, prices: { input: 0, output: 0, ...LOCAL } },
];
