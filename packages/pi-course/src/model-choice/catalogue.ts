/**
 * The model catalogue (chapter 18): what the agent knows about a model it is asked to use, by
 * name. A model is more than a base URL and an id: its context window sets the context budget,
 * its prices turn usage into cost, whether it reasons decides what a thinking level does.
 *
 * - `ModelCatalogue.builtin()` holds `BUILTIN_MODELS`; `with(entries)` adds a user's models
 *   (`~/.pi-course/models.json`, read by `models-file.ts`), which replace built-in ones of the
 *   same id.
 * - `resolve(name)` finds a model by its id (exactly, else ignoring case). A model that is not in
 *   the catalogue still works: it gets `DEFAULT_MODEL_INFO` (no price: its cost is unknown,
 *   never zero), `known: false`, and one notice that says so and what to do.
 * - `virtual(name)` names the models a named virtual model routes to (fallback order).
 * - `endpoint(name)` says where a catalogue model is reached and which variable holds its key:
 *   its provider's (`BUILTIN_PROVIDERS`, or a user's `providers`), the model's own `baseUrl` /
 *   `apiKeyEnv` first.
 */
import { BUILTIN_MODELS } from "./catalogue-data.js";
import { BUILTIN_PROVIDERS, type ModelEndpoint, type ProviderEndpoint, type ProviderSettings } from "./providers.js";
import type { CatalogueEntry, ModelApi, ModelInfo, ModelOverride } from "./types.js";

/** What stands in for a model the catalogue does not know (its price stays unknown). */
export const DEFAULT_MODEL_INFO: Omit<CatalogueEntry, "id" | "provider" | "api"> = {
  contextWindow: 128_000,
  maxOutput: 8_192,
  input: ["text"],
  reasoning: false,
};

/** Known models by id, plus the named virtual models. Immutable: `with` returns a new catalogue. */
export class ModelCatalogue {
  private readonly byId = new Map<string, CatalogueEntry>();
  private readonly byLowerId = new Map<string, CatalogueEntry>();

  private constructor(
    entries: readonly CatalogueEntry[],
    private readonly virtuals: ReadonlyMap<string, readonly string[]>,
    private readonly providers: Readonly<Record<string, ProviderEndpoint>> = BUILTIN_PROVIDERS,
  ) {
    for (const entry of entries) {
      this.byId.set(entry.id, entry);
      this.byLowerId.set(entry.id.toLowerCase(), entry);
    }
  }

  /** The built-in catalogue (`BUILTIN_MODELS`), no virtual models. */
  static builtin(): ModelCatalogue {
    return new ModelCatalogue(BUILTIN_MODELS, new Map());
  }

  /**
   * A catalogue with `entries` added (replacing models of the same id), `virtual` models added
   * (name → the models it routes to, in fallback order), and `providers` added (a provider's
   * fields given here replace the known provider's, one by one; its `modelOverrides` change the
   * known models of that provider first, so an entry of the same id still replaces the result).
   */
  with(
    entries: readonly CatalogueEntry[],
    virtual: Readonly<Record<string, readonly string[]>> = {},
    providers: Readonly<Record<string, ProviderSettings>> = {},
  ): ModelCatalogue {
    const all = new Map(this.byId);
    const reached: Record<string, ProviderEndpoint> = { ...this.providers };
    for (const [name, { modelOverrides, ...given }] of Object.entries(providers)) {
      reached[name] = { ...reached[name], ...given } as ProviderEndpoint;
      for (const [id, override] of Object.entries(modelOverrides ?? {})) {
        const known = all.get(id);
        if (known !== undefined && known.provider === name) all.set(id, overridden(known, override));
      }
    }
    for (const entry of entries) all.set(entry.id, entry);
    return new ModelCatalogue([...all.values()], new Map([...this.virtuals, ...Object.entries(virtual)]), reached);
  }

  /** The model names `name` stands for: a virtual model's list, else the names between its commas. */
  members(name: string): string[] {
    return [...(this.virtual(name) ?? name.split(",").map((n) => n.trim()))];
  }

  /**
   * Where the catalogue model `id` is reached: its own `baseUrl` / `apiKeyEnv`, else its
   * provider's. Undefined when `id` is not in the catalogue, or when neither it nor its provider
   * names a server (a provider the catalogue does not know, with no `baseUrl` of its own).
   */
  endpoint(id: string): ModelEndpoint | undefined {
    const entry = this.find(id);
    if (entry === undefined) return undefined;
    const provider: Partial<ProviderEndpoint> = this.providers[entry.provider] ?? {};
    const baseUrl = entry.baseUrl ?? provider.baseUrl;
    if (baseUrl === undefined) return undefined;
    const apiKeyEnv = entry.apiKeyEnv ?? provider.apiKeyEnv;
    const headers = { ...provider.headers, ...entry.headers };
    return {
      model: entry.id,
      provider: entry.provider,
      api: entry.api,
      baseUrl,
      ...(apiKeyEnv !== undefined && { apiKeyEnv }),
      ...(Object.keys(headers).length > 0 && { headers }),
      ...(provider.authHeader === true && { authHeader: true }),
    };
  }

  /** Every model id, sorted (for completion and `/model` with no name). */
  names(): string[] {
    return [...this.byId.keys(), ...this.virtuals.keys()].sort();
  }

  /** The entry of `id` (exact, else ignoring case), or undefined. */
  find(id: string): CatalogueEntry | undefined {
    return this.byId.get(id) ?? this.byLowerId.get(id.toLowerCase());
  }

  /** The models a named virtual model routes to, or undefined when `name` is not one. */
  virtual(name: string): readonly string[] | undefined {
    return this.virtuals.get(name);
  }

  /**
   * What the agent knows of `name`: its entry (`known: true`), or the defaults with the notice
   * `model "<name>" is not in the model catalogue: …` (`known: false`). `fallback` gives the
   * provider and API of an unknown model (the server it is reached on).
   */
  resolve(name: string, fallback: { provider: string; api: ModelApi }): ModelInfo {
    const entry = this.find(name);
    if (entry !== undefined) return { ...entry, known: true };
    return {
      id: name,
      ...fallback,
      ...DEFAULT_MODEL_INFO,
      known: false,
      notice:
        `model "${name}" is not in the model catalogue: its context window is taken as ` +
        `${DEFAULT_MODEL_INFO.contextWindow} tokens and its price as unknown ` +
        "(add it to ~/.pi-course/models.json to say more)",
    };
  }
}

/** A known model with a models file's `modelOverrides` entry applied (a partial price over the known one). */
function overridden(entry: CatalogueEntry, override: ModelOverride): CatalogueEntry {
  const { prices, headers, ...fields } = override;
  const out: CatalogueEntry = { ...entry, ...fields };
  const merged = { ...entry.prices, ...prices };
  // a price is changed only into a whole one: an unknown price never gains an invented zero
  if (prices !== undefined && merged.input !== undefined && merged.output !== undefined) {
    const { asOf: _old, ...rest } = merged;
    out.prices = { ...rest, input: merged.input, output: merged.output, source: prices.source ?? "yours" };
    if (prices.asOf !== undefined) out.prices.asOf = prices.asOf;
  }
  if (headers !== undefined) out.headers = { ...entry.headers, ...headers };
  return out;
}
