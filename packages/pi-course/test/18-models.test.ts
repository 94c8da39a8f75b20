/**
 * Chapter 18: models as users choose them. The catalogue and a user's models file; cost from
 * recorded usage (cache reads and writes included); thinking levels as exact request bodies on
 * both wire formats, over real HTTP on 127.0.0.1 replaying recorded streams; virtual models that
 * fall back before an answer starts (a 529 or a 429 from the first, a stream from the second) and
 * never once it has (a start, content, an in-stream overload).
 */
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  ANTHROPIC_THINKING_BUDGETS,
  ModelCatalogue,
  ModelsFileError,
  THINKING_LEVELS,
  atThinkingLevel,
  catalogued,
  conversationCost,
  costOf,
  createAnthropicModel,
  createFallbackModel,
  createOpenAICompatibleModel,
  createVirtualModel,
  formatConversationCost,
  loadModelsFile,
  parseModelsFile,
  textOf,
  userMessage,
} from "../src/index.js";
import type {
  AssistantMessage,
  Context,
  Model,
  ModelEvent,
  RouteReport,
  StreamOptions,
  ThinkingLevel,
} from "../src/index.js";
import { parseArgs, type RunOptions } from "../src/cli/args.js";
import { setUpModel } from "../src/cli/model-setup.js";
import { SseServer, fixtureSse, sseOf, sseReply, statusReply } from "./support/sse-server.js";

const context: Context = { systemPrompt: "be brief", messages: [userMessage("hi")] };
const anthropicFixture = (name: string) =>
  readFileSync(new URL(`./fixtures/anthropic/${name}`, import.meta.url), "utf8");

async function collect(model: Model, options: Parameters<Model["stream"]>[1] = {}) {
  const events: ModelEvent[] = [];
  const stream = model.stream(context, options);
  for await (const event of stream) events.push(event);
  return { events, message: await stream.result() };
}

/** A port on 127.0.0.1 where nothing listens (bound, then released). */
async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

