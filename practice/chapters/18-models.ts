import { defineChapter } from "../catalogue.js";

export default defineChapter({
  id: "18",
  slug: "models",
  title: {
    zh: "按名字选模型：模型目录、思考级别、花费，以及选择与派发分离（虚拟模型）",
    en: "Models as users choose them: a catalogue, thinking levels, cost, and selection apart from dispatch",
  },
  invariant: {
    zh:
      "每条回答都记下真正回答它的模型，并按那个模型的价格算出花费；价格未知就是未知，绝不记成零；" +
      "回退只发生在第一个字节之前的可重试失败（限流、过载、5xx、连接被拒），一旦内容开始流出，那就是这条回答。",
    en:
      "Every answer records the real model that gave it and is priced at that model's price; an unknown price stays " +
      "unknown, never zero; a fallback happens only on a retryable failure before the first byte (rate limit, overload, " +
      "5xx, refused connection): once content has streamed, that is the answer.",
  },
  adds: {
    zh:
      "到第 17 章为止，一个模型只是一个 base URL 加一个名字：智能体不知道它的上下文窗口（预算要用户自己填），说不出一段对话花了多少钱，" +
      "没法要求“多想一点”，`--continue` 之后忘了 `/model` 选过什么，提供方一过载就停下——哪怕换个模型就能接着干。" +
      "本章先把“模型是什么”变成数据：`src/model-choice/catalogue-data.ts` 是一张模型表（提供方、线格式、上下文窗口、最大输出、能读的输入、" +
      "会不会推理、每百万 token 的价格，每个价格都写明来源和日期），`ModelCatalogue` 按名字查它，用户还能在 `~/.pi-course/models.json` 里加自己的模型和虚拟模型。" +
      "然后三件事都从目录出发：花费（`cost.ts`：`usage` 旁边的 `cost`，缓存读写分开计价）、思考级别（`off | minimal | low | medium | high`，" +
      "在 `StreamOptions.thinking` 里；线上的写法第 5 章的提供方已经会了：OpenAI 兼容服务器上是 `reasoning_effort`，Anthropic 上是带 token 预算的 `thinking` 并相应调高 `max_tokens`；" +
      "本章给模型一个默认级别 `atThinkingLevel`，目录说不会推理的模型不发送并留下说明）、" +
      "以及本章的核心想法——**选择与派发分离**：虚拟模型（`virtual-model.ts`）也是一个 `Model`，每次请求先由路由（应用自己写的函数，或固定的回退顺序）" +
      "选出要试的真实模型，再依次派发。命令行里 `--model a,b` 就是按顺序回退，`/model`、`/thinking` 作为 `model_change` 条目记进会话，" +
      "`--continue` 会接着用；上下文预算跟着所选模型的窗口走（除非给了 `--context-tokens`）；每次回答之后和 `/cost` 显示这段对话的花费。",
    en:
      "A model becomes data: a catalogue of known models (provider, API, context window, max output, inputs, reasoning, " +
      "prices with their source and date) and a user's models.json. From it: cost beside usage (cache reads and writes " +
      "priced apart), thinking levels mapped onto each wire, and virtual models: a route chooses the real models, dispatch " +
      "tries them in order, falling back only before the first byte. The CLI records /model and /thinking in the session.",
  },
  files: [
    "src/cli/features/models.ts",
    "src/cli/features/chosen-model.ts",
    "src/model-choice/types.ts",
    "src/model-choice/catalogue-data.ts",
    "src/model-choice/providers.ts",
    "src/model-choice/catalogue.ts",
    "src/model-choice/models-file.ts",
    "src/model-choice/cost.ts",
    "src/model-choice/catalogued-model.ts",
    "src/model-choice/virtual-model.ts",
    "src/cli/model-setup.ts",
    "src/cli/server-models.ts",
    "src/session-page/model-marks.ts",
  ],
  labs: [
    {
      id: "18.1",
      title: { zh: "用户自己的模型文件 models.json（parseModelsFile）", en: "a user's models file" },
      hint: {
        zh:
          "目录（`ModelCatalogue`）已经给你写好：`resolve(name)` 先精确、再忽略大小写地找，找不到就用默认值（`known: false`、没有价格、一条提示）。" +
          "你来写用户加模型的入口：用 `parseJson(text, ModelsFileSchema, { where: file, error: modelsError })` 一步完成解析和形状检查（`src/base/read-json.ts`，第 12 章给出）：" +
          '不是 JSON 就是 `${file} is not JSON (…)`；形状不对的消息统一为 `${file}: <路径> must be <期望>, got <实际>`，多出的键是 `${file} has an unknown key "<键>"; the keys are models, virtual, providers`。' +
          "每个期望都写在 schema 的 `expected` 里，例如 `models[0].contextWindow must be a whole number of tokens, got …`。" +
          'schema 说不了的再用代码检查：每个模型交给已经写好的 `checkEntry`（补默认值、去掉 URL 末尾的 `/`；价格可以不写 `source` 和 `asOf`，没写来源就是 `"yours"`），' +
          "pi 的 models.json 写法（模型列在 `providers.<名字>.models` 里，带 `maxTokens` 和 `cost`）交给已经写好的 `providerModels(value.providers ?? {}, fail)`，两部分接成一个 `models` 列表；" +
          "`providers`（提供方的 `baseUrl` 与存放密钥的变量名 `apiKeyEnv`，逐项盖过 `providers.ts` 里已知的）交给已经写好的 `checkProviders(value.providers ?? {}, fail)`：目录不认识的提供方必须给 `baseUrl`。" +
          "有了它们，只写一个目录里的名字（`--model deepseek-chat`）就知道去哪个服务器、读哪个密钥变量。" +
          "任何一处不对就整个文件拒绝（`ModelsFileError`，消息以文件名开头），绝不读一半。",
        en:
          "The catalogue is given (resolve: exact, else ignoring case, else defaults with known: false, no price and a notice). " +
          "You write parseModelsFile: parseJson with ModelsFileSchema (read-json.ts words every failure: `<file>: <path> must be <expected>, got <what>`); " +
          "each model through checkEntry (defaults), then pi's shape (providers.NAME.models) through providerModels; providers (baseUrl, apiKeyEnv over the known ones) through checkProviders (a new provider needs baseUrl). " +
          "Anything wrong refuses the whole file with a ModelsFileError starting with the file.",
      },
      says: [
        '${file} has an unknown key "${key}"; the keys are models, virtual, providers',
        "models.json: virtual.solo must be a list of two or more model names, in the order to try them, got an array of 1 item",
        "${file} is not JSON (${the parser's message})",
        "the schema's texts, e.g. models.json: models[0].api must be one of openai-compatible, anthropic, got a string of 4 characters",
        "models.json: models[0].contextWindow must be a whole number of tokens, got a string of 3 characters",
        "models.json: models[0].prices.source must be a non-empty text saying where the price was read, got a string of 0 characters",
        'checkProviders\'s texts, e.g. models.json: providers.acme needs "baseUrl": acme is not a provider the catalogue knows',
        'models.json: providers.groq has an unknown key "token"; the keys are baseUrl, apiKeyEnv, api, apiKey, models',
        "models.json: providers.groq.apiKey must be the name of the environment variable that holds the key (letters, digits, _), never the key itself, got a string of 5 characters",
        'providerModels\'s texts, e.g. models.json: providers.ollama.models[0] needs "api" (openai-completions or anthropic-messages), on it or on its provider',
        "models.json: providers.groq.apiKeyEnv must be the name of an environment variable (letters, digits, _), never the key itself, got a string of 10 characters",
      ],
    },
    {
      id: "18.2",
      title: {
        zh: "花费：缓存读写分开计价，未知价格不记零（costOf）",
        en: "cost: cache reads and writes priced apart, an unknown price never zero",
      },
      hint: {
        zh:
          "`usage.input` 已经**包含**缓存读写的 token（第 5 章的约定），所以按输入价计的只有 `input - cacheRead - cacheWrite`（缺的字段当 0）；" +
          "缓存读、缓存写各用自己的价格，提供方没有这个价格（字段不存在）时按输入价；输出按输出价。价格是每百万 token 的美元，" +
          "`total` 是四项之和；`prices` 为 undefined 时返回 undefined（未知就是未知）。" +
          "已经写好的 `catalogued(model, info)` 会在每条最终消息上放 `cost`，`conversationCost` 把一段对话加起来，" +
          "`formatConversationCost` 把它写成人读的样子。",
        en:
          "input already counts the cached tokens, so the input price applies to input - cacheRead - cacheWrite; the cached " +
          "parts at their own price, else the input price; output at the output price; per million tokens; total is the sum; " +
          "undefined prices give undefined.",
      },
      says: ["$0.0044 + unknown (1 answer without a price)", "unknown (1 answer without a price)"],
    },
    {
      id: "18.3",
      title: {
        zh: "思考级别：给模型一个默认级别，调用自己的级别优先（atThinkingLevel）",
        en: "a model at a thinking level; a call's own level wins",
      },
      hint: {
        zh:
          "级别在线上的写法第 5 章已经给你了：OpenAI 兼容服务器上 `off` 不发 `reasoning_effort`（模型上原来设的也去掉），其他级别原名发送；" +
          "Anthropic 上 `off` 不发 `thinking`，其他级别用 `ANTHROPIC_THINKING_BUDGETS`（minimal 1024、low 2048、medium 8192、high 16384 个 token）作为预算，并把 `max_tokens` 加上这个预算。" +
          "提供方只看每次调用的 `StreamOptions.thinking`。你来写 `atThinkingLevel(model, level)`：返回一个新的 `Model`（`provider`、`id` 与原模型相同），" +
          "它的 `stream(context, options)` 用 `{ ...options, thinking: options.thinking ?? level }` 去调原模型——调用自己给了级别就用调用的，没给才用这个默认级别；" +
          "`options` 省略时当作 `{}`。命令行的 `--thinking` 和 `/thinking` 都经过它。",
        en:
          "The wires are given (chapter 05). Write atThinkingLevel(model, level): a Model with the same provider and id whose stream " +
          "calls the inner model with { ...options, thinking: options.thinking ?? level } (options defaults to {}).",
      },
    },
    {
      id: "18.4",
      title: {
        zh: "虚拟模型：先选择，再派发；只在第一个字节之前回退（dispatch）",
        en: "virtual models: route, then dispatch; fall back only before the first byte",
      },
      hint: {
        zh:
          "先调用 `options.route(context, call)`：抛错或一个模型都没选，都以一条错误回答结束（用 `routeFailure`）。" +
          "然后按顺序试：对每个模型 `for await` 它的事件——除了最后一个，都用 `{ ...call, maxRetries: 0 }` 去问（只试一次：限流时立刻换下一个，不先等 `Retry-After` 重试）；如果**第一个**事件就是 `error`、原因是 `error`（不是中止）、`errorDetails.retryable` 为真、" +
          "而且后面还有模型，就记进 `skipped` 换下一个——这时它的任何事件都还没交给调用方。否则就认定这个模型：" +
          "之后每个事件都经 `noted` 转发（终止事件的消息的 diagnostics 会写上回退经过），遇到终止事件时调用 `onRoute({ answeredBy, skipped })` 并结束。" +
          "流开始之后的失败绝不回退：已经流出的内容就是这条回答。",
        en:
          "route() first (a throw or no model ends in an error answer). Then each model in order: a first event that is a " +
          "retryable error (not an abort) with models left → skip it (ask every model but the last with { ...call, maxRetries: 0 }: " +
          "fall back at once, never wait out a Retry-After first); otherwise commit, forward every event through noted, " +
          "and report the route at the terminal event. Never fall back once the answer has started.",
      },
      says: [
        "Virtual model ${options.id}: the route chose no model",
        "Virtual model ${options.id}: the route failed: ${String(error)}   (a route that throws: e.g. the route failed: Error: no config)",
        "noted's texts, e.g. fell back from a to b (a: <why>), fell back from a and b to c (a: <why>; b: <why>)",
        "fell back from claude-sonnet-4-5 to gpt-4o (claude-sonnet-4-5: HTTP 529 unknown: Overloaded)",
      ],
    },
  ],
  wrong: [
    {
      lab: "18.4",
      what: "break it, step 1: dispatch falls back after a stream has started",
      file: "src/model-choice/virtual-model.ts",
      find: '      if (\n        !committed &&\n        event.type === "error" &&',
      replace: '      if (\n        event.type === "error" &&',
      failsWith: "dispatch fell back after the stream had started",
    },
    {
      lab: "18.2",
      what: "break it, step 2: costOf charges the cached tokens at the input price too",
      file: "src/model-choice/cost.ts",
      find: "  const fresh = Math.max(0, usage.input - cacheRead - cacheWrite);",
      replace: "  const fresh = Math.max(0, usage.input);",
      failsWith: "only fresh input (input - cacheRead - cacheWrite) is charged at the input price",
    },
  ],
  breakIt: {
    zh:
      "把 `dispatch` 里“第一个事件”的条件（`!committed &&`）去掉，让流中途的错误也回退，" +
      '再跑 `npx vitest run test/18- -t "Lab 18\\.4\\b"`：哪条回答把已经显示给用户的内容丢掉了？' +
      "再把 `costOf` 里的 `- cacheRead - cacheWrite` 去掉，跑 Lab 18.2 的测试：DeepSeek 那条 339 个输入 token、320 个命中缓存的记录，花费多算了几倍？",
    en:
      "Let dispatch fall back after a stream has started (drop `!committed &&`) and run the Lab 18.4 tests: which answer " +
      "throws away content already shown? Drop the cached tokens' subtraction in costOf and run the Lab 18.2 tests: how " +
      "much is the recorded DeepSeek turn overcharged?",
  },
});
