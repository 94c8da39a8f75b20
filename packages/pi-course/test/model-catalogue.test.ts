import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  formatDollars,
  BUILTIN_MODELS,
  ModelCatalogue,
  atThinkingLevel,
  catalogued,
  relay,
  createOpenAICompatibleModel,
  parseModelsFile,
  userMessage,
} from "../src/index.js";
import type { Context, Model, ModelEvent } from "../src/index.js";
import { SseServer, fixtureSse, sseReply } from "./support/sse-server.js";

const context: Context = { systemPrompt: "be brief", messages: [userMessage("hi")] };

async function collect(model: Model) {
  const events: ModelEvent[] = [];
  const stream = model.stream(context);
  for await (const event of stream) events.push(event);
  return { events, message: await stream.result() };
}

let server: SseServer;
beforeEach(async () => {
  server = await SseServer.start();
});
afterEach(async () => {
  await server.close();
});

describe("the catalogue", () => {
  it("resolve finds a model by id (exactly, else ignoring case) with its window, output, inputs, reasoning and prices", () => {
    const catalogue = ModelCatalogue.builtin();
    const info = catalogue.resolve("claude-sonnet-4-5", { provider: "x", api: "openai-compatible" });
    expect(info).toEqual({
      id: "claude-sonnet-4-5",
      provider: "anthropic",
      api: "anthropic",
      contextWindow: 200_000,
      maxOutput: 64_000,
      input: ["text", "image"],
      reasoning: true,
      prices: {
        input: 3,
        output: 15,
        cacheRead: 0.3,
        cacheWrite: 3.75,
        source: "https://docs.anthropic.com/en/docs/about-claude/pricing",
        asOf: "2025-10",
      },
      known: true,
    });
    expect(catalogue.resolve("GPT-4o-Mini", { provider: "x", api: "anthropic" }).id).toBe("gpt-4o-mini");
  });

  it("each provider's endpoint and key variable: a catalogue name alone says where it is reached", () => {
    const catalogue = ModelCatalogue.builtin();
    const reach = (id: string) => {
      const endpoint = catalogue.endpoint(id)!;
      return [endpoint.provider, endpoint.api, endpoint.baseUrl, endpoint.apiKeyEnv];
    };
    expect(reach("gpt-4o-mini")).toEqual([
      "openai",
      "openai-compatible",
      "https://api.openai.com/v1",
      "OPENAI_API_KEY",
    ]);
    expect(reach("claude-sonnet-4-5")).toEqual([
      "anthropic",
      "anthropic",
      "https://api.anthropic.com",
      "ANTHROPIC_API_KEY",
    ]);
    expect(reach("deepseek-chat")).toEqual([
      "deepseek",
      "openai-compatible",
      "https://api.deepseek.com/v1",
      "DEEPSEEK_API_KEY",
    ]);
    expect(reach("llama-3.3-70b-versatile")).toEqual([
      "groq",
      "openai-compatible",
      "https://api.groq.com/openai/v1",
      "GROQ_API_KEY",
    ]);
    expect(reach("openai/gpt-4o-mini")).toEqual([
      "openrouter",
      "openai-compatible",
      "https://openrouter.ai/api/v1",
      "OPENROUTER_API_KEY",
    ]);
    expect(reach("qwen3")).toEqual(["local", "openai-compatible", "http://127.0.0.1:11434/v1", undefined]);
    // Every built-in model is reachable; a name the catalogue does not know is not.
    for (const id of catalogue.names()) expect(catalogue.endpoint(id), id).toBeDefined();
    expect(catalogue.endpoint("mystery-model")).toBeUndefined();
    // A model's own server and key variable come first; a provider no one placed has none.
    const own = catalogue.with([
      {
        id: "mine",
        provider: "groq",
        api: "openai-compatible",
        contextWindow: 9,
        maxOutput: 9,
        input: ["text"],
        reasoning: false,
        baseUrl: "http://127.0.0.1:1/v1",
        apiKeyEnv: "MINE",
      },
      {
        id: "lost",
        provider: "nowhere",
        api: "openai-compatible",
        contextWindow: 9,
        maxOutput: 9,
        input: ["text"],
        reasoning: false,
      },
    ]);
    expect(own.endpoint("mine")).toMatchObject({
      provider: "groq",
      baseUrl: "http://127.0.0.1:1/v1",
      apiKeyEnv: "MINE",
    });
    expect(own.endpoint("lost")).toBeUndefined();
    expect(own.members("a, b")).toEqual(["a", "b"]);
  });

  it("a model not in the catalogue works with the defaults, an unknown price and one notice", () => {
    const info = ModelCatalogue.builtin().resolve("my-local-model", { provider: "openai", api: "openai-compatible" });
    expect(info).toEqual({
      id: "my-local-model",
      provider: "openai",
      api: "openai-compatible",
      contextWindow: 128_000,
      maxOutput: 8_192,
      input: ["text"],
      reasoning: false,
      known: false,
      notice:
        'model "my-local-model" is not in the model catalogue: its context window is taken as 128000 tokens and ' +
        "its price as unknown (add it to ~/.pi-course/models.json to say more)",
    });
    expect(info.prices).toBeUndefined();
  });

  it("every built-in model has a provider, an API, sizes and a price with its source and date", () => {
    for (const name of ["gpt-4o-mini", "claude-sonnet-4-5", "qwen2.5-coder"]) {
      expect(ModelCatalogue.builtin().resolve(name, { provider: "x", api: "anthropic" }).known, name).toBe(true);
    }
    const providers = new Set(BUILTIN_MODELS.map((m) => m.provider));
    for (const p of ["openai", "anthropic", "deepseek", "groq", "openrouter", "local"]) expect(providers).toContain(p);
    for (const model of BUILTIN_MODELS) {
      expect(model.contextWindow, model.id).toBeGreaterThan(model.maxOutput);
      expect(model.prices?.source, model.id).toMatch(/\S/);
      expect(model.prices?.asOf, model.id).toMatch(/^\d{4}-\d{2}(-\d{2})?$/);
    }
    expect(new Set(BUILTIN_MODELS.map((m) => m.id)).size).toBe(BUILTIN_MODELS.length);
  });
  it("a model the catalogue says does not reason: the level is not sent, and a diagnostic says so", async () => {
    server.reply(sseReply(fixtureSse("openai-gpt-4o-text-with-usage.sse")));
    const model = createOpenAICompatibleModel({ baseUrl: server.baseUrl, model: "gpt-4o" });
    const info = ModelCatalogue.builtin().resolve("gpt-4o", { provider: "openai", api: "openai-compatible" });
    const { message } = await collect(atThinkingLevel(catalogued(model, info), "high"));
    expect(JSON.parse(server.requests[0]!.body).reasoning_effort).toBeUndefined();
    expect(message.diagnostics).toEqual([
      'thinking level "high" ignored: the model catalogue says gpt-4o does not reason',
    ]);
    expect(message.cost).toBeDefined();
  });

  it("a models file's compat.supportsReasoningEffort: false: a reasoning model's level is not sent, and a diagnostic says why", async () => {
    server.reply(sseReply(fixtureSse("openai-gpt-4o-text-with-usage.sse")));
    const file = parseModelsFile(
      JSON.stringify({
        providers: {
          lm: {
            baseUrl: server.baseUrl,
            api: "openai-completions",
            compat: { supportsReasoningEffort: false },
            models: [{ id: "gpt-oss:20b", reasoning: true }],
          },
        },
      }),
      "models.json",
    );
    const catalogue = ModelCatalogue.builtin().with(file.models, file.virtual, file.providers);
    const info = catalogue.resolve("gpt-oss:20b", { provider: "lm", api: "openai-compatible" });
    expect(info).toMatchObject({ reasoning: true, thinkingParameter: false });
    const model = createOpenAICompatibleModel({ baseUrl: server.baseUrl, model: "gpt-oss:20b" });
    const { message } = await collect(atThinkingLevel(catalogued(model, info), "medium"));
    expect(message.stopReason, message.errorMessage).toBe("stop");
    expect(JSON.parse(server.requests[0]!.body)).not.toHaveProperty("reasoning_effort");
    expect(message.diagnostics).toEqual([
      'thinking level "medium" ignored: the models file says gpt-oss:20b\'s server takes no thinking parameter (compat.supportsReasoningEffort: false)',
    ]);
  });

  it("relay: a finishing step that throws ends the turn as an error, never leaves it open", async () => {
    server.reply(sseReply(fixtureSse("openai-gpt-4o-text-with-usage.sse")));
    const model = createOpenAICompatibleModel({ baseUrl: server.baseUrl, model: "gpt-4o" });
    const stream = relay(model.stream(context), () => {
      throw new Error("boom");
    });
    const events: string[] = [];
    for await (const event of stream) events.push(event.type);
    expect(events.at(-1)).toBe("error");
    expect(await stream.result()).toMatchObject({
      stopReason: "error",
      errorMessage: "finishing the answer failed: boom",
    });
  });
});

describe("dollars as a person reads them", () => {
  it("four decimals from a cent, two significant digits below it, never an exponent", () => {
    expect([0, 0.0123456, 1.5, 0.0000069, 0.000018, 1e-7, 4.2e-10].map(formatDollars)).toEqual([
      "$0",
      "$0.0123",
      "$1.5000",
      "$0.0000069",
      "$0.000018",
      "$0.00000010",
      "$0.00000000042",
    ]);
  });
});
