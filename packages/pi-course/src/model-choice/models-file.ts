/**
 * A user's own models (chapter 18): `~/.pi-course/models.json`, checked field by field.
 *
 * ```json
 * {
 *   "models": [
 *     { "id": "my-model", "provider": "local", "api": "openai-compatible", "contextWindow": 32768,
 *       "maxOutput": 4096, "input": ["text"], "reasoning": false,
 *       "prices": { "input": 0, "output": 0 } }
 *   ],
 *   "virtual": { "cheap-then-strong": ["gpt-4o-mini", "gpt-4o"] },
 *   "providers": { "deepseek": { "baseUrl": "http://127.0.0.1:8080/v1", "apiKeyEnv": "MY_DEEPSEEK_KEY" } }
 * }
 * ```
 *
 * A price needs no `source` or `asOf` (a price without a source is `"yours"`). pi's models.json
 * shape is read too, so a pi user can bring that file: a provider holding its own `models`
 * (each with `maxTokens` and a `cost`), its `api` (`openai-completions` or `anthropic-messages`)
 * and `apiKey`, which must name the variable that holds the key (a key itself is refused):
 *
 * ```json
 * { "providers": { "ollama": { "baseUrl": "http://localhost:11434/v1", "api": "openai-completions",
 *     "models": [{ "id": "llama-3.1-8b", "contextWindow": 128000, "maxTokens": 32000,
 *                  "cost": { "input": 0, "output": 0 } }] } } }
 * ```
 *
 * A model here replaces a built-in one of the same id; it may name its own server and key
 * variable (`baseUrl`, `apiKeyEnv`). A virtual model names two or more models it falls back
 * over, in order. A provider here replaces the fields it gives of a known provider
 * (`providers.ts`), or adds a provider (then `baseUrl` is needed). Anything else is refused with a `ModelsFileError` that names the
 * file, the field and what to write instead: a bad file is never half read.
 */
import { type Static, type TSchema, Type } from "typebox";
import { parseJson, readTextFile } from "../base/read-json.js";
import type { ModelCatalogue } from "./catalogue.js";
import { BUILTIN_PROVIDERS, type ProviderEndpoint } from "./providers.js";
import type { CatalogueEntry, ModelPrices } from "./types.js";
import { PiCourseError } from "../base/errors.js";

/** A models file that cannot be used as it stands. */
export class ModelsFileError extends PiCourseError {
  override name = "ModelsFileError";
  /** Stable: `"MODELS_FILE"`. */
  override readonly code = "MODELS_FILE";
}

const modelsError = (message: string) => new ModelsFileError(message);

/** `null` where a field may be left out reads as left out (as a hand-written `?? default` did). */
const OrNull = <T extends TSchema>(schema: T) =>
  Type.Union([schema, Type.Null()], { expected: (schema as { expected?: string }).expected });

const Tokens = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, expected: "a whole number of tokens" });
const Dollars = Type.Number({ minimum: 0, expected: "a number of dollars per million tokens (0 or more)" });
const Said = (what: string) => Type.String({ minLength: 1, expected: `a non-empty text saying ${what}` });

/** The name of an environment variable (where a key is read from, never the key). */
const VARIABLE_NAME = "^[A-Za-z_][A-Za-z0-9_]*$";

/** A model's or a provider's own server and key variable. */
const Reach = {
  baseUrl: Type.Optional(
    Type.String({
      pattern: "^https?://(?:[^\\s/@]+(?:/\\S*)?|/\\S*)$",
      expected: 'an http:// or https:// URL without a user or password, e.g. "http://127.0.0.1:8080/v1"',
    }),
  ),
  apiKeyEnv: Type.Optional(
    Type.String({
      pattern: VARIABLE_NAME,
      expected: "the name of an environment variable (letters, digits, _), never the key itself",
    }),
  ),
};

/** Dollars per million tokens: ours and pi's `cost` alike. */
const PriceFields = {
  input: Dollars,
  output: Dollars,
  cacheRead: Type.Optional(Dollars),
  cacheWrite: Type.Optional(Dollars),
};
const PER_MILLION = "an object of dollars per million tokens";
const PricesSchema = Type.Object(
  {
    ...PriceFields,
    source: Type.Optional(Said("where the price was read")),
    asOf: Type.Optional(Said("when (YYYY-MM)")),
  },
  { expected: PER_MILLION },
);

