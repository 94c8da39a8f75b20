/**
 * The model of a run, chosen by name (chapter 18): `--model NAME`, `/model NAME`, or the choice a
 * session recorded.
 *
 * A name is a catalogue model (`gpt-4o-mini`), a virtual model of `~/.pi-course/models.json`, or
 * several names separated by commas (`gpt-4o-mini,gpt-4o`): the models to fall back over, in
 * order, on the server the command line names. Each real model is priced and told whether it
 * reasons from the catalogue (`catalogued`); an unknown one works with the defaults and one
 * notice. A model that falls back is not retried by the transport first (`maxRetries: 0`): the
 * next model is the retry. The thinking level applies to every call (`atThinkingLevel`); the
 * offline demo ignores it, with a notice.
 *
 * The context budget follows the chosen models' window (the smallest of them, less the room of
 * an answer), unless the user set `--context-tokens`.
 *
 * When the catalogue chose the server (`--model NAME` alone, see `catalogueRoute` in args.ts),
 * each catalogue model is reached on its own provider's server with its provider's key, so a
 * fallback list may cross providers; a model the catalogue does not know runs on the first
 * model's server. A model whose key this run was not given (a `/model` switch to another
 * provider) is refused, naming the variable to set.
 */
import type { Model, ThinkingLevel } from "../model.js";
import { atThinkingLevel, catalogued, unsentThinking } from "../model-choice/catalogued-model.js";
import type { ModelCatalogue } from "../model-choice/catalogue.js";
import type { ModelInfo } from "../model-choice/types.js";
import { createFallbackModel, type RouteReport } from "../model-choice/virtual-model.js";
import type { RunOptions } from "./run-options.js";
import { createDemoModel } from "./demo.js";
import { createServerModel } from "./runtime-model.js";

/** The room kept for one answer when the budget follows a model's window. */
export const ANSWER_ROOM_TOKENS = 16_384;

/** A model as chosen: what the agent calls, and what is known of it. */
export interface ModelSetup {
  /** What the agent calls (fallback and thinking level included). */
  model: Model;
  /** The name as given (recorded in the session). */
  name: string;
  thinking: ThinkingLevel | undefined;
  /** The real models, in fallback order (empty for the demo). */
  infos: ModelInfo[];
  /** The context budget the models' windows give (undefined for the demo). */
  budget: number | undefined;
  /** What a person should know (unknown models, an ignored thinking level). */
  notices: string[];
}

/** Builds the model `name` names on the server of `options` (see the module comment). */
export function setUpModel(
  options: RunOptions,
  catalogue: ModelCatalogue,
  name: string,
  thinking: ThinkingLevel | undefined,
  demoDelayMs = 0,
  onRoute?: (report: RouteReport) => void,
): ModelSetup {
  const server = options.server;
  if (server === undefined) {
    const notices =
      thinking !== undefined && thinking !== "off"
        ? [`the offline demo does not think: thinking level "${thinking}" is ignored`]
        : [];
    return { model: createDemoModel({ delayMs: demoDelayMs }), name, thinking, infos: [], budget: undefined, notices };
  }
  const names = catalogue.members(name);
  if (names.length === 0 || names.some((n) => n === "")) {
    throw new Error(`"${name}" names no model: give a model name, or names separated by commas (a,b)`);
  }
  const api = server.provider === "anthropic" ? "anthropic" : "openai-compatible";
  const infos = names.map((n) => catalogue.resolve(n, { provider: server.provider, api }));
  const models = infos.map((info, i) => {
    const last = i === infos.length - 1;
    const real = createServerModel(serverOf(options, catalogue, info.id), info.id, {
      maxTokens: Math.min(8_192, info.maxOutput),
      ...(!last && { maxRetries: 0 }),
    });
    return catalogued(real, info);
  });
  let model: Model =
    models.length === 1
      ? models[0]!
      : createFallbackModel(models, { id: name, ...(onRoute !== undefined && { onRoute }) });
  if (thinking !== undefined) model = atThinkingLevel(model, thinking);
  const notices = infos.flatMap((info) => (info.notice !== undefined ? [info.notice] : []));
  // a level the catalogue says a model cannot use is not sent to it (catalogued): say so now
  for (const info of infos) {
    const unsent = unsentThinking(thinking, info);
    if (unsent !== undefined) notices.push(unsent);
  }
  const window = Math.min(...infos.map((info) => info.contextWindow - Math.min(info.maxOutput, ANSWER_ROOM_TOKENS)));
  return { model, name, thinking, infos, budget: Math.max(1_000, window), notices };
}

/**
 * The options whose server reaches `id`: `options` themselves, unless the catalogue chose the
 * server and knows where `id` is reached (then that server, with the key of its variable).
 */
export function serverOf(options: RunOptions, catalogue: ModelCatalogue, id: string): RunOptions {
  const server = options.server;
  if (server?.byCatalogue !== true) return options;
  const endpoint = catalogue.endpoint(id);
  if (endpoint === undefined) return options;
  const { apiKey: given, ...rest } = server;
  let apiKey = given;
  if (server.keys !== undefined) {
    // The keys came from the catalogue's variables (no --api-key-env, --api-key-file or --no-api-key).
    apiKey = endpoint.apiKeyEnv === undefined ? undefined : server.keys[endpoint.apiKeyEnv];
    if (endpoint.apiKeyEnv !== undefined && apiKey === undefined) {
      throw new Error(
        `${endpoint.model} is served by ${endpoint.provider} at ${endpoint.baseUrl} with the key in ` +
          `$${endpoint.apiKeyEnv}, which this run was not given: set it and start with --model ${endpoint.model}`,
      );
    }
  }
  // a models file's headers, and the key as a bearer token too where it asks (authHeader)
  const headers = { ...endpoint.headers };
  if (endpoint.authHeader === true && apiKey !== undefined) headers.authorization = `Bearer ${apiKey}`;
  const { headers: _theirs, ...others } = rest;
  return {
    ...options,
    server: {
      ...others,
      provider: endpoint.api === "anthropic" ? "anthropic" : "openai",
      baseUrl: endpoint.baseUrl,
      ...(apiKey !== undefined && { apiKey }),
      ...(Object.keys(headers).length > 0 && { headers }),
    },
  };
}
