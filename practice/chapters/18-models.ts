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
      "回退只发生在模型的回答开始之前（它的第一个事件就是可重试的失败：限流、过载、5xx、连接被拒）；一旦回答开始（`start` 事件已经交给调用方），哪怕还没有任何内容、接着来的是过载错误，那也就是这条回答。",
    en:
      "Every answer records the real model that gave it and is priced at that model's price; an unknown price stays " +
      "unknown, never zero; a fallback happens only when a model's first event is a retryable failure (rate limit, " +
      "overload, 5xx, refused connection): once its answer has started (a start event reached the caller), even with no " +
      "content yet and an overload right after, that is the answer.",
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
      "tries them in order, falling back only before an answer starts. The CLI records /model and /thinking in the session.",
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
          "目录（`ModelCatalogue`）已经给你写好：`find`/`resolve(name)` 先精确、再忽略大小写地找（`GPT-4o-Mini` 找到 `gpt-4o-mini`），找不到就用默认值（`known: false`、没有价格、一条提示）。" +
          "你来写用户加模型的入口 `parseModelsFile(text, file)`：" +
          "\n     - 用 `parseJson(text, ModelsFileSchema, { where: file, error: modelsError })` 一步完成解析和形状检查（`src/base/read-json.ts`，第 12 章给出）：" +
          '不是 JSON 就是 `${file} is not JSON (…)`；形状不对是 `${file}: <路径> must be <期望>, got <实际>`（期望写在 schema 的 `expected` 里）；多出的键是 `${file} has an unknown key "<键>"; the keys are models, virtual, providers`。' +
          "\n     - schema 说不了的交给已经写好的检查函数，它们收到 `fail`：`` const fail = (why: string) => modelsError(`${file}: ${why}`) ``——它们的消息只写 `providers.acme needs …`，文件名和 `: ` 由你的 `fail` 加在前面。" +
          '\n     - `models`：先是 `models` 里的每一项经 `checkEntry`（补默认值、去掉 URL 末尾的 `/`；价格可以不写 `source`/`asOf`，没写来源就是 `"yours"`），' +
          "再接上 pi 的写法 `providerModels(value.providers ?? {}, fail)`（模型列在 `providers.<名字>.models` 里）。同一个 id 两处都有时，后面的（providers 下的）胜出：目录按列表顺序加入，后来的替换先来的。" +
          "\n     - `virtual`：原样复制（`{ ...value.virtual }`）。" +
          "\n     - `providers`：`checkProviders(value.providers ?? {}, fail)`（`baseUrl` 与 `apiKeyEnv` 逐项盖过 `providers.ts` 里已知的；目录不认识的提供方必须给 `baseUrl`）。有了它，只写一个目录里的名字（`--model deepseek-chat`）就知道去哪个服务器、读哪个密钥变量。" +
          "\n     - 任何一处不对就整个文件拒绝（`ModelsFileError`，消息以文件名开头），绝不读一半。" +
          "\n     - pi 用户的 models.json（给定的 schema 和检查函数已经会读）：pi 文档里的最小例子每个模型只写 `id`，`contextWindow` 默认 128000、`maxTokens` 默认 16384（与 pi 相同）；" +
          '不写 `cost` 时 pi 当作免费，本课程当作**未知**（本章的不变式：未知价格绝不记成 0；本地的免费模型写 `"cost": { "input": 0, "output": 0 }`）；' +
          '`apiKey` 是变量名（pi 最小例子的 `"ollama"` 就是变量 `$ollama`；密钥本身仍然被拒绝）；' +
          "`headers`（提供方、模型或 override 上）随每个请求发送，值是一个已设置的环境变量名时读那个变量，否则原样发送，`!命令` 被拒绝（课程不执行文件里写的命令）；" +
          "`authHeader: true` 把密钥也放进 `Authorization: Bearer …`；`modelOverrides` 修改该提供方已知的模型（不认识的 id 忽略，与 pi 相同）；" +
          "`compat` 里 `supportsReasoningEffort: false` 让思考级别不发送，`supportsStore`、`maxTokensField`、`supportsDeveloperRole: false`、`supportsUsageInStreaming: true` 本来就是课程的线格式的做法，其余（developer 角色、流里不要 usage、路由偏好）被拒绝并说明原因。",
        en:
          "The catalogue is given (find/resolve: exact, else ignoring case, else defaults with known: false, no price and a notice). " +
          'parseModelsFile: parseJson with ModelsFileSchema; fail = (why) => modelsError(file + ": " + why) for the given checks; ' +
          "models = the file's models through checkEntry, then pi's providers.NAME.models through providerModels (an id in both: the later, under providers, wins); " +
          "virtual copied; providers through checkProviders. Anything wrong refuses the whole file with a ModelsFileError starting with the file. " +
          "pi's files load: only id is needed (128000 / 16384 by default); no cost is an unknown price (pi says zero; the course never invents one); " +
          "headers (a set variable's name is read from it; a !command is refused), authHeader, modelOverrides and compat.supportsReasoningEffort are honoured; " +
          "what the course's wires cannot do is refused with why.",
      },
      says: [
        '${file} has an unknown key "${key}"; the keys are models, virtual, providers',
        "models.json: virtual.solo must be a list of two or more model names, in the order to try them, got an array of 1 item",
        "${file} is not JSON (${the parser's message})",
        "the schema's texts, e.g. models.json: models[0].api must be one of openai-compatible, anthropic, got a string of 4 characters",
        "models.json: models[0].contextWindow must be a whole number of tokens, got a string of 3 characters",
        "models.json: models[0].prices.source must be a non-empty text saying where the price was read, got a string of 0 characters",
        'checkProviders\'s texts, e.g. models.json: providers.acme needs "baseUrl": acme is not a provider the catalogue knows',
        'models.json: providers.groq has an unknown key "token"; the keys are baseUrl, apiKeyEnv, headers, api, apiKey, models, authHeader, modelOverrides, compat',
        "the schema's texts for pi's keys (given), e.g. models.json: providers.lm.compat.openRouterRouting must be left out: the course sends no routing preferences to OpenRouter (name the models to try with a virtual model), got an object",
        "models.json: providers.lm.compat.supportsUsageInStreaming must be true, or left out: the course always asks for usage in the stream (stream_options.include_usage), which an answer's cost needs, got false",
        "models.json: providers.lm.compat.supportsDeveloperRole must be false, or left out: the course always sends the system prompt as a system message, never as a developer one, got true",
        "models.json: providers.lm.headers.x-secret must be a header's value: the name of an environment variable that holds it, or the text itself, never a !command (the course runs no command from a models file: put the value in an environment variable and name it), got a string of 10 characters",
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
          "价格是每百万 token 的美元：" +
          "\n     - `prices` 为 undefined 时返回 undefined（未知就是未知，绝不是 0）。" +
          "\n     - `usage.input` 已经**包含**缓存读写的 token（第 5 章的约定），所以按输入价计的只有 `input - cacheRead - cacheWrite`（缺的字段当 0）。" +
          "\n     - 缓存读按 `cacheRead` 价、缓存写按 `cacheWrite` 价；提供方没有这个价格（字段不存在）时按**输入价**——没有写入价时也不是按读取价。" +
          "\n     - 输出按输出价。" +
          "\n     - `total` 是四项之和。" +
          "\n     - 已经写好的 `catalogued(model, info)` 会在每条最终消息上放 `cost`，`conversationCost` 把一段对话加起来，`formatConversationCost` 把它写成人读的样子。",
        en:
          "undefined prices give undefined; input already counts the cached tokens, so the input price applies to input - cacheRead - cacheWrite; " +
          "each cached part at its own price, else the input price (never the other cache price); output at the output price; " +
          "per million tokens; total is the sum of the four.",
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
          "提供方只看每次调用的 `StreamOptions.thinking`。你来写 `atThinkingLevel(model, level)`，命令行的 `--thinking` 和 `/thinking` 都经过它：" +
          "\n     - 返回一个新的 `Model`，`provider`、`id` 与原模型相同（不改名）。" +
          "\n     - 它的 `stream(context, options)` 用 `{ ...options, thinking: options.thinking ?? level }` 去调原模型：调用的其他选项（`signal`、`maxRetries`）原样传下去——丢了 `signal`，Ctrl-C 就停不下一次 `--thinking` 的运行。" +
          "\n     - 调用自己给了级别就用调用的（`off` 也是一个级别：调用说 `off` 就不思考），没给才用这个默认级别。" +
          "\n     - `options` 省略时当作 `{}`。" +
          "\n     - 和 pi 的两处不同：pi 还有 `xhigh`，但只有少数 OpenAI 模型接受它、Anthropic 上没有对应的预算，本课程的级别只取两种线格式都有的五个（`--thinking xhigh` 被拒绝并列出这五个）；" +
          "\n     - pi 加上思考预算时把 `max_tokens` 封顶在模型的最大输出，本课程第 5 章的线格式不知道模型的最大输出，不封顶——命令行最多请求 8192 + 16384 = 24576 个 token，目录里每个会推理的 Anthropic 模型的最大输出（至少 32000）都放得下；你自己的模型若更小，服务器会以 HTTP 400 拒绝并说明。",
        en:
          "The wires are given (chapter 05). Write atThinkingLevel(model, level): a Model with the same provider and id whose stream " +
          "calls the inner model with { ...options, thinking: options.thinking ?? level } (options defaults to {}): every other option " +
          "(signal!) passes on, and a call's own level, off included, wins. Unlike pi: no xhigh (few OpenAI models take it, Anthropic has no budget for it), " +
          "and max_tokens is not capped at the model's maximum when a budget is added (chapter 05's wire does not know it; 8192 + 16384 fits every reasoning Anthropic model of the catalogue).",
      },
    },
    {
      id: "18.4",
      title: {
        zh: "虚拟模型：先选择，再派发；只在回答开始之前回退（dispatch）",
        en: "virtual models: route, then dispatch; fall back only before an answer starts",
      },
      hint: {
        zh:
          "选择，再派发：" +
          "\n     - 先调用 `options.route(context, call)`（就用调用方给的 `call`，不是 `{}`）：抛错或一个模型都没选，都以一条错误回答结束（用 `routeFailure`）。" +
          "\n     - 然后按顺序试：对每个模型 `for await` 它的事件；除了最后一个，都用 `{ ...call, maxRetries: 0 }` 去问（只试一次：限流时立刻换下一个，不先等 `Retry-After` 重试），最后一个用 `call` 本身，保留它自己的重试。" +
          '\n     - 如果这个模型的**第一个**事件就是 `error`、原因是 `error`（不是中止）、`errorDetails.retryable` 为真、而且后面还有模型：把 `{ model, error: event.error.errorMessage ?? "failed" }` 记进 `skipped`，换下一个——这时它的任何事件都还没交给调用方。' +
          "\n     - 否则就认定这个模型：之后每个事件都经 `noted` 转发（终止事件的消息的 diagnostics 会写上回退经过），遇到终止事件时调用 `onRoute({ answeredBy, skipped })` 并结束。" +
          "\n     - 回答开始之后（`start` 已经转发）绝不回退，哪怕还没有任何内容、接着来的是可重试的错误（Anthropic 在 `message_start` 之后发来的 `overloaded_error`）：那就是这条回答。",
        en:
          "route(context, call) first, with the call's own options (a throw or no model ends in an error answer). Then each model in order, every one but the last " +
          "asked with { ...call, maxRetries: 0 }: a FIRST event that is a retryable error (not an abort) with models left → skip it, recording " +
          '{ model, error: errorMessage ?? "failed" }; otherwise commit, forward every event through noted, and report the route at the terminal event. ' +
          "Never fall back once a start has been forwarded, even if an overload follows before any content.",
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
      lab: "18.1",
      what: "order: pi's models (under providers) first, so the file's own models win an id in both",
      file: "src/model-choice/models-file.ts",
      find: "    models: [...(value.models ?? []).map(checkEntry), ...providerModels(value.providers ?? {}, fail)],",
      replace: "    models: [...providerModels(value.providers ?? {}, fail), ...(value.models ?? []).map(checkEntry)],",
      failsWith: "models lists the file's models first, then those under providers",
    },
    {
      lab: "18.1",
      what: "errors mis-worded: fail does not put the file's name in front",
      file: "src/model-choice/models-file.ts",
      find: "  const fail = (why: string) => modelsError(`${file}: ${why}`);",
      replace: "  const fail = (why: string) => modelsError(why);",
      failsWith: 'models.json: providers.acme needs "baseUrl"',
    },
    {
      lab: "18.1",
      what: "first item where all were meant: pi's models under providers are dropped",
      file: "src/model-choice/models-file.ts",
      find: "    models: [...(value.models ?? []).map(checkEntry), ...providerModels(value.providers ?? {}, fail)],",
      replace: "    models: (value.models ?? []).map(checkEntry),",
      failsWith: "pi's shape: the models under providers.NAME.models are models of the file too",
    },
    {
      lab: "18.1",
      what: "given code the lab relies on: the catalogue finds a name only exactly, never ignoring case",
      file: "src/model-choice/catalogue.ts",
      find: "    return this.byId.get(id) ?? this.byLowerId.get(id.toLowerCase());",
      replace: "    return this.byId.get(id);",
      failsWith: "resolve and find match a name exactly, else ignoring case",
    },
    {
      lab: "18.2",
      what: "a cache write with no write price charged at the cache-read price",
      file: "src/model-choice/cost.ts",
      find: "    cacheWrite: cacheWrite * perToken(prices.cacheWrite ?? prices.input),",
      replace: "    cacheWrite: cacheWrite * perToken(prices.cacheWrite ?? prices.cacheRead ?? prices.input),",
      failsWith: "a cache write with no cache-write price is priced as input",
    },
    {
      lab: "18.2",
      what: "an unknown price recorded as zero",
      file: "src/model-choice/cost.ts",
      find: "  if (prices === undefined) return undefined;",
      replace: "  if (prices === undefined) return { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 };",
      failsWith: "an unknown price is no cost at all (undefined), never a zero",
    },
    {
      lab: "18.2",
      what: "the total forgets the cache writes",
      file: "src/model-choice/cost.ts",
      find: "  return { ...cost, total: cost.input + cost.output + cost.cacheRead + cost.cacheWrite };",
      replace: "  return { ...cost, total: cost.input + cost.output + cost.cacheRead };",
      failsWith: "total is the sum of the four parts",
    },
    {
      lab: "18.3",
      what: "dropped option: only the thinking level reaches the model (the caller's signal is lost)",
      file: "src/model-choice/catalogued-model.ts",
      find: "    stream: (context, options = {}) => model.stream(context, { ...options, thinking: options.thinking ?? level }),",
      replace: "    stream: (context, options = {}) => model.stream(context, { thinking: options.thinking ?? level }),",
      failsWith: "atThinkingLevel passes every option of the call on",
    },
    {
      lab: "18.3",
      what: "a default that wins over the caller: a call's own off is replaced by the model's level",
      file: "src/model-choice/catalogued-model.ts",
      find: "    stream: (context, options = {}) => model.stream(context, { ...options, thinking: options.thinking ?? level }),",
      replace:
        "    stream: (context, options = {}) =>\n" +
        '      model.stream(context, { ...options, thinking: options.thinking && options.thinking !== "off" ? options.thinking : level }),',
      failsWith: "a call's own thinking: off wins over the model's default level",
    },
    {
      lab: "18.3",
      what: "identity: the wrapper renames the model after its level",
      file: "src/model-choice/catalogued-model.ts",
      find: "  return {\n    provider: model.provider,\n    id: model.id,\n    stream: (context, options = {}) =>",
      replace:
        "  return {\n    provider: model.provider,\n    id: `${model.id}@${level}`,\n    stream: (context, options = {}) =>",
      failsWith: "atThinkingLevel keeps the model's provider and id",
    },
    {
      lab: "18.4",
      what: "the fallback skips a model that sent start, then a retryable error with no content (commits only on content)",
      file: "src/model-choice/virtual-model.ts",
      find: "      committed = true;\n",
      replace: '      committed ||= event.type !== "start";\n',
      failsWith: "dispatch skipped a model whose answer had started",
    },
    {
      lab: "18.4",
      what: "dropped option: the route is asked with {} instead of the call's options",
      file: "src/model-choice/virtual-model.ts",
      find: "    models = options.route(context, call);",
      replace: "    models = options.route(context, {});",
      failsWith: "the route is called with the call's options",
    },
    {
      lab: "18.4",
      what: "cap applied one too far: the last model is asked with maxRetries 0 too",
      file: "src/model-choice/virtual-model.ts",
      find: "model.stream(context, last ? call : { ...call, maxRetries: 0 })",
      replace: "model.stream(context, { ...call, maxRetries: 0 })",
      failsWith: "every model but the last is asked with maxRetries: 0",
    },
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