/** Runs `run` in a temporary folder of its own, removed afterwards. */
async function inTempDir(run: (dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), "pi-models-"));
  try {
    await run(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

let server: SseServer;
beforeEach(async () => {
  server = await SseServer.start();
});
afterEach(async () => {
  await server.close();
});

describe("a user's models file", () => {
  it("Lab 18.1 · ~/.pi-course/models.json adds models (replacing built-in ones) and named virtual models", async () => {
    await inTempDir(async (dir) => {
      const file = path.join(dir, "models.json");
      await writeFile(
        file,
        JSON.stringify({
          models: [
            {
              id: "gpt-4o-mini",
              provider: "openai",
              api: "openai-compatible",
              contextWindow: 64_000,
              maxOutput: 4_000,
              prices: { input: 1, output: 2, source: "my contract", asOf: "2026-01" },
            },
            { id: "house-model", provider: "local", api: "openai-compatible", contextWindow: 8_192, maxOutput: 1_024 },
          ],
          virtual: { "cheap-then-strong": ["gpt-4o-mini", "gpt-4o"] },
          providers: {
            deepseek: { baseUrl: "http://127.0.0.1:8080/v1/" },
            "my-cloud": { baseUrl: "https://llm.example.com/v1", apiKeyEnv: "MY_CLOUD_KEY" },
          },
        }),
      );
      const catalogue = await loadModelsFile(ModelCatalogue.builtin(), file);
      expect(catalogue.find("gpt-4o-mini")).toEqual({
        id: "gpt-4o-mini",
        provider: "openai",
        api: "openai-compatible",
        contextWindow: 64_000,
        maxOutput: 4_000,
        input: ["text"],
        reasoning: false,
        prices: { input: 1, output: 2, source: "my contract", asOf: "2026-01" },
      });
      expect(catalogue.resolve("house-model", { provider: "x", api: "anthropic" }).known).toBe(true);
      expect(catalogue.virtual("cheap-then-strong")).toEqual(["gpt-4o-mini", "gpt-4o"]);
      expect(catalogue.names()).toContain("cheap-then-strong");
      // A provider's fields replace the known ones one by one: DeepSeek moves, its key variable stays.
      expect(catalogue.endpoint("deepseek-chat")).toEqual({
        model: "deepseek-chat",
        provider: "deepseek",
        api: "openai-compatible",
        baseUrl: "http://127.0.0.1:8080/v1",
        apiKeyEnv: "DEEPSEEK_API_KEY",
      });
      expect(catalogue.endpoint("house-model")).toEqual({
        model: "house-model",
        provider: "local",
        api: "openai-compatible",
        baseUrl: "http://127.0.0.1:11434/v1",
      });
      expect(ModelCatalogue.builtin().find("house-model")).toBeUndefined();
      // no file: the catalogue as it was
      expect(await loadModelsFile(catalogue, path.join(dir, "absent.json"))).toBe(catalogue);
    });
  });

  it("Lab 18.1 · a price needs no source (it is yours), and pi's models.json shape reads as the same models", () => {
    const ours = parseModelsFile(
      JSON.stringify({
        models: [
          {
            id: "mine",
            provider: "local",
            api: "openai-compatible",
            contextWindow: 8,
            maxOutput: 4,
            prices: { input: 0, output: 0 },
          },
        ],
      }),
      "models.json",
    );
    expect(ours.models[0]!.prices).toEqual({ input: 0, output: 0, source: "yours" });
    const pi = parseModelsFile(
      JSON.stringify({
        providers: {
          ollama: {
            baseUrl: "http://localhost:11434/v1/",
            apiKey: "OLLAMA_API_KEY",
            api: "openai-completions",
            models: [
              {
                id: "llama-3.1-8b",
                name: "Llama 3.1 8B (Local)",
                reasoning: false,
                input: ["text"],
                cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
                contextWindow: 128000,
                maxTokens: 32000,
              },
              {
                id: "claude-proxy",
                api: "anthropic-messages",
                contextWindow: 200000,
                maxTokens: 8192,
                reasoning: true,
              },
            ],
          },
        },
      }),
      "models.json",
    );
    expect(pi.models, "pi's shape: the models under providers.NAME.models are models of the file too").toEqual([
      {
        id: "llama-3.1-8b",
        provider: "ollama",
        api: "openai-compatible",
        contextWindow: 128000,
        maxOutput: 32000,
        input: ["text"],
        reasoning: false,
        prices: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, source: "yours" },
      },
      {
        id: "claude-proxy",
        provider: "ollama",
        api: "anthropic",
        contextWindow: 200000,
        maxOutput: 8192,
        input: ["text"],
        reasoning: true,
      },
    ]);
    expect(pi.providers).toEqual({ ollama: { baseUrl: "http://localhost:11434/v1", apiKeyEnv: "OLLAMA_API_KEY" } });
  });

  it("Lab 18.1 · a bad models file is refused whole, with the field and what to write", () => {
    const bad = (value: unknown) => () => parseModelsFile(JSON.stringify(value), "models.json");
    expect(bad({ modles: [] })).toThrow(
      new ModelsFileError('models.json has an unknown key "modles"; the keys are models, virtual, providers'),
    );
    expect(bad({ providers: { acme: { apiKeyEnv: "ACME_KEY" } } })).toThrow(
      'models.json: providers.acme needs "baseUrl": acme is not a provider the catalogue knows',
    );
    expect(bad({ providers: { groq: { token: "gsk-…" } } })).toThrow(
      'models.json: providers.groq has an unknown key "token"; the keys are baseUrl, apiKeyEnv, headers, api, apiKey, models, authHeader, modelOverrides, compat',
    );
    // pi's apiKey names the variable that holds the key; a key itself is refused
    expect(bad({ providers: { groq: { apiKey: "gsk-…" } } })).toThrow(
      "models.json: providers.groq.apiKey must be the name of the environment variable that holds the key (letters, digits, _), never the key itself, got a string of 5 characters",
    );
    expect(bad({ providers: { groq: { apiKeyEnv: "gsk-abc123" } } })).toThrow(
      "models.json: providers.groq.apiKeyEnv must be the name of an environment variable (letters, digits, _), never the key itself, got a string of 10 characters",
    );
    expect(bad({ models: [{ id: "m", provider: "p", api: "grpc", contextWindow: 1, maxOutput: 1 }] })).toThrow(
      "models.json: models[0].api must be one of openai-compatible, anthropic",
    );
    expect(bad({ models: [{ id: "m", provider: "p", api: "anthropic", contextWindow: "big", maxOutput: 1 }] })).toThrow(
      "models.json: models[0].contextWindow must be a whole number of tokens",
    );
    expect(
      bad({
        models: [
          {
            id: "m",
            provider: "p",
            api: "anthropic",
            contextWindow: 9,
            maxOutput: 1,
            prices: { input: 1, output: 1, source: "" },
          },
        ],
      }),
    ).toThrow(
      "models.json: models[0].prices.source must be a non-empty text saying where the price was read, got a string of 0 characters",
    );
    expect(
      bad({
        providers: {
          ollama: { baseUrl: "http://127.0.0.1:11434/v1", models: [{ id: "m", contextWindow: 9, maxTokens: 1 }] },
        },
      }),
    ).toThrow(
      'models.json: providers.ollama.models[0] needs "api" (openai-completions or anthropic-messages), on it or on its provider',
    );
    expect(bad({ virtual: { solo: ["gpt-4o"] } })).toThrow(
      "models.json: virtual.solo must be a list of two or more model names, in the order to try them, got an array of 1 item",
    );
    expect(() => parseModelsFile("{", "models.json")).toThrow(/^models\.json is not JSON \(/);
  });

  it("Lab 18.1 · pi's documented models.json loads: only an id is needed (contextWindow 128000, maxTokens 16384; no cost: an unknown price), modelOverrides change known models", async () => {
    await inTempDir(async (dir) => {
      const file = path.join(dir, "models.json");
      // pi's minimal example, as its documentation gives it, plus an override of a known model
      await writeFile(
        file,
        JSON.stringify({
          providers: {
            ollama: {
              baseUrl: "http://localhost:11434/v1",
              api: "openai-completions",
              apiKey: "ollama",
              models: [{ id: "llama3.1:8b" }, { id: "qwen2.5-coder:7b" }],
            },
            openai: {
              modelOverrides: {
                "gpt-4o-mini": {
                  contextWindow: 64000,
                  cost: { input: 0.1 },
                  compat: { supportsReasoningEffort: false },
                },
                "no-such-model": { contextWindow: 1000 },
              },
            },
          },
        }),
      );
      const catalogue = await loadModelsFile(ModelCatalogue.builtin(), file);
      expect(catalogue.find("llama3.1:8b")).toEqual({
        id: "llama3.1:8b",
        provider: "ollama",
        api: "openai-compatible",
        contextWindow: 128000,
        maxOutput: 16384,
        input: ["text"],
        reasoning: false,
      });
      expect(catalogue.endpoint("qwen2.5-coder:7b")).toMatchObject({
        baseUrl: "http://localhost:11434/v1",
        apiKeyEnv: "ollama",
      });
      const builtin = ModelCatalogue.builtin().find("gpt-4o-mini")!;
      expect(catalogue.find("gpt-4o-mini")).toEqual({
        ...builtin,
        contextWindow: 64000,
        prices: { ...builtin.prices, input: 0.1, source: "yours", asOf: undefined },
        thinkingParameter: false,
      });
      expect(catalogue.find("no-such-model"), "an override of a model the catalogue does not know is ignored").toBe(
        undefined,
      );
    });
  });

  it("Lab 18.1 · pi's keys the course's wires cannot honour are refused, naming the key and why", () => {
    const bad = (value: unknown) => () => parseModelsFile(JSON.stringify(value), "models.json");
    const local = (compat: unknown) => ({
      providers: {
        lm: { baseUrl: "http://127.0.0.1:1234/v1", api: "openai-completions", compat, models: [{ id: "m" }] },
      },
    });
    expect(bad(local({ openRouterRouting: { only: ["a"] } }))).toThrow(
      "models.json: providers.lm.compat.openRouterRouting must be left out: the course sends no routing preferences to OpenRouter (name the models to try with a virtual model), got an object",
    );
    expect(bad(local({ supportsUsageInStreaming: false }))).toThrow(
      "models.json: providers.lm.compat.supportsUsageInStreaming must be true, or left out: the course always asks for usage in the stream (stream_options.include_usage), which an answer's cost needs, got false",
    );
    expect(bad(local({ supportsDeveloperRole: true }))).toThrow(
      "models.json: providers.lm.compat.supportsDeveloperRole must be false, or left out: the course always sends the system prompt as a system message, never as a developer one, got true",
    );
    expect(
      bad({ providers: { lm: { baseUrl: "http://127.0.0.1:1234/v1", headers: { "x-secret": "!op read x" } } } }),
    ).toThrow(
      "models.json: providers.lm.headers.x-secret must be a header's value: the name of an environment variable that holds it, or the text itself, never a !command (the course runs no command from a models file: put the value in an environment variable and name it), got a string of 10 characters",
    );
    // what the course does anyway is accepted; supportsReasoningEffort: false keeps a level from being sent
    const fine = parseModelsFile(
      JSON.stringify(
        local({
          supportsStore: false,
          supportsDeveloperRole: false,
          maxTokensField: "max_tokens",
          supportsReasoningEffort: false,
        }),
      ),
      "models.json",
    );
    expect(fine.models[0]).toMatchObject({ id: "m", thinkingParameter: false });
  });

  it("Lab 18.1 · a models file's headers and authHeader reach the server (127.0.0.1): a value naming a set variable is read from it", async () => {
    await inTempDir(async (dir) => {
      const home = path.join(dir, "home");
      await mkdir(path.join(home, ".pi-course"), { recursive: true });
      const file = path.join(home, ".pi-course", "models.json");
      await writeFile(
        file,
        JSON.stringify({
          providers: {
            proxy: {
              baseUrl: server.baseUrl,
              api: "anthropic-messages",
              apiKey: "PROXY_KEY",
              authHeader: true,
              headers: { "x-team": "TEAM_HEADER", "x-client": "pi-course test" },
              models: [{ id: "claude-proxy", maxTokens: 1024, headers: { "x-route": "eu" } }],
            },
          },
        }),
      );
      const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: home, PROXY_KEY: "k-123", TEAM_HEADER: "team-7" };
      const options = parseArgs(["--cwd", dir, "--model", "claude-proxy", "hi"], env, false) as RunOptions;
      const catalogue = await loadModelsFile(ModelCatalogue.builtin(), file, env);
      server.reply(sseReply(anthropicFixture("anthropic-text.sse")));
      const { model } = setUpModel(options, catalogue, "claude-proxy", undefined);
      const { message } = await collect(model);
      expect(message.stopReason, message.errorMessage).toBe("stop");
      expect(server.requests[0]!.headers).toMatchObject({
        "x-api-key": "k-123",
        authorization: "Bearer k-123",
        "x-team": "team-7",
        "x-client": "pi-course test",
        "x-route": "eu",
      });
      expect(JSON.parse(server.requests[0]!.body)).toMatchObject({ model: "claude-proxy", max_tokens: 1024 });
    });
  });

  it("Lab 18.1 · an id in both lists: the one under providers (read after models) wins; the catalogue finds a name ignoring its case", () => {
    const file = parseModelsFile(
      JSON.stringify({
        models: [{ id: "Twin", provider: "local", api: "openai-compatible", contextWindow: 1_000, maxOutput: 100 }],
        providers: {
          ollama: {
            baseUrl: "http://127.0.0.1:11434/v1",
            api: "openai-completions",
            models: [{ id: "Twin", contextWindow: 2_000, maxTokens: 200 }],
          },
        },
      }),
      "models.json",
    );
    expect(
      file.models.map((m) => [m.id, m.provider]),
      "models lists the file's models first, then those under providers",
    ).toEqual([
      ["Twin", "local"],
      ["Twin", "ollama"],
    ]);
    const catalogue = ModelCatalogue.builtin().with(file.models, file.virtual, file.providers);
    expect(catalogue.find("Twin")?.provider, "the same id in both lists: the one under providers wins").toBe("ollama");
    expect(catalogue.find("TWIN")?.contextWindow, "resolve and find match a name exactly, else ignoring case").toBe(
      2_000,
    );
    expect(catalogue.resolve("GPT-4o-Mini", { provider: "x", api: "anthropic" })).toMatchObject({
      id: "gpt-4o-mini",
      provider: "openai",
      known: true,
    });
    expect(catalogue.resolve("no-such-model", { provider: "x", api: "anthropic" }).known).toBe(false);
  });
});

describe("cost", () => {
  it("Lab 18.2 · costOf prices fresh input, cache reads, cache writes and output apart (recorded DeepSeek usage: 320 of 339 cached)", async () => {
    server.reply(sseReply(fixtureSse("deepseek-reasoner-reasoning-then-tool-call.chunks.txt")));
    const model = createOpenAICompatibleModel({ baseUrl: server.baseUrl, model: "deepseek-reasoner" });
    const info = ModelCatalogue.builtin().resolve("deepseek-reasoner", { provider: "x", api: "openai-compatible" });
    const { message } = await collect(catalogued(model, info));
    expect(message.stopReason, message.errorMessage).toBe("toolUse");
    expect(message.usage).toEqual({ input: 339, output: 83, totalTokens: 422, cacheRead: 320 });
    // 19 fresh × $0.28, 320 cached × $0.028, 83 out × $0.42, per million
    const expected = { input: 19 * 0.28e-6, cacheRead: 320 * 0.028e-6, cacheWrite: 0, output: 83 * 0.42e-6 };
    expect(
      message.cost!.input,
      "only fresh input (input - cacheRead - cacheWrite) is charged at the input price",
    ).toBeCloseTo(expected.input, 15);
    expect(message.cost!.cacheRead).toBeCloseTo(expected.cacheRead, 15);
    expect(message.cost!.cacheWrite).toBe(0);
    expect(message.cost!.output).toBeCloseTo(expected.output, 15);
    expect(message.cost!.total).toBeCloseTo(expected.input + expected.cacheRead + expected.output, 15);
  });

  it("Lab 18.2 · cache writes at their own price; no cache price: priced as input; no price: no cost", () => {
    const usage = { input: 10_000, output: 1_000, totalTokens: 11_000, cacheRead: 2_000, cacheWrite: 3_000 };
    const sonnet = ModelCatalogue.builtin().find("claude-sonnet-4-5")!.prices;
    const cost = costOf(usage, sonnet)!;
    expect(cost.input).toBeCloseTo(5_000 * 3e-6, 15);
    expect(cost.cacheRead).toBeCloseTo(2_000 * 0.3e-6, 15);
    expect(cost.cacheWrite).toBeCloseTo(3_000 * 3.75e-6, 15);
    expect(cost.output).toBeCloseTo(1_000 * 15e-6, 15);
    expect(cost.total, "total is the sum of the four parts").toBeCloseTo(0.015 + 0.0006 + 0.01125 + 0.015, 15);
    const groq = costOf(usage, { input: 1, output: 2, source: "s", asOf: "2025-10" })!;
    expect(groq.cacheRead).toBeCloseTo(2_000e-6, 15);
    expect(groq.cacheWrite).toBeCloseTo(3_000e-6, 15);
    // a cache-read price but no cache-write price: the writes are priced as input, not as reads
    const readsOnly = costOf(usage, { input: 1, output: 2, cacheRead: 0.1, source: "s" })!;
    expect(readsOnly.cacheRead).toBeCloseTo(2_000 * 0.1e-6, 15);
    expect(
      readsOnly.cacheWrite,
      "a cache write with no cache-write price is priced as input, never at the cache-read price",
    ).toBeCloseTo(3_000e-6, 15);
    expect(costOf(usage, undefined), "an unknown price is no cost at all (undefined), never a zero").toBeUndefined();
  });

  it("Lab 18.2 · a recorded Anthropic stream is priced; an unknown model's answer has no cost, never a zero", async () => {
    server.reply(sseReply(anthropicFixture("anthropic-thinking-then-text.sse")));
    const sonnet = createAnthropicModel({ baseUrl: server.baseUrl, model: "claude-sonnet-4-0", maxTokens: 4096 });
    const catalogue = ModelCatalogue.builtin();
    const priced = await collect(
      catalogued(sonnet, catalogue.resolve("claude-sonnet-4-0", { provider: "anthropic", api: "anthropic" })),
    );
    expect(priced.message.stopReason, priced.message.errorMessage).toBe("stop");
    expect(priced.message.usage).toEqual({ input: 43, output: 282, totalTokens: 325, cacheRead: 0, cacheWrite: 0 });
    expect(priced.message.cost!.total).toBeCloseTo(43 * 3e-6 + 282 * 15e-6, 15);

    server.reply(sseReply(fixtureSse("openai-gpt-4o-text-with-usage.sse")));
    const unknown = createOpenAICompatibleModel({ baseUrl: server.baseUrl, model: "mystery" });
    const plain = await collect(
      catalogued(unknown, catalogue.resolve("mystery", { provider: "openai", api: "openai-compatible" })),
    );
    expect(plain.message.usage.input).toBe(14);
    expect("cost" in plain.message).toBe(false);

    const total = conversationCost([context.messages[0]!, priced.message, plain.message]);
    expect(total).toEqual({ total: priced.message.cost!.total, priced: 1, unpriced: 1 });
    expect(formatConversationCost(total)).toBe("$0.0044 + unknown (1 answer without a price)");
    expect(formatConversationCost(conversationCost([plain.message]))).toBe("unknown (1 answer without a price)");
    expect(formatConversationCost(conversationCost([]))).toBe("$0");
  });
});

describe("thinking levels on the wire", () => {
  const expectedOpenAI = (level: ThinkingLevel) => ({
    model: "gpt-5-mini",
    messages: [
      { role: "system", content: "be brief" },
      { role: "user", content: "hi" },
    ],
    stream: true,
    stream_options: { include_usage: true },
    ...(level !== "off" && { reasoning_effort: level }),
  });

  for (const level of THINKING_LEVELS) {
    it(`Lab 18.3 · OpenAI-compatible, level ${level}: the exact request body`, async () => {
      server.reply(sseReply(fixtureSse("openai-gpt-4o-text-with-usage.sse")));
      // reasoningEffort set on the model: the call's level replaces it (off removes it)
      const model = createOpenAICompatibleModel({
        baseUrl: server.baseUrl,
        model: "gpt-5-mini",
        reasoningEffort: "low",
      });
      const { message } = await collect(atThinkingLevel(model, level));
      expect(message.stopReason, message.errorMessage).toBe("stop");
      expect(JSON.parse(server.requests[0]!.body)).toEqual(expectedOpenAI(level));
    });

    it(`Lab 18.3 · Anthropic, level ${level}: the exact request body (thinking budget, max_tokens raised to fit)`, async () => {
      server.reply(sseReply(anthropicFixture("anthropic-thinking-then-text.sse")));
      const model = createAnthropicModel({ baseUrl: server.baseUrl, model: "claude-sonnet-4-5", maxTokens: 4096 });
      const { message } = await collect(atThinkingLevel(model, level));
      expect(message.stopReason, message.errorMessage).toBe("stop");
      const budget = level === "off" ? undefined : ANTHROPIC_THINKING_BUDGETS[level];
      expect(JSON.parse(server.requests[0]!.body)).toEqual({
        model: "claude-sonnet-4-5",
        max_tokens: 4096 + (budget ?? 0),
        messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }],
        stream: true,
        system: "be brief",
        ...(budget !== undefined && { thinking: { type: "enabled", budget_tokens: budget } }),
      });
    });
  }

  it("Lab 18.3 · a call's own level wins over atThinkingLevel's", async () => {
    server.reply(sseReply(fixtureSse("openai-gpt-4o-text-with-usage.sse")));
    const model = createOpenAICompatibleModel({ baseUrl: server.baseUrl, model: "gpt-5" });
    const { message } = await collect(atThinkingLevel(model, "high"), { thinking: "minimal" });
    expect(message.stopReason, message.errorMessage).toBe("stop");
    expect(JSON.parse(server.requests[0]!.body).reasoning_effort).toBe("minimal");
  });

  it("Lab 18.3 · the wrapper keeps the model's provider and id, passes every option of the call on (its signal too), and a call's own off wins", async () => {
    const real = createOpenAICompatibleModel({ baseUrl: server.baseUrl, model: "gpt-5", provider: "openai" });
    const seen: (StreamOptions | undefined)[] = [];
    const spy: Model = {
      provider: real.provider,
      id: real.id,
      stream: (ctx, options) => {
        seen.push(options);
        return real.stream(ctx, options);
      },
    };
    const high = atThinkingLevel(spy, "high");
    expect([high.provider, high.id], "atThinkingLevel keeps the model's provider and id").toEqual(["openai", "gpt-5"]);

    // Ctrl-C during a --thinking run: the caller's signal must reach the model
    const controller = new AbortController();
    controller.abort();
    const aborted = await collect(high, { signal: controller.signal, maxRetries: 1 });
    expect(
      seen[0],
      "atThinkingLevel passes every option of the call on (signal, maxRetries), adding only the level",
    ).toEqual({ signal: controller.signal, maxRetries: 1, thinking: "high" });
    expect(aborted.message.stopReason, "the caller's signal was dropped: an abort did not stop the call").toBe(
      "aborted",
    );
    expect(server.requests).toHaveLength(0);

    server.reply(sseReply(fixtureSse("openai-gpt-4o-text-with-usage.sse")));
    const off = await collect(high, { thinking: "off" });
    expect(off.message.stopReason, off.message.errorMessage).toBe("stop");
    expect(
      JSON.parse(server.requests[0]!.body),
      "a call's own thinking: off wins over the model's default level",
    ).not.toHaveProperty("reasoning_effort");

    // no options at all: the default level alone
    server.reply(sseReply(fixtureSse("openai-gpt-4o-text-with-usage.sse")));
    const plain = high.stream(context);
    for await (const _ of plain) {
      /* drained */
    }
    expect((await plain.result()).stopReason).toBe("stop");
    expect(seen[2]).toEqual({ thinking: "high" });
    expect(JSON.parse(server.requests[1]!.body).reasoning_effort).toBe("high");
  });
});

