/**
 * A user's own models (chapter 18): `~/.pi-course/models.json`, checked field by field.
 *
 * ```json
 * {
 *   "models": [
 *     { "id": "my-model", "provider": "local", "api": "openai-compatible", "contextWindow": 32768,
 *       "maxOutput": 4096, "input": ["text"], "reasoning": false,
 *       "prices": { "input": 0, "output": 0, "source": "my own server", "asOf": "2026-01" } }
 *   ],
 *   "virtual": { "cheap-then-strong": ["gpt-4o-mini", "gpt-4o"] },
 *   "providers": { "deepseek": { "baseUrl": "http://127.0.0.1:8080/v1", "apiKeyEnv": "MY_DEEPSEEK_KEY" } }
 * }
 * ```
 *
 * A model here replaces a built-in one of the same id; it may name its own server and key
 * variable (`baseUrl`, `apiKeyEnv`). A virtual model names two or more models it falls back
 * over, in order. A provider here replaces the fields it gives of a known provider
 * (`providers.ts`), or adds a provider (then `baseUrl` is needed). Anything else is refused with a `ModelsFileError` that names the
 * file, the field and what to write instead: a bad file is never half read.
 */
import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import type { ModelCatalogue } from "./catalogue.js";
import { BUILTIN_PROVIDERS, type ProviderEndpoint } from "./providers.js";
import type { CatalogueEntry, ModelApi, ModelInput, ModelPrices } from "./types.js";

/** A models file that cannot be used as it stands. */
export class ModelsFileError extends Error {
  override name = "ModelsFileError";
}

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json =>
  typeof value === "object" && value !== null && !Array.isArray(value);
const APIS: readonly ModelApi[] = ["openai-compatible", "anthropic"];
const INPUTS: readonly ModelInput[] = ["text", "image"];

/** What a models file holds, checked. */
export interface ModelsFile {
  models: CatalogueEntry[];
  virtual: Record<string, string[]>;
  /** Providers' servers and key variables, field by field over the known ones. */
  providers: Record<string, Partial<ProviderEndpoint>>;
}

