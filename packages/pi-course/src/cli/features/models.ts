/**
 * Choosing a model on the command line: `--thinking LEVEL`, and a catalogue name alone
 * (`--model deepseek-chat`) that picks its server and key (`catalogueRoute`, the feature's
 * `route`). On the runtime, the model in use is a `ChosenModel` (chosen-model.ts); the
 * conversation gets `/model`, `/thinking` and `/cost`, and every mode says what a run cost.
 */
import path from "node:path";
import { THINKING_LEVELS, type ThinkingLevel } from "../../model.js";
import { ModelCatalogue } from "../../model-choice/catalogue.js";
import { catalogued } from "../../model-choice/catalogued-model.js";
import { ModelsFileError, loadModelsFileSync } from "../../model-choice/models-file.js";
import type { ModelEndpoint } from "../../model-choice/providers.js";
import { conversationCost, formatConversationCost } from "../../model-choice/cost.js";
import type { Chat, SlashCommand } from "../chat-commands.js";
import { homeFolder, type Setting, type SettingName } from "../settings.js";
import type { Runtime } from "../runtime.js";
import { neutralize } from "../trace.js";
import { CliUsageError } from "../usage-error.js";
import type { ChosenModel } from "./chosen-model.js";
import type { CliFeature, ServerRoute } from "./feature.js";

declare module "../run-options.js" {
  interface RunOptions {
    /**
     * `--thinking LEVEL` (or `$PI_COURSE_THINKING`, or `"thinking"` in the config file): the
     * thinking level of every call; absent: the model's default.
     */
    thinking?: ThinkingLevel;
    /** The user's models file (`~/.pi-course/models.json`), read at start when it exists; absent: none. */
    modelsFile?: string;
  }
  interface ServerOptions {
    /**
     * The catalogue chose the server (`--model NAME` with no base URL or provider set): each
     * model of a fallback list is reached on its own provider's server (`catalogueRoute`).
     */
    byCatalogue?: boolean;
    /**
     * With `byCatalogue` and no key option (`--api-key-env`, `--api-key-file`, `--no-api-key`):
     * the keys read, by variable, one per provider in the list. The commands never see them.
     */
    keys?: Record<string, string>;
    /** Extra request headers of the model's provider or entry in the models file (with `byCatalogue`). */
    headers?: Record<string, string>;
  }
}