/** What a model reads and whether it reasons, in our entries and pi's alike. */
const Abilities = {
  input: Type.Optional(
    OrNull(
      Type.Array(Type.Union([Type.Literal("text"), Type.Literal("image")]), {
        expected: 'a list of "text" and/or "image"',
      }),
    ),
  ),
  reasoning: Type.Optional(OrNull(Type.Boolean({ expected: "true or false" }))),
};

/** The wire of a pi provider or model: pi's names, or ours. */
const PiApi = Type.Union(
  [
    Type.Literal("openai-completions"),
    Type.Literal("anthropic-messages"),
    Type.Literal("openai-compatible"),
    Type.Literal("anthropic"),
  ],
  { expected: "one of openai-completions, anthropic-messages (pi's names), openai-compatible, anthropic" },
);

/** A model as pi's models.json lists it under its provider. */
const PiEntrySchema = Type.Object(
  {
    id: Type.String({ minLength: 1 }),
    name: Type.Optional(Type.String()),
    api: Type.Optional(PiApi),
    contextWindow: Tokens,
    maxTokens: Tokens,
    ...Abilities,
    cost: Type.Optional(Type.Object(PriceFields, { expected: PER_MILLION })),
  },
  {
    additionalProperties: false,
    expected: 'a model: { "id": …, "contextWindow": …, "maxTokens": …, "cost": { "input": …, "output": … } }',
  },
);

const ReachSchema = Type.Object(
  {
    ...Reach,
    // pi's models.json: the provider's wire, its models, and the variable holding its key
    api: Type.Optional(PiApi),
    apiKey: Type.Optional(
      Type.String({
        pattern: VARIABLE_NAME,
        expected: "the name of the environment variable that holds the key (letters, digits, _), never the key itself",
      }),
    ),
    models: Type.Optional(Type.Array(PiEntrySchema, { expected: "a list of models" })),
  },
  { additionalProperties: false, expected: '{ "baseUrl": …, "apiKeyEnv": … }' },
);

const EntrySchema = Type.Object(
  {
    id: Type.String({ minLength: 1 }),
    provider: Type.String({ minLength: 1 }),
    api: Type.Union([Type.Literal("openai-compatible"), Type.Literal("anthropic")], {
      expected: "one of openai-compatible, anthropic",
    }),
    contextWindow: Tokens,
    maxOutput: Tokens,
    ...Abilities,
    prices: Type.Optional(PricesSchema),
    ...Reach,
  },
  { expected: 'a model: { "id": …, "provider": …, "api": …, "contextWindow": …, "maxOutput": … }' },
);

/** What a models file may hold; what a schema cannot say (a new provider needs a URL) is checked after. */
const ModelsFileSchema = Type.Object(
  {
    models: Type.Optional(OrNull(Type.Array(EntrySchema, { expected: "a list of models" }))),
    virtual: Type.Optional(
      OrNull(
        Type.Record(
          Type.String(),
          Type.Array(Type.String({ minLength: 1 }), {
            minItems: 2,
            expected: "a list of two or more model names, in the order to try them",
          }),
          { expected: "an object: name → [model, model, …]" },
        ),
      ),
    ),
    providers: Type.Optional(
      OrNull(
        Type.Record(Type.String(), ReachSchema, { expected: 'an object: name → { "baseUrl": …, "apiKeyEnv": … }' }),
      ),
    ),
  },
  { additionalProperties: false, expected: 'an object: { "models": [ … ], "virtual": { … }, "providers": { … } }' },
);

/** What a models file holds, checked. */
export interface ModelsFile {
  models: CatalogueEntry[];
  virtual: Record<string, string[]>;
  /** Providers' servers and key variables, field by field over the known ones. */
  providers: Record<string, Partial<ProviderEndpoint>>;
}

/** Reads `file` (absent: an empty file) and returns `catalogue` with its models added. */
export async function loadModelsFile(catalogue: ModelCatalogue, file: string): Promise<ModelCatalogue> {
  return loadModelsFileSync(catalogue, file);
}

