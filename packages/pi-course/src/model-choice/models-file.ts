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
 * (only `id` is needed: `contextWindow` 128000 and `maxTokens` 16384 by default, as in pi), its
 * `api` (`openai-completions` or `anthropic-messages`) and `apiKey`, which must name the variable
 * that holds the key (a key itself is refused):
 *
 * ```json
 * { "providers": { "ollama": { "baseUrl": "http://localhost:11434/v1", "api": "openai-completions",
 *     "apiKey": "ollama", "models": [{ "id": "llama3.1:8b" }] } } }
 * ```
 *
 * Where pi and the course differ, the course says so instead of guessing:
 * - a model without `cost` has an unknown price (pi counts it as zero; the course never makes a
 *   price up: write `"cost": { "input": 0, "output": 0 }` for a free local model);
 * - `headers` (on a provider, a model or an override) are sent with every request; a value that
 *   names a set environment variable is read from it, else sent as written; pi's `!command`
 *   values are refused (the course runs no command a file names);
 * - `authHeader: true` sends the key as `Authorization: Bearer …` too (a proxy in front of Anthropic);
 * - `modelOverrides` change known models of that provider (unknown ids are ignored, as in pi);
 * - `compat`: `supportsReasoningEffort: false` keeps a thinking level from being sent;
 *   `supportsStore`, `maxTokensField`, `supportsDeveloperRole: false` and
 *   `supportsUsageInStreaming: true` say what the course's wire does anyway; the rest
 *   (a developer role, no usage in the stream, routing preferences) is refused with why.
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
import { BUILTIN_PROVIDERS, type ProviderSettings } from "./providers.js";
import type { CatalogueEntry, ModelOverride, ModelPrices } from "./types.js";
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

/**
 * Extra request headers (pi's `headers`), name → value. A value that names a set environment
 * variable is read from it when the file is loaded, else it is sent as written (pi's rule). pi
 * also runs a value starting with `!` as a shell command; the course never runs a command a
 * file names, so such a value is refused.
 */
const Headers = Type.Record(
  Type.String(),
  Type.String({
    pattern: "^(?!!)",
    expected:
      "a header's value: the name of an environment variable that holds it, or the text itself, never a !command " +
      "(the course runs no command from a models file: put the value in an environment variable and name it)",
  }),
  { expected: "an object: header name → value" },
);

/** Refuses a key of pi's that the course's wires cannot honour, saying why. */
const Unsupported = (why: string) => Type.Never({ expected: `left out: ${why}` });

/**
 * pi's `compat` of an OpenAI-compatible server, key by key as the course's wire can honour it:
 * it never sends `store` or a developer role, sends no maximum to an OpenAI-compatible server,
 * always asks for usage in the stream, and sends no routing preferences.
 */
const Compat = Type.Object(
  {
    supportsStore: Type.Optional(Type.Boolean({ expected: "true or false (the course never sends store)" })),
    supportsDeveloperRole: Type.Optional(
      Type.Literal(false, {
        expected:
          "false, or left out: the course always sends the system prompt as a system message, never as a developer one",
      }),
    ),
    supportsReasoningEffort: Type.Optional(
      Type.Boolean({ expected: "true or false (false: a thinking level is not sent to the model)" }),
    ),
    supportsUsageInStreaming: Type.Optional(
      Type.Literal(true, {
        expected:
          "true, or left out: the course always asks for usage in the stream (stream_options.include_usage), which an answer's cost needs",
      }),
    ),
    maxTokensField: Type.Optional(
      Type.Union([Type.Literal("max_tokens"), Type.Literal("max_completion_tokens")], {
        expected: "max_tokens or max_completion_tokens (the course sends no maximum to an OpenAI-compatible server)",
      }),
    ),
    openRouterRouting: Type.Optional(
      Unsupported(
        "the course sends no routing preferences to OpenRouter (name the models to try with a virtual model)",
      ),
    ),
    vercelGatewayRouting: Type.Optional(
      Unsupported("the course sends no routing preferences to a gateway (name the models to try with a virtual model)"),
    ),
  },
  { additionalProperties: false, expected: '{ "supportsReasoningEffort": false, … }' },
);

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
  headers: Type.Optional(Headers),
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

/** pi's defaults for a model its models.json lists with only an `id`. */
export const PI_MODEL_DEFAULTS = { contextWindow: 128_000, maxTokens: 16_384 } as const;

/** A model as pi's models.json lists it under its provider (only `id` is needed). */
const PiEntrySchema = Type.Object(
  {
    id: Type.String({ minLength: 1 }),
    name: Type.Optional(Type.String()),
    api: Type.Optional(PiApi),
    contextWindow: Type.Optional(Tokens),
    maxTokens: Type.Optional(Tokens),
    ...Abilities,
    cost: Type.Optional(Type.Object(PriceFields, { expected: PER_MILLION })),
    headers: Type.Optional(Headers),
    compat: Type.Optional(Compat),
  },
  {
    additionalProperties: false,
    expected: 'a model: { "id": …, "contextWindow": …, "maxTokens": …, "cost": { "input": …, "output": … } }',
  },
);