export const models: CliFeature = {
  name: "models",
  options: [
    {
      name: "thinking",
      value: "LEVEL",
      setting: "thinking",
      section: "options",
      help: `off, minimal, low, medium or high: how much the model thinks first
(reasoning_effort on OpenAI-compatible servers; a thinking budget of
1024/2048/8192/16384 tokens on Anthropic, max_tokens raised to fit);
ignored, with a note, where the model catalogue says it does not reason;
also $PI_COURSE_THINKING or "thinking" in the config file`,
    },
    {
      label: "Models (chapter 18)",
      section: "options",
      help: `--model takes a name of the model catalogue (gpt-4o-mini, claude-sonnet-4-5,
deepseek-chat, qwen2.5-coder, …; others work with defaults and one note),
names separated by commas (a,b: the next when one fails before its first
byte: rate limit, overloaded, 5xx, refused), or a virtual model of
~/.pi-course/models.json ({"models": […], "virtual": {"NAME": ["a", "b"]}}).
With no --base-url or --provider, a catalogue name picks its server and
key: deepseek-chat → https://api.deepseek.com/v1 with $DEEPSEEK_API_KEY
(openai $OPENAI_API_KEY, anthropic $ANTHROPIC_API_KEY, groq $GROQ_API_KEY,
openrouter $OPENROUTER_API_KEY, local: Ollama at 127.0.0.1:11434, no key;
"providers": {"NAME": {"baseUrl", "apiKeyEnv"}} in models.json moves them).
The context budget follows the model's window unless --context-tokens.
Each answer is priced from the catalogue (unknown prices stay unknown);
/model NAME (Tab completes), /thinking LEVEL and /cost in a conversation;
the choice is kept in the session, so --continue goes on with it`,
    },
  ],
  parse({ settings, blame, env }) {
    const text = settings.thinking?.value;
    if (text !== undefined && !(THINKING_LEVELS as readonly string[]).includes(text)) {
      throw new CliUsageError(
        `--thinking must be one of ${THINKING_LEVELS.join(", ")}, got ${JSON.stringify(text.slice(0, 20))}${blame("thinking")}.`,
      );
    }
    return { ...(text !== undefined && { thinking: text as ThinkingLevel }), modelsFile: modelsFilePath(env) };
  },
  commands: [
    {
      name: "model",
      help: "/model [NAME]     show the model, or switch (a catalogue name, a virtual model, or a,b to fall back; Tab completes)",
      run: async ({ printer, runtime }, arg) => {
        const chosen = chosenOf(runtime);
        if (arg !== "") {
          if (runtime.options.server === undefined)
            return printer.line("the offline demo has one model; start with --base-url for others", "red");
          await (chosen === undefined ? runtime.switchModel(arg) : chosen.switchModel(arg));
        }
        const { provider, id } = runtime.agent.state.model;
        printer.line(chosen?.choice !== undefined ? choiceLine(runtime) : `model: ${provider} · ${id}`, "dim");
      },
    },
    {
      name: "thinking",
      help: "/thinking [LEVEL] show or set the thinking level: off, minimal, low, medium, high",
      run: async ({ printer, runtime }, arg) => {
        if (arg !== "") {
          if (!(THINKING_LEVELS as readonly string[]).includes(arg))
            return printer.line(`/thinking LEVEL: one of ${THINKING_LEVELS.join(", ")}`, "red");
          await chosenOf(runtime)?.setThinking(arg as ThinkingLevel);
        }
        printer.line(choiceLine(runtime), "dim");
      },
    },
    {
      name: "cost",
      help: "/cost             what this conversation cost so far",
      run: ({ printer, runtime }) => printer.line(`cost: ${costLine(runtime)}`, "dim"),
    },
  ] satisfies SlashCommand[],
  // Tab completion: model names after `/model `, levels after `/thinking `.
  complete(runtime, line) {
    const match = /^\/(model|thinking) (\S*)$/.exec(line);
    if (match === null) return undefined;
    const [, command, start = ""] = match;
    const catalogue = chosenOf(runtime)?.catalogue ?? ModelCatalogue.builtin();
    const names = command === "model" ? catalogue.names() : [...THINKING_LEVELS];
    const found = names.filter((n) => n.startsWith(start));
    return [found.length > 0 ? found : names, start];
  },
  afterRun({ runtime, printer }: Chat) {
    if (runtime.options.server !== undefined) printer.line(`cost: ${costLine(runtime)}`, "dim");
  },
  route,
  // The keys a catalogue name picked (one per provider of a fallback list).
  commandSecrets: (options) => options.server?.keys ?? {},
  async setUp(runtime, wiring) {
    // A caller's own model (the eval harness) is used as it is.
    if (wiring.model !== undefined) return undefined;
    const { ChosenModel } = await import("./chosen-model.js");
    return new ChosenModel(runtime);
  },
  // the model in use: a resumed session's choice, with its thinking level
  modelLabel(runtime) {
    const choice = chosenOf(runtime)?.choice;
    if (choice === undefined) return undefined;
    const level = choice.thinking;
    if (level === undefined) return neutralize(choice.name);
    // a level no model of the choice can use is not sent (the notice says so too)
    const unused =
      level !== "off" && choice.infos.length > 0 && choice.infos.every((info) => info.known && !info.reasoning);
    return `${neutralize(choice.name)} (thinking ${level}${unused ? ": not sent, the model does not reason" : ""})`;
  },
  agentEndFields: (runtime) =>
    runtime.options.server === undefined
      ? undefined
      : { conversationCost: conversationCost(runtime.agent.state.messages) },
  // A model of the catalogue is priced: each run's cost, each case's and the suite's total.
  caseModel(model) {
    const known = ModelCatalogue.builtin().find(model.id);
    return known === undefined ? model : catalogued(model, { ...known, known: true });
  },
  afterOnce: (runtime) =>
    runtime.options.server === undefined || runtime.options.json
      ? []
      : [`cost:      ${formatConversationCost(conversationCost(runtime.agent.state.messages))}`],
};

/** The model the runtime uses as chosen (undefined when the caller wired in a model of its own). */
function chosenOf(runtime: Runtime): ChosenModel | undefined {
  return runtime.part<ChosenModel>("models");
}