/** Reads `file` (absent: an empty file) and returns `catalogue` with its models added. */
export async function loadModelsFile(catalogue: ModelCatalogue, file: string): Promise<ModelCatalogue> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return catalogue;
    throw new ModelsFileError(`${file}: cannot read it (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
  const parsed = parseModelsFile(text, file);
  return catalogue.with(parsed.models, parsed.virtual, parsed.providers);
}

/** `loadModelsFile`, read at once (the command line reads it before anything starts). */
export function loadModelsFileSync(catalogue: ModelCatalogue, file: string): ModelCatalogue {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return catalogue;
    throw new ModelsFileError(`${file}: cannot read it (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
  const parsed = parseModelsFile(text, file);
  return catalogue.with(parsed.models, parsed.virtual, parsed.providers);
}

/** Checks the text of a models file; `file` names it in errors. */
export function parseModelsFile(text: string, file: string): ModelsFile {
  // #region lab 18.1 parseModelsFile
  const fail = (why: string) => new ModelsFileError(`${file}: ${why}`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw fail(`not JSON (${(error as Error).message})`);
  }
  if (!isObject(value)) throw fail('expected an object: { "models": [ … ], "virtual": { … } }');
  for (const key of Object.keys(value)) {
    if (key !== "models" && key !== "virtual" && key !== "providers") {
      throw fail(`unknown field "${key}" (the fields are models, virtual and providers)`);
    }
  }
  const models = value.models ?? [];
  if (!Array.isArray(models)) throw fail('"models" must be an array of models');
  const virtual = value.virtual ?? {};
  if (!isObject(virtual)) throw fail('"virtual" must be an object: name → [model, model, …]');
  const out: ModelsFile = {
    models: models.map((m, i) => checkEntry(m, `models[${i}]`, fail)),
    virtual: {},
    providers: checkProviders(value.providers ?? {}, fail),
  };
  for (const [name, list] of Object.entries(virtual)) {
    if (!Array.isArray(list) || list.length < 2 || !list.every((m) => typeof m === "string" && m !== "")) {
      throw fail(`virtual "${name}" must list two or more model names, in the order to try them`);
    }
    out.virtual[name] = list as string[];
  }
  return out;
  // #endregion
}

function checkEntry(value: unknown, where: string, fail: (why: string) => Error): CatalogueEntry {
  if (!isObject(value)) throw fail(`${where} must be an object`);
  const name = (field: string) => `${where}.${field}`;
  const str = (field: string): string => {
    const v = value[field];
    if (typeof v !== "string" || v === "") throw fail(`${name(field)} must be a non-empty string`);
    return v;
  };
  const count = (field: string): number => {
    const v = value[field];
    if (!Number.isSafeInteger(v) || (v as number) < 1) throw fail(`${name(field)} must be a whole number of tokens`);
    return v as number;
  };
  const api = value.api;
  if (!(APIS as readonly unknown[]).includes(api)) throw fail(`${name("api")} must be one of ${APIS.join(", ")}`);
  const input = value.input ?? ["text"];
  if (!Array.isArray(input) || !input.every((k) => (INPUTS as readonly unknown[]).includes(k))) {
    throw fail(`${name("input")} must list "text" and/or "image"`);
  }
  if (typeof (value.reasoning ?? false) !== "boolean") throw fail(`${name("reasoning")} must be true or false`);
  const entry: CatalogueEntry = {
    id: str("id"),
    provider: str("provider"),
    api: api as ModelApi,
    contextWindow: count("contextWindow"),
    maxOutput: count("maxOutput"),
    input: input as ModelInput[],
    reasoning: (value.reasoning ?? false) as boolean,
  };
  if (value.prices !== undefined) entry.prices = checkPrices(value.prices, name("prices"), fail);
  const reached = checkReach(value, where, fail);
  if (reached.baseUrl !== undefined) entry.baseUrl = reached.baseUrl;
  if (reached.apiKeyEnv !== undefined) entry.apiKeyEnv = reached.apiKeyEnv;
  return entry;
}

/** A model's or a provider's own `baseUrl` (an http(s) URL) and `apiKeyEnv` (a variable's name), both optional. */
function checkReach(
  value: Json,
  where: string,
  fail: (why: string) => Error,
): { baseUrl?: string; apiKeyEnv?: string } {
  const out: { baseUrl?: string; apiKeyEnv?: string } = {};
  if (value.baseUrl !== undefined) {
    const url = value.baseUrl;
    if (typeof url !== "string" || !/^https?:\/\/[^\s]+$/.test(url) || /^https?:\/\/[^/]*@/.test(url)) {
      throw fail(
        `${where}.baseUrl must be an http:// or https:// URL without a user or password, e.g. "http://127.0.0.1:8080/v1"`,
      );
    }
    out.baseUrl = url.replace(/\/+$/, "");
  }
  if (value.apiKeyEnv !== undefined) {
    const name = value.apiKeyEnv;
    if (typeof name !== "string" || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
      throw fail(
        `${where}.apiKeyEnv must name an environment variable (letters, digits, _), never hold the key itself`,
      );
    }
    out.apiKeyEnv = name;
  }
  return out;
}

/** The `providers` of a models file: name → `{ baseUrl?, apiKeyEnv? }`; a new provider needs `baseUrl`. */
function checkProviders(value: unknown, fail: (why: string) => Error): Record<string, Partial<ProviderEndpoint>> {
  if (!isObject(value)) throw fail('"providers" must be an object: name → { "baseUrl": …, "apiKeyEnv": … }');
  const out: Record<string, Partial<ProviderEndpoint>> = {};
  for (const [name, given] of Object.entries(value)) {
    const where = `providers.${name}`;
    if (!isObject(given)) throw fail(`${where} must be an object: { "baseUrl": …, "apiKeyEnv": … }`);
    for (const key of Object.keys(given)) {
      if (key !== "baseUrl" && key !== "apiKeyEnv") {
        throw fail(`${where} has an unknown field "${key}" (the fields are baseUrl and apiKeyEnv)`);
      }
    }
    const reached = checkReach(given, where, fail);
    if (reached.baseUrl === undefined && BUILTIN_PROVIDERS[name] === undefined) {
      throw fail(`${where} needs "baseUrl": ${name} is not a provider the catalogue knows`);
    }
    out[name] = reached;
  }
  return out;
}

function checkPrices(value: unknown, where: string, fail: (why: string) => Error): ModelPrices {
  if (!isObject(value)) throw fail(`${where} must be an object of dollars per million tokens`);
  const price = (field: string, optional: boolean): number | undefined => {
    const v = value[field];
    if (v === undefined && optional) return undefined;
    if (typeof v !== "number" || !Number.isFinite(v) || v < 0) {
      throw fail(`${where}.${field} must be a number of dollars per million tokens (0 or more)`);
    }
    return v;
  };
  const said = (field: string): string => {
    const v = value[field];
    if (typeof v !== "string" || v === "") {
      throw fail(`${where}.${field} must say ${field === "source" ? "where the price was read" : "when (YYYY-MM)"}`);
    }
    return v;
  };
  const cacheRead = price("cacheRead", true);
  const cacheWrite = price("cacheWrite", true);
  return {
    input: price("input", false)!,
    output: price("output", false)!,
    ...(cacheRead !== undefined && { cacheRead }),
    ...(cacheWrite !== undefined && { cacheWrite }),
    source: said("source"),
    asOf: said("asOf"),
  };
}
