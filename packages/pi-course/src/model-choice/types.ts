/**
 * The vocabulary of the model catalogue (chapter 18): what is known of a model, as plain data.
 */

/** The wire format a model speaks. */
export type ModelApi = "openai-compatible" | "anthropic";

/** What a model can read. */
export type ModelInput = "text" | "image";

/**
 * US dollars per million tokens, with where and when the price was read. `cacheRead` and
 * `cacheWrite` are absent where the provider has no such price (the tokens are priced as input).
 */
export interface ModelPrices {
  input: number;
  output: number;
  cacheRead?: number;
  cacheWrite?: number;
  /** Where the price was read (a price list's address); `"yours"` for a price a models file gives without one. */
  source: string;
  /** When it was read (`YYYY-MM` or `YYYY-MM-DD`); absent when the models file does not say. */
  asOf?: string;
}

/** One model of the catalogue. */
export interface CatalogueEntry {
  /** The name the provider's API takes, e.g. `"gpt-4o-mini"`, `"claude-sonnet-4-5"`. */
  id: string;
  /** Who serves it: `openai`, `anthropic`, `deepseek`, `groq`, `openrouter`, `local`, … */
  provider: string;
  api: ModelApi;
  /** Tokens the model reads per call (prompt and answer together). */
  contextWindow: number;
  /** The most tokens of one answer. */
  maxOutput: number;
  input: readonly ModelInput[];
  /** Whether the model thinks before it answers (a thinking level means something to it). */
  reasoning: boolean;
  /** Absent: the price is unknown. */
  prices?: ModelPrices;
  /** This model's own server, instead of its provider's (`BUILTIN_PROVIDERS`, or the models file's `providers`). */
  baseUrl?: string;
  /** The variable holding this model's key, instead of its provider's. */
  apiKeyEnv?: string;
  /** Extra request headers for this model, over its provider's (a models file's `headers`). */
  headers?: Record<string, string>;
  /**
   * `false`: the server takes no thinking parameter (pi's `compat.supportsReasoningEffort: false`),
   * so a thinking level is not sent to this model, as for one that does not reason.
   */
  thinkingParameter?: false;
}

/**
 * What a models file's `modelOverrides` may change of a known model (pi's shape): its window, its
 * room, its inputs, whether it reasons, its prices (a partial price replaces the fields it gives),
 * its headers, whether it takes a thinking parameter.
 */
export interface ModelOverride {
  contextWindow?: number;
  maxOutput?: number;
  input?: ModelInput[];
  reasoning?: boolean;
  prices?: Partial<ModelPrices>;
  headers?: Record<string, string>;
  thinkingParameter?: false;
}

/** What `resolve` gives: the entry, and whether it came from the catalogue. */
export interface ModelInfo extends CatalogueEntry {
  /** False when the name is not in the catalogue and the defaults stand in. */
  known: boolean;
  /** Set when `known` is false: the one notice to show a person. */
  notice?: string;
}