/** `loadModelsFile`, read at once (the command line reads it before anything starts). */
export function loadModelsFileSync(catalogue: ModelCatalogue, file: string): ModelCatalogue {
  const text = readTextFile(file, { error: modelsError, ifMissing: () => undefined });
  if (text === undefined) return catalogue;
  const parsed = parseModelsFile(text, file);
  return catalogue.with(parsed.models, parsed.virtual, parsed.providers);
}

/** Checks the text of a models file; `file` names it in errors. */
export function parseModelsFile(text: string, file: string): ModelsFile {
  // #region lab 18.1 parseModelsFile
  const value = parseJson(text, ModelsFileSchema, { where: file, error: modelsError });
  const fail = (why: string) => modelsError(`${file}: ${why}`);
  return {
    models: [...(value.models ?? []).map(checkEntry), ...providerModels(value.providers ?? {}, fail)],
    virtual: { ...value.virtual },
    providers: checkProviders(value.providers ?? {}, fail),
  };
  // #endregion
}

function checkEntry(value: Static<typeof EntrySchema>): CatalogueEntry {
  const entry: CatalogueEntry = {
    id: value.id,
    provider: value.provider,
    api: value.api,
    contextWindow: value.contextWindow,
    maxOutput: value.maxOutput,
    input: [...(value.input ?? ["text"])],
    reasoning: value.reasoning ?? false,
  };
  if (value.prices !== undefined) entry.prices = checkPrices(value.prices);
  if (value.baseUrl !== undefined) entry.baseUrl = value.baseUrl.replace(/\/+$/, "");
  if (value.apiKeyEnv !== undefined) entry.apiKeyEnv = value.apiKeyEnv;
  return entry;
}

/** The `providers` of a models file: name → `{ baseUrl?, apiKeyEnv? }`; a new provider needs `baseUrl`. */
function checkProviders(
  value: Record<string, Static<typeof ReachSchema>>,
  fail: (why: string) => Error,
): Record<string, Partial<ProviderEndpoint>> {
  const out: Record<string, Partial<ProviderEndpoint>> = {};
  for (const [name, given] of Object.entries(value)) {
    if (given.baseUrl === undefined && BUILTIN_PROVIDERS[name] === undefined) {
      throw fail(`providers.${name} needs "baseUrl": ${name} is not a provider the catalogue knows`);
    }
    const apiKeyEnv = given.apiKeyEnv ?? given.apiKey;
    out[name] = {
      ...(given.baseUrl !== undefined && { baseUrl: given.baseUrl.replace(/\/+$/, "") }),
      ...(apiKeyEnv !== undefined && { apiKeyEnv }),
    };
  }
  return out;
}

/** The models a provider of pi's shape lists (`providers.NAME.models`), as catalogue entries. */
function providerModels(
  value: Record<string, Static<typeof ReachSchema>>,
  fail: (why: string) => Error,
): CatalogueEntry[] {
  const entries: CatalogueEntry[] = [];
  for (const [provider, given] of Object.entries(value)) {
    (given.models ?? []).forEach((model, i) => {
      const api = model.api ?? given.api;
      if (api === undefined) {
        throw fail(
          `providers.${provider}.models[${i}] needs "api" (openai-completions or anthropic-messages), on it or on its provider`,
        );
      }
      const entry: CatalogueEntry = {
        id: model.id,
        provider,
        api: api === "anthropic-messages" || api === "anthropic" ? "anthropic" : "openai-compatible",
        contextWindow: model.contextWindow,
        maxOutput: model.maxTokens,
        input: [...(model.input ?? ["text"])],
        reasoning: model.reasoning ?? false,
      };
      if (model.cost !== undefined) entry.prices = checkPrices(model.cost);
      entries.push(entry);
    });
  }
  return entries;
}

function checkPrices(
  value: Static<typeof PricesSchema>, // pi's `cost` is the same without source and asOf
): ModelPrices {
  return {
    input: value.input,
    output: value.output,
    ...(value.cacheRead !== undefined && { cacheRead: value.cacheRead }),
    ...(value.cacheWrite !== undefined && { cacheWrite: value.cacheWrite }),
    source: value.source ?? "yours",
    ...(value.asOf !== undefined && { asOf: value.asOf }),
  };
}