/** The server a catalogue name picks (see `catalogueRoute`), as the options read it. */
function route(settings: Partial<Record<SettingName, Setting>>, env: NodeJS.ProcessEnv): ServerRoute | undefined {
  let found: CatalogueRoute | undefined;
  try {
    found = catalogueRoute(settings, env);
  } catch (error) {
    if (error instanceof ModelsFileError) throw new CliUsageError(`${error.message}.`);
    throw error;
  }
  if (found === undefined) return undefined;
  const endpoints = found.endpoints;
  const first = endpoints[0]!;
  const keyVariables: string[] = [];
  for (const { apiKeyEnv } of endpoints) {
    if (apiKeyEnv !== undefined && !keyVariables.includes(apiKeyEnv)) keyVariables.push(apiKeyEnv);
  }
  return {
    provider: first.api === "anthropic" ? "anthropic" : "openai",
    baseUrl: first.baseUrl,
    namedBy: `--model ${settings.model?.value}`,
    firstKey: first.apiKeyEnv,
    keyVariables,
    keys(env) {
      const keys = catalogueKeys({ endpoints }, env);
      const key = first.apiKeyEnv === undefined ? undefined : keys[first.apiKeyEnv];
      return { ...(key !== undefined && { apiKey: key }), keys };
    },
    server: { byCatalogue: true },
  };
}

/** The model in use, as `/model` and `/thinking` show it. */
function choiceLine(runtime: Runtime): string {
  const model = runtime.agent.state.model;
  const choice = chosenOf(runtime)?.choice;
  const budget =
    choice?.budget !== undefined && runtime.options.contextTokens === undefined
      ? ` · context budget ${choice.budget} tokens`
      : "";
  return `model: ${neutralize(model.provider)} · ${neutralize(choice?.name ?? model.id)} · thinking ${choice?.thinking ?? "off"}${budget}`;
}

/** The conversation's cost: every answer on the session's path (compacted ones too), else the transcript. */
function costLine(runtime: Runtime): string {
  const session = runtime.session;
  const leaf = session?.leaf;
  const messages =
    session === undefined || leaf === undefined
      ? runtime.agent.state.messages
      : session.pathToLeaf(leaf.id).flatMap((e) => (e.type === "message" ? [e.message] : []));
  return formatConversationCost(conversationCost(messages));
}

/** Where a catalogue name's models are reached: the first model's server is the run's. */
export interface CatalogueRoute {
  /** One per model of the name that the catalogue knows, in fallback order (the first is the name's first). */
  endpoints: ModelEndpoint[];
}

/** The user's models file: `~/.pi-course/models.json`. */
export function modelsFilePath(env: NodeJS.ProcessEnv): string {
  return path.join(homeFolder(env), "models.json");
}

/**
 * The server and key a catalogue name picks. With a model named and neither a base URL nor a
 * provider set (by flag, environment or config file: those still win), a name whose first model
 * the catalogue knows (a model, a virtual model, or `a,b`) is reached where its provider is, with
 * its provider's key variable (the built-in providers' endpoints, overridden by
 * `~/.pi-course/models.json`). Undefined otherwise: the base URL, provider and key variable are
 * the settings' (flag, environment, config file, default). Throws
 * `ModelsFileError` for a models file that cannot be used.
 */
export function catalogueRoute(
  settings: Partial<Record<SettingName, Setting>>,
  env: NodeJS.ProcessEnv,
): CatalogueRoute | undefined {
  if (settings.baseUrl !== undefined || settings.provider !== undefined) return undefined;
  const name = settings.model?.value;
  if (name === undefined || name.trim() === "") return undefined;
  const catalogue = loadModelsFileSync(ModelCatalogue.builtin(), modelsFilePath(env));
  const members = catalogue.members(name);
  if (members[0] === undefined || catalogue.endpoint(members[0]) === undefined) return undefined;
  return { endpoints: members.flatMap((m) => catalogue.endpoint(m) ?? []) };
}

/**
 * The keys a route needs, by variable: one per variable its models name. A variable that is not
 * set is a usage error that names it, and the model and server it is for.
 */
export function catalogueKeys(route: CatalogueRoute, env: NodeJS.ProcessEnv): Record<string, string> {
  const keys: Record<string, string> = {};
  for (const endpoint of route.endpoints) {
    const name = endpoint.apiKeyEnv;
    if (name === undefined || keys[name] !== undefined) continue;
    const key = env[name];
    if (key === undefined || key === "") {
      throw new CliUsageError(
        `no API key: $${name} is not set (${endpoint.model} is served by ${endpoint.provider} at ${endpoint.baseUrl}). ` +
          "Set it, name another variable with --api-key-env NAME, or pass --no-api-key for a local server that needs none.",
      );
    }
    keys[name] = key;
  }
  return keys;
}