describe("virtual models: selection apart from dispatch", () => {
  const overloaded = JSON.stringify({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } });
  const rateLimited = JSON.stringify({
    error: { message: "Rate limit reached", type: "rate_limit_exceeded", code: "rate_limit_exceeded" },
  });

  it("Lab 18.4 · a 529 from the first (Anthropic), a stream from the second: the answer is the second's, and says it fell back", async () => {
    const second = await SseServer.start();
    try {
      server.reply(statusReply(529, overloaded));
      second.reply(sseReply(fixtureSse("openai-gpt-4o-text-with-usage.sse")));
      const first = createAnthropicModel({
        baseUrl: server.baseUrl,
        model: "claude-sonnet-4-5",
        maxTokens: 1024,
        maxRetries: 0,
      });
      const backup = createOpenAICompatibleModel({ baseUrl: second.baseUrl, model: "gpt-4o", provider: "openai" });
      const routes: RouteReport[] = [];
      const model = createFallbackModel([first, backup], { onRoute: (r) => routes.push(r) });
      expect([model.provider, model.id]).toEqual(["fallback", "claude-sonnet-4-5,gpt-4o"]);
      const { events, message } = await collect(model);
      expect(message.stopReason, message.errorMessage).toBe("stop");
      expect(events.map((e) => e.type)).toEqual(["start", ...Array(8).fill("text_delta"), "done"]);
      expect([message.provider, message.model]).toEqual(["openai", "gpt-4o"]);
      expect(message.diagnostics).toEqual([
        "fell back from claude-sonnet-4-5 to gpt-4o (claude-sonnet-4-5: HTTP 529 unknown: Overloaded)",
      ]);
      expect(routes.map((r) => [r.answeredBy.id, r.skipped.map((s) => s.model.id)])).toEqual([
        ["gpt-4o", ["claude-sonnet-4-5"]],
      ]);
      expect(server.requests).toHaveLength(1);
      expect(second.requests).toHaveLength(1);
    } finally {
      await second.close();
    }
  });

  it("Lab 18.4 · a 429, then a refused connection, then a stream: tried in order", async () => {
    const port = await closedPort();
    server.reply(statusReply(429, rateLimited)).reply(sseReply(fixtureSse("openai-gpt-4o-text-with-usage.sse")));
    const a = createOpenAICompatibleModel({ baseUrl: server.baseUrl, model: "a", maxRetries: 0 });
    const b = createOpenAICompatibleModel({ baseUrl: `http://127.0.0.1:${port}/v1`, model: "b", maxRetries: 0 });
    const c = createOpenAICompatibleModel({ baseUrl: server.baseUrl, model: "c" });
    const { message } = await collect(createFallbackModel([a, b, c]));
    expect(message.stopReason, message.errorMessage).toBe("stop");
    expect(message.diagnostics).toHaveLength(1);
    expect(message.diagnostics![0]).toMatch(/^fell back from a and b to c \(a: .*Rate limit reached.*; b: .*\)$/);
    expect(server.requests.map((r) => JSON.parse(r.body).model)).toEqual(["a", "c"]);
  });

  it("Lab 18.4 · a 429 asking to wait 5 s falls back at once: every model but the last is tried once, the last keeps its retries", async () => {
    server
      .reply(statusReply(429, rateLimited, "application/json", { "retry-after": "5" }))
      .reply(statusReply(429, rateLimited, "application/json", { "retry-after": "0" }))
      .reply(sseReply(fixtureSse("openai-gpt-4o-text-with-usage.sse")));
    // Both keep the default maxRetries (2), as the README's example does.
    const a = createOpenAICompatibleModel({ baseUrl: server.baseUrl, model: "a" });
    const b = createOpenAICompatibleModel({ baseUrl: server.baseUrl, model: "b" });
    const started = Date.now();
    const { message } = await collect(createFallbackModel([a, b]));
    expect(
      server.requests.map((r) => JSON.parse(r.body).model),
      `every model but the last is asked with maxRetries: 0; the last keeps its own retries (the answer: ${message.errorMessage ?? message.stopReason})`,
    ).toEqual(["a", "b", "b"]);
    expect(message.stopReason, message.errorMessage).toBe("stop");
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it("Lab 18.4 · no fallback once content has streamed: the first model's error (with its content) is the answer", async () => {
    server.reply(sseReply(fixtureSse("groq-gpt-oss-reasoning-then-error-event.sse")));
    const a = createOpenAICompatibleModel({ baseUrl: server.baseUrl, model: "a", maxRetries: 0 });
    const b = createOpenAICompatibleModel({ baseUrl: server.baseUrl, model: "b" });
    const { events, message } = await collect(createFallbackModel([a, b]));
    expect(message.model, message.errorMessage).toBe("a");
    expect(events[0]!.type).toBe("start");
    expect(events.at(-1)!.type).toBe("error");
    expect(message.content.length).toBeGreaterThan(0);
    expect(message.diagnostics ?? []).not.toContainEqual(expect.stringMatching(/fell back/));
    expect(server.requests).toHaveLength(1);
  });

  it("Lab 18.4 · a connection lost after content has streamed (retryable) is no fallback either: the content shown stays", async () => {
    const text = (content: string) => ({ choices: [{ index: 0, delta: { content }, finish_reason: null }] });
    server.reply(sseReply(sseOf([text("Half of an answer")], { done: false }), { then: "reset" }));
    server.reply(
      sseReply(sseOf([text("Another answer"), { choices: [{ index: 0, delta: {}, finish_reason: "stop" }] }])),
    );
    const a = createOpenAICompatibleModel({ baseUrl: server.baseUrl, model: "a", maxRetries: 0 });
    const b = createOpenAICompatibleModel({ baseUrl: server.baseUrl, model: "b", maxRetries: 0 });
    const shown = "dispatch fell back after the stream had started: content already shown to the caller is dropped";
    const events: ModelEvent[] = [];
    const stream = createFallbackModel([a, b]).stream(context);
    let late: NodeJS.Timeout | undefined;
    const ended = new Promise<never>((_, reject) => {
      late = setTimeout(
        () => reject(new Error(`no answer within 6 s (events so far: ${events.map((e) => e.type)}); ${shown}?`)),
        6000,
      );
    });
    const reading = (async () => {
      for await (const event of stream) events.push(event);
    })();
    await Promise.race([reading, ended]).finally(() => clearTimeout(late));
    const message = await stream.result();
    expect(message.model, `${shown} (its error: ${message.errorMessage})`).toBe("a");
    expect(textOf(message), shown).toBe("Half of an answer");
    expect(message.stopReason).toBe("error");
    expect(message.errorDetails?.retryable, message.errorMessage).toBe(true);
    expect(events.filter((e) => e.type === "start")).toHaveLength(1);
    expect(server.requests).toHaveLength(1);
  });

  it("Lab 18.4 · not retryable (a 400) or aborted: no fallback; every model failing: the last failure names the others", async () => {
    server.reply(statusReply(400, JSON.stringify({ error: { message: "bad request" } })));
    const a = createOpenAICompatibleModel({ baseUrl: server.baseUrl, model: "a", maxRetries: 0 });
    const b = createOpenAICompatibleModel({ baseUrl: server.baseUrl, model: "b", maxRetries: 0 });
    const refused = await collect(createFallbackModel([a, b]));
    expect(refused.message.model, refused.message.errorMessage).toBe("a");
    expect(refused.message.stopReason).toBe("error");
    expect(server.requests).toHaveLength(1);

    const aborted = await collect(createFallbackModel([a, b]), { signal: AbortSignal.abort() });
    expect(aborted.message.stopReason).toBe("aborted");
    expect(server.requests).toHaveLength(1);

    server.reply(statusReply(503, "{}")).reply(statusReply(503, "{}"));
    const both = await collect(createFallbackModel([a, b]));
    expect(both.message.stopReason).toBe("error");
    expect(both.message.model).toBe("b");
    expect(both.message.diagnostics).toEqual([expect.stringMatching(/^fell back from a to b \(a: /)]);
  });

  it("Lab 18.4 · a start, then an overload before any content (Anthropic's in-stream error): that answer has started, so it is the answer", async () => {
    const second = await SseServer.start();
    try {
      const started =
        "event: message_start\n" +
        'data: {"type":"message_start","message":{"model":"claude-sonnet-4-5","id":"msg_1","type":"message","role":"assistant","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":17,"output_tokens":1}}}\n\n' +
        "event: error\n" +
        `data: ${overloaded}\n\n`;
      server.reply(sseReply(started));
      second.reply(sseReply(fixtureSse("openai-gpt-4o-text-with-usage.sse")));
      const first = createAnthropicModel({ baseUrl: server.baseUrl, model: "claude-sonnet-4-5", maxTokens: 1024 });
      const backup = createOpenAICompatibleModel({ baseUrl: second.baseUrl, model: "gpt-4o" });
      const { events, message } = await collect(createFallbackModel([first, backup]));
      const skipped =
        "dispatch skipped a model whose answer had started: once its start event reached the caller, that answer is the answer";
      expect(message.model, `${skipped} (answered by ${message.model}: ${message.errorMessage})`).toBe(
        "claude-sonnet-4-5",
      );
      expect(second.requests, skipped).toHaveLength(0);
      expect(events.map((e) => e.type)).toEqual(["start", "error"]);
      expect(message.stopReason).toBe("error");
      expect(message.errorDetails?.retryable, message.errorMessage).toBe(true);
      expect(message.diagnostics ?? []).not.toContainEqual(expect.stringMatching(/fell back/));
    } finally {
      await second.close();
    }
  });

  it("Lab 18.4 · the route is asked with the call's own options, and the chosen model is called with them", async () => {
    server.reply(sseReply(fixtureSse("openai-gpt-4o-text-with-usage.sse")));
    const small = createOpenAICompatibleModel({ baseUrl: server.baseUrl, model: "small" });
    const asked: StreamOptions[] = [];
    const router = createVirtualModel({
      id: "v",
      route: (_ctx, options) => {
        asked.push(options);
        return [small];
      },
    });
    const controller = new AbortController();
    const { message } = await collect(router, { thinking: "low", signal: controller.signal });
    expect(message.stopReason, message.errorMessage).toBe("stop");
    expect(asked, "the route is called with the call's options: route(context, call)").toEqual([
      { thinking: "low", signal: controller.signal },
    ]);
    expect(JSON.parse(server.requests[0]!.body).reasoning_effort).toBe("low");
  });

  it("Lab 18.4 · a router the application writes chooses per request; a route that chooses nothing ends in an error answer", async () => {
    server.reply(sseReply(fixtureSse("openai-gpt-4o-text-with-usage.sse")));
    const small = createOpenAICompatibleModel({ baseUrl: server.baseUrl, model: "small" });
    const large = createOpenAICompatibleModel({ baseUrl: server.baseUrl, model: "large" });
    const router = createVirtualModel({
      id: "by-length",
      route: (ctx) => (JSON.stringify(ctx.messages).length > 500 ? [large] : [small]),
    });
    const routed = await collect(router);
    expect(routed.message.stopReason, routed.message.errorMessage).toBe("stop");
    expect(JSON.parse(server.requests[0]!.body).model).toBe("small");

    const none = await collect(createVirtualModel({ id: "empty", route: () => [] }));
    expect(none.events.map((e) => e.type)).toEqual(["error"]);
    expect(none.message).toMatchObject({
      stopReason: "error",
      errorMessage: "Virtual model empty: the route chose no model",
    } satisfies Partial<AssistantMessage>);
    // a route that throws is an error answer too, never a throw from stream()
    const broken = await collect(
      createVirtualModel({
        id: "broken",
        route: () => {
          throw new Error("no config");
        },
      }),
    );
    expect(broken.events.map((e) => e.type)).toEqual(["error"]);
    expect(broken.message).toMatchObject({
      stopReason: "error",
      errorMessage: "Virtual model broken: the route failed: Error: no config",
    } satisfies Partial<AssistantMessage>);
  });
});