/** pi's `modelOverrides` entry: what to change of a known model (a partial `cost` too). */
const OverrideSchema = Type.Object(
  {
    name: Type.Optional(Type.String()),
    contextWindow: Type.Optional(Tokens),
    maxTokens: Type.Optional(Tokens),
    ...Abilities,
    cost: Type.Optional(
      Type.Object(
        {
          input: Type.Optional(Dollars),
          output: Type.Optional(Dollars),
          cacheRead: Type.Optional(Dollars),
          cacheWrite: Type.Optional(Dollars),
        },
        { expected: PER_MILLION },
      ),
    ),
    headers: Type.Optional(Headers),
    compat: Type.Optional(Compat),
  },
  { additionalProperties: false, expected: 'an override: { "contextWindow": …, "cost": { … }, … }' },
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
    authHeader: Type.Optional(
      Type.Boolean({ expected: "true or false (true: the key goes in Authorization: Bearer too)" }),
    ),
    modelOverrides: Type.Optional(
      Type.Record(Type.String(), OverrideSchema, { expected: "an object: model id → what to change of it" }),
    ),
    compat: Type.Optional(Compat),
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
  /** Providers' servers, key variables and headers, field by field over the known ones, and their `modelOverrides`. */
  providers: Record<string, ProviderSettings>;
}

/**
 * Reads `file` (absent: an empty file) and returns `catalogue` with its models added. A header
 * value that names a set variable of `env` is read from it (pi's rule), else sent as written.
 */
export async function loadModelsFile(
  catalogue: ModelCatalogue,
  file: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<ModelCatalogue> {
  return loadModelsFileSync(catalogue, file, env);
}

/** `loadModelsFile`, read at once (the command line reads it before anything starts). */
export function loadModelsFileSync(
  catalogue: ModelCatalogue,
  file: string,
  env: NodeJS.ProcessEnv = process.env,
): ModelCatalogue {
  const text = readTextFile(file, { error: modelsError, ifMissing: () => undefined });
  if (text === undefined) return catalogue;
  const parsed = parseModelsFile(text, file);
  const read = <T extends { headers?: Record<string, string> }>(item: T): T =>
    item.headers === undefined ? item : { ...item, headers: headerValues(item.headers, env) };
  const providers = Object.fromEntries(
    Object.entries(parsed.providers).map(([name, given]) => {
      const out = read(given);
      if (given.modelOverrides !== undefined) {
        out.modelOverrides = Object.fromEntries(
          Object.entries(given.modelOverrides).map(([id, override]) => [id, read(override)]),
        );
      }
      return [name, out];
    }),
  );
  return catalogue.with(parsed.models.map(read), parsed.virtual, providers);
}

/** Header values as sent: a value that names a set environment variable is that variable's value. */
function headerValues(headers: Record<string, string>, env: NodeJS.ProcessEnv): Record<string, string> {
  const named = new RegExp(VARIABLE_NAME);
  return Object.fromEntries(
    Object.entries(headers).map(([name, value]) => [name, (named.test(value) ? env[value] : undefined) ?? value]),
  );
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
  if (value.headers !== undefined) entry.headers = { ...value.headers };
  return entry;
}

/** pi's `compat` as the catalogue keeps it: only `supportsReasoningEffort: false` changes what is sent. */
function compatFields(...compat: (Static<typeof Compat> | undefined)[]): { thinkingParameter?: false } {
  const effort = compat.reduce<boolean | undefined>((found, c) => c?.supportsReasoningEffort ?? found, undefined);
  return effort === false ? { thinkingParameter: false } : {};
}

/** pi's `modelOverrides` entry in the catalogue's words (`maxTokens` → `maxOutput`, `cost` → `prices`). */
function checkOverride(
  value: Static<typeof OverrideSchema>,
  provider: Static<typeof Compat> | undefined,
): ModelOverride {
  const out: ModelOverride = {
    ...(value.contextWindow !== undefined && { contextWindow: value.contextWindow }),
    ...(value.maxTokens !== undefined && { maxOutput: value.maxTokens }),
    ...(value.input != null && { input: [...value.input] }),
    ...(value.reasoning != null && { reasoning: value.reasoning }),
    ...(value.headers !== undefined && { headers: { ...value.headers } }),
    ...compatFields(provider, value.compat),
  };
  if (value.cost !== undefined) out.prices = { ...value.cost };
  return out;
}

/** The `providers` of a models file: name → `{ baseUrl?, apiKeyEnv? }`; a new provider needs `baseUrl`. */
function checkProviders(
  value: Record<string, Static<typeof ReachSchema>>,
  fail: (why: string) => Error,
): Record<string, ProviderSettings> {
  const out: Record<string, ProviderSettings> = {};
  for (const [name, given] of Object.entries(value)) {
    if (given.baseUrl === undefined && BUILTIN_PROVIDERS[name] === undefined) {
      throw fail(`providers.${name} needs "baseUrl": ${name} is not a provider the catalogue knows`);
    }
    const apiKeyEnv = given.apiKeyEnv ?? given.apiKey;
    const overrides = Object.entries(given.modelOverrides ?? {});
    out[name] = {
      ...(given.baseUrl !== undefined && { baseUrl: given.baseUrl.replace(/\/+$/, "") }),
      ...(apiKeyEnv !== undefined && { apiKeyEnv }),
      ...(given.headers !== undefined && { headers: { ...given.headers } }),
      ...(given.authHeader === true && { authHeader: true }),
      ...(overrides.length > 0 && {
        modelOverrides: Object.fromEntries(overrides.map(([id, o]) => [id, checkOverride(o, given.compat)])),
      }),
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
        contextWindow: model.contextWindow ?? PI_MODEL_DEFAULTS.contextWindow,
        maxOutput: model.maxTokens ?? PI_MODEL_DEFAULTS.maxTokens,
        input: [...(model.input ?? ["text"])],
        reasoning: model.reasoning ?? false,
        ...compatFields(given.compat, model.compat),
      };
      // no cost: the price is unknown (pi reads it as zero; the course never makes a price up)
      if (model.cost !== undefined) entry.prices = checkPrices(model.cost);
      if (model.headers !== undefined) entry.headers = { ...model.headers };
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
