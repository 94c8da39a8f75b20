import { defineChapter } from "../catalogue.js";

const FIXTURES = [
  "SOURCES.md",
  "alibaba-qwen-tool-call.chunks.txt",
  "anthropic-openai-compat-tool-call-index-1.sse",
  "azure-openai-model-router-prompt-filter.chunks.txt",
  "deepseek-chat-finish-length.chunks.txt",
  "deepseek-reasoner-reasoning-content.chunks.txt",
  "deepseek-reasoner-reasoning-then-tool-call.chunks.txt",
  "groq-gpt-oss-reasoning-then-error-event.sse",
  "groq-gpt-oss-reasoning-then-tool-call-x-groq-usage.sse",
  "groq-tool-call-single-chunk.chunks.txt",
  "openai-gpt-4.1-nano-text-300-chunks.chunks.txt",
  "openai-gpt-4o-finish-length.sse",
  "openai-gpt-4o-parallel-tool-calls-empty-args.sse",
  "openai-gpt-4o-parallel-tool-calls.sse",
  "openai-gpt-4o-refusal-deltas.sse",
  "openai-gpt-4o-single-tool-call-54-arg-chunks.sse",
  "openai-gpt-4o-text-with-usage.sse",
  "openrouter-minimax-length-then-error-chunk.sse",
  "openrouter-reasoning-with-sse-comments.sse",
  "xai-grok-3-mini-reasoning-then-tool-call.chunks.txt",
  "zai-glm-reasoning-content.sse",
].map((name) => `test/fixtures/openai-chat/${name}`);

const ANTHROPIC_FIXTURES = [
  "SOURCES.md",
  "anthropic-redacted-thinking.sse",
  "anthropic-stop-max-tokens.sse",
  "anthropic-text-then-parallel-tool-use.sse",
  "anthropic-text-then-tool-use-no-args.chunks.txt",
  "anthropic-text.sse",
  "anthropic-thinking-then-text.sse",
  "anthropic-thinking-then-tool-use.sse",
  "anthropic-tool-use-109-input-json-deltas.sse",
  "anthropic-web-search-server-tool-citations.sse",
].map((name) => `test/fixtures/anthropic/${name}`);

export default defineChapter({
  id: "05",
  slug: "openai-provider",
  title: {
    zh: "真正的模型：OpenAI 兼容的 Chat Completions 适配器",
    en: "Provider adapter: OpenAI-compatible Chat Completions",
  },
  invariant: {
    zh:
      "无论字节流怎样被切碎，每一份录制的真实流都还原成同一条规范消息；每一种失败（HTTP 错误、连接被拒、中途断开、坏的 chunk、中止）" +
      "都以一个保留已收到内容的 error 事件结束，从不抛出，API key 不出现在任何输出里；工具参数的部分值在线性总时间内随时可读。",
    en:
      "However the bytes are chunked, every recorded stream becomes the same canonical message; every failure ends in one " +
      "error event that keeps the partial content, never a throw, and never shows the API key; partial tool arguments are " +
      "readable at any time, in linear total work.",
  },
  adds: {
    zh:
      "第一个连接真实服务器的 `Model`：`createOpenAICompatibleModel({ baseUrl, model, apiKey })` 用 `fetch` 向 " +
      "`{baseUrl}/chat/completions` 发送流式请求（OpenAI、DeepSeek、Groq、OpenRouter、llama.cpp、Ollama、vLLM 都说这种协议）。" +
      "它分四层：`models/http/sse.ts` 把任意切分的字节流读成 SSE 帧（行被切断、UTF-8 字符被切断、CRLF、注释、`event: error`）；" +
      "`models/http/partial-json.ts` 是增量 JSON 解析器：工具参数每来 4 个字符就能读出当前的部分值，总工作量与参数长度成线性" +
      "（每次都从头重新解析的做法是平方级的：128 KB 要一分钟）；`models/openai/openai-wire.ts` 把规范 `Context` 翻译成请求体（纯函数，不改动输入）；" +
      "`models/openai/openai-inbound.ts` 把 chunk 翻译成模型事件：文本、推理（`reasoning_content` / `reasoning` → thinking）、" +
      "按 wire `index` 分开的工具调用片段、finish_reason 与 usage 的映射。网络这一层是现成的（不是 lab，之后的 Anthropic 适配器原样复用）：" +
      "`models/http/http-transport.ts` 在收到第一个字节之前重试 429/5xx/连接被拒（遵守 `Retry-After`），`models/http/request-deadline.ts` 管 `timeoutMs` 和空闲看门狗 " +
      "`idleTimeoutMs`（只发 keep-alive 注释的服务器也算卡住），`models/http/response-limits.ts` 限制解压后的字节数、内容块数和工具调用数，" +
      "`models/http/request-failure.ts` 把失败写成 `errorDetails`（kind、status、code、retryAfterMs、retryable、attempts：这一轮发了几次请求）。调用的思考级别（`StreamOptions.thinking`：off、minimal、low、medium、high）在线上的写法也是现成的：" +
      "`models/openai/openai-thinking.ts` 写成 `reasoning_effort`（off 不发），`models/anthropic/anthropic-thinking.ts` 写成带 token 预算的 `thinking` 并相应调高 `max_tokens`。测试在 127.0.0.1 上起一个真正的 HTTP 服务器，" +
      "把 OpenAI、DeepSeek、xAI、Groq、OpenRouter、Azure、Qwen、Z.ai 的真实录制流随机切碎后回放，再注入各种故障。",
    en:
      "The first Model that talks to a real server: createOpenAICompatibleModel over fetch, in four layers: an SSE reader " +
      "robust to any chunking, an incremental partial-JSON parser for streaming tool arguments (linear total work), pure " +
      "outbound translation, and inbound translation of chunks into model events. Tested over real HTTP on 127.0.0.1 by " +
      "replaying recorded provider streams in random pieces, plus injected faults. The network layer is given (not a lab; the " +
      "Anthropic adapter reuses it): retries before the first byte, timeoutMs and an idle watchdog, size bounds, redirect " +
      "policy, structured errorDetails, and a call's thinking level on each wire (reasoning_effort; a thinking budget).",
  },
  files: [
    "src/base/errors.ts",
    "src/base/timer.ts",
    "src/models/http/request-failure.ts",
    "src/models/http/retry-policy.ts",
    "src/models/http/request-deadline.ts",
    "src/models/http/response-limits.ts",
    "src/models/http/outbound.ts",
    "src/models/http/http-transport.ts",
    "src/models/http/sse.ts",
    "src/models/http/partial-json.ts",
    "src/models/http/growing-text.ts",
    "src/models/http/image-content.ts",
    "src/models/openai/openai-wire.ts",
    "src/models/http/frame-template.ts",
    "src/models/http/provider-turn.ts",
    "src/models/http/provider-model.ts",
    "src/models/openai/openai-inbound.ts",
    "src/models/openai/openai-compatible.ts",
    "src/models/openai/openai-options.ts",
    "src/models/openai/openai-thinking.ts",
    "src/models/anthropic/anthropic-wire.ts",
    "src/models/anthropic/anthropic-thinking.ts",
    "src/models/anthropic/anthropic-inbound.ts",
    "src/models/anthropic/anthropic.ts",
    "test/05-anthropic-provider.test.ts",
    "test/05-images.test.ts",
    ...FIXTURES,
    ...ANTHROPIC_FIXTURES,
  ],
  labs: [
    {
      id: "5.1",
      title: { zh: "SSE 读取器：任意切分都正确", en: "SSE reader, correct under any chunking" },
      hint: {
        zh: [
          "1. UTF-8 用 `TextDecoder` 的 `{ stream: true }` 解码，跨块的多字节字符才不会变成乱码",
          "2. 行可能在 `\\r` 与 `\\n` 之间被切开",
          "3. 未结束的行先存成片段，行结束时再拼一次（每次都把缓冲区整个拼起来会变成平方级）。",
          "4. 空行结束一帧",
          "5. `:` 开头是注释。",
          "6. `id:` 和 `retry:`（只认一串数字，毫秒）记到这一帧的 `id`、`retry` 上（第 17 章的 MCP 客户端靠它们续上断开的流）。",
        ].join("\n"),
        en: [
          "1. Decode with TextDecoder({stream: true})",
          "2. a CRLF may be split between reads",
          "3. keep an unfinished line as pieces and join once when it ends.",
          "4. A blank line ends a frame",
          "5. lines starting with ':' are comments",
          "6. id: and retry: (digits only) go on the frame.",
        ].join("\n"),
      },
    },
    {
      id: "5.2",
      title: { zh: "增量 JSON 解析器与一次严格解析", en: "Incremental partial JSON, then one strict parse" },
      hint: {
        zh:
          "每个字符只看一次：用一个栈记住打开的对象/数组以及它们在等什么（key、冒号、值、逗号）。值是“活的视图”：在原地构建，" +
          "字符串变长时只把新字符串重新放回它的位置。转义（`\\n`、`\\u00e9`）完整之后才显示。结束时 `parseToolArguments` 只做一次 " +
          "`JSON.parse`：不是对象就给出一条模型能读懂、能据此改正的错误。",
        en:
          "Read each character once, with a stack of open containers and what each expects next; build the value in place. " +
          "Show an escape once complete. At the end, one strict JSON.parse; anything but an object is an error the model can read.",
      },
      says: [
        "The tool call was not run: its arguments are not valid JSON (${reason}). Send the call again with the arguments as one complete JSON object.   (parseToolArguments: reason is JSON.parse's message; arguments are then {})",
        "The tool call was not run: its arguments must be a JSON object, got ${kind}. Send the call again with the arguments as one JSON object.   (e.g. … got an array. … / got null. / got number. / got string. / got boolean.; empty or blank text is {} with no error)",
      ],
    },
    {
      id: "5.3",
      says: [
        "context.messages[1] (toolResult) holds an image, and this model takes no images …   (a tool result's image counts too)",
        "extraBody.${key} would replace a field the adapter sets itself; use the adapter's own option for it (e.g. maxTokens for max_tokens), or leave it out.   (toChatCompletionsRequest, given: a field the body already has, e.g. extraBody.max_tokens would replace a field the adapter sets itself when maxTokens is set)",
        'context.messages[${i}] (${role}) holds an image, and this model takes no images (its options say input: ["text"]). Remove the image from the context (or describe it in text), or use a model that takes images and add "image" to input.   (checkImage, given)',
        "[1 image of this result: in the next user message] / [2 images of this result: in the next user message]   (the text of a tool message whose result held images, after the result's own text and a newline when it has any)",
        'createOpenAICompatibleModel: input lists what the model takes: ["text"] or ["text", "image"], got ${JSON.stringify(input)}',
        "context.messages[${i}] (${role}) holds an image, and this model takes no images (its options say input: ${JSON.stringify(input)}). …",
        "${who}: extraBody.${key} would replace a field the adapter sets itself; leave it out.   (checkRequestOptions, given: model, messages, stream, stream_options, tools)",
      ],
      title: { zh: "出站翻译：Context → 请求体", en: "Outbound: Context → request body" },
      hint: {
        zh: [
          "1. 纯函数，不改动输入、不与输入共享可变对象。",
          "2. 系统提示放在最前",
          "3. 工具调用参数用 `JSON.stringify(arguments)`",
          "4. error/aborted 的助手消息和只有 thinking 的消息不发送",
          "5. `stream_options.include_usage` 让服务器在末尾报告 usage。",
          "6. 图片先过 `checkImage`（模型不收图片、mimeType 不对、data 不是 base64 都直接抛出，请求根本不会发出），再变成带 `data:` URL 的 `image_url`",
          "7. tool 消息只能带文本，所以工具结果里的图片放进紧跟在这一串 tool 消息之后的一条 user 消息。",
        ].join("\n"),
        en: [
          "1. Pure and non-mutating.",
          "2. System prompt first",
          "3. tool-call arguments as JSON.stringify(arguments)",
          "4. error/aborted and thinking-only assistant messages are left out",
          "5. ask for usage with stream_options.",
          "6. Images pass checkImage, then go out as image_url data URLs",
          "7. a tool message carries text only, so a result's images follow the run of tool messages.",
        ].join("\n"),
      },
    },
    {
      id: "5.4",
      says: [
        "The stream ended before the model finished (no finish_reason was sent).",
        'The provider ended the turn with finish_reason "${reason}".',
        "The server sent a chunk that is not a JSON object.   (what ChatCompletionsTurn.chunk returns for null, a number or a string)",
      ],
      title: { zh: "入站翻译：chunk → 模型事件", en: "Inbound: chunks → model events" },
      hint: {
        zh: [
          "1. 工具调用片段按 wire `index` 分开（index 可能交错、可能从 1 开始），第一次出现时决定它在 content 里的位置",
          '2. 后来的 `"id": ""` 不能覆盖真正的 id。',
          "3. `finish_reason` 先记下来，等到 `[DONE]` 或流结束再收尾（usage 和错误可能在它之后到达）。",
          "4. `length` 时保留 `rawArguments`、不发 `toolcall_end`。",
          "5. 发事件的部分是现成的（`ProviderTurn`：`pushText`、`pushThinking`、`pushArguments`、`endToolCall`、`fail`、`done`），你只写映射。",
          "6. chunk 对象会被下一帧重用（见 5.5 的 `turn.frames.parse`）：只从里面取字符串和数字，不要保留或修改其中的对象。",
        ].join("\n"),
        en: [
          "1. Keep tool-call fragments apart by wire index, placed at first appearance",
          "2. an empty id never overwrites a real one.",
          "3. Remember finish_reason and end at [DONE] or end of body",
          "4. with length, keep rawArguments and emit no toolcall_end.",
          "5. The events themselves are given (ProviderTurn: pushText, pushArguments, endToolCall…); you write the mapping.",
          "6. A chunk object is reused for the next frame: take strings and numbers from it, never keep or change its objects.",
        ].join("\n"),
      },
    },
    {
      id: "5.5",
      says: [
        'HTTP 401 Unauthorized: Incorrect API key provided: [redacted]. (code invalid_api_key)   (an OpenAI error body: its message, then " (code …)")',
        "HTTP 404 Not Found: (empty body)",
        "idleTimeoutMs must be a number ≥ 1 (or Infinity), got 0 / maxRetries must be a number ≥ 0, got -1 / timeoutMs must be a number ≥ 1, got NaN / maxResponseBytes must be a number ≥ 1, got Infinity",
        "The request timed out: timeoutMs (2500 ms) ran out mid-stream.",
        'HTTP ${status} ${statusText}: ${body}   (statusText is Node\'s: 400 Bad Request, 401 Unauthorized, 404 Not Found, 429 Too Many Requests, 500 Internal Server Error, 503 Service Unavailable; an empty body is "(empty body)"; an OpenAI error body gives "${error.message} (code ${error.code})"; secrets become [redacted])',
        "${message} (gave up after ${attempts} attempts)   (the last retryable failure, once the retries are spent)",
        "Request to ${baseUrl}/chat/completions failed: ${cause}   (openEventStream, given: a refused connection's cause names ECONNREFUSED)",
        "HTTP 503 Service Unavailable: {} (gave up after 3 attempts)   (three 503s with the body {}, maxRetries 2: errorDetails.attempts is 3)",
        "The request could not be built: context.messages[${i}] (${role}) holds an image, and this model takes no images …",
        "The request could not be built: context.messages[${i}] (${role}) holds an image whose data is not base64 (got …): …",
        "Request was aborted before it was sent. / Request was aborted while waiting for the server. / Request was aborted mid-stream. / Request was aborted while waiting to retry.",
        "The request timed out: timeoutMs (${timeoutMs} ms) ran out while waiting for the server.   (or: ran out mid-stream.)",
        "The server stalled: no response headers arrived for ${idle} ms (idleTimeoutMs).   (or: the error response stopped arriving for …)",
        "${who}: ${name} must be a number ≥ ${min} (or Infinity), got ${String(value)}   (idleTimeoutMs ≥ 1 or Infinity, maxRetries ≥ 0, timeoutMs ≥ 1, maxResponseBytes ≥ 1)",
        "The stream ended before the model finished (no finish_reason was sent).",
        'The server sent a malformed chunk: ${data}   (readJsonFrame with noun "chunk"; and: The server sent a chunk this adapter cannot read (${cause}): ${data})',
      ],
      title: { zh: "基于 fetch 的 Model：失败都是事件", en: "The Model over fetch: failures are events" },
      hint: {
        zh: [
          "这个循环写在 `ProviderModel.run` 里，所有适配器共用。要做到：",
          "1. `stream()` 立即返回；所有工作在一个 async 函数里完成，每条失败路径都推送 error 事件：中止（请求前、等响应头时、流中途）是 `aborted`，其余是 `error`，并保留已收到的内容。HTTP 错误要读出响应体里服务商的错误信息。",
          "2. 任何错误文本离开适配器之前都要把 API key 替换掉——连 `fetch` 自己的错误信息都可能引用请求头；先替换再截断，否则横跨截断点的 key 会露出一半。",
          "3. 发送、重试、超时交给 `openEventStream`（传给它的是区域上方已算好的 `transport`：这次请求的重试预算）。",
          "4. 建好 turn 就设 `turn.beforeEnd = () => http.close()`：终止事件（done 或 error）推送之前先关掉 deadline（计时器和调用方 signal 上的监听），读者看到终止事件时什么都不剩。只在 `finally` 里关不够：`for await` 里的 `return` 要等读者跑过之后才到 `finally`。",
          "5. 你负责读帧：一批帧里有带内容的帧（`turn.progressMark` 变了）才调用一次 `progress()`（保活帧不算进度）。",
          "6. 一批读完后若读者还没取走这批事件（`stream.buffered > 0`，服务器比读者快），先 `await setImmediate()`（`node:timers/promises`）让读者赶上再读下一批，否则整段回答都会堆在流里。",
          "7. 每个 chunk 之后检查 `TurnLimits`，读流出错时用 `failure(error)` 区分中止、超时、卡住、超限和断线。",
          "8. `OpenAICompatibleModel.readFrame` 只读一帧：`event: error`、`[DONE]`、或者 JSON chunk：交给 `this.readJsonFrame(turn, frame, CHUNKS)`（现成的，Anthropic 适配器也用它；解析失败、读不懂、服务商报错都由它变成失败），`CHUNKS` 用 `ChatCompletionsTurn.chunk` 应用每个 chunk。" +
            "解析 chunk 用 `turn.frames.parse`：结果与 `JSON.parse` 完全相同，但重复的 delta chunk 不再整段解析，返回的对象会在下一帧被重用（`models/http/frame-template.ts`，现成的）。",
          "9. 每条消息都说出这一轮发了几次 HTTP 请求：建 turn 时把 `http.attempts` 放进 meta（`{ ...this.meta(), attempts: http.attempts }`），" +
            "消息就带上 `attempts`（第一次就成功是 1，重试 n-1 次后是 n），失败时 `errorDetails.attempts` 是同一个数；" +
            "`openEventStream` 返回的失败自己带着 `attempts`（请求前就中止、请求体建不出来是 0）。",
        ].join("\n"),
        en: [
          "The loop is ProviderModel.run, shared by every adapter. It must:",
          "1. return from stream() at once; every failure path pushes an error event (only the caller's abort is 'aborted'; partial content kept); an HTTP error reads the provider's message from the body.",
          "2. redact the API key from every error text first, then clip.",
          "3. send and retry through openEventStream (give it the `transport` computed above the region: this request's retry budget).",
          "4. set turn.beforeEnd = () => http.close() once the turn is made: the deadline (timers, the listener on the caller's signal) is closed before the terminal event is pushed; a `finally` alone is too late, since a `return` inside `for await` reaches it after the reader has run.",
          "5. call progress() once per batch whose frames carried content (turn.progressMark changed).",
          "6. after a batch the reader has not taken yet (stream.buffered > 0: a server faster than its reader), await setImmediate() (node:timers/promises) before reading on, or the whole answer piles up in the stream.",
          "7. check TurnLimits after each chunk; failure(error) tells abort, timeout, stall, limit and reset apart.",
          "8. OpenAICompatibleModel.readFrame reads one frame (a JSON chunk goes to this.readJsonFrame(turn, frame, CHUNKS), given, shared with the Anthropic adapter; CHUNKS parses it with turn.frames.parse: what JSON.parse gives, without re-parsing the repeated delta chunks).",
          "9. make the turn with { ...this.meta(), attempts: http.attempts }: the message carries attempts (1 when the first request was answered, n after n-1 retries), errorDetails.attempts the same on a failure; a failure from openEventStream carries its own (0 when nothing was sent).",
        ].join("\n"),
      },
    },
    {
      id: "5.6",
      says: [
        "… holds an image whose mimeType is not an image media type (got nothing): …   (no mimeType at all)",
        'createAnthropicModel: input lists what the model takes: ["text"] or ["text", "image"], got …',
        "The request could not be built: context.messages[${i}] (${role}) holds an image, and this model takes no images …",
        '… holds an image whose mimeType is not an image media type (got ${JSON.stringify(mimeType) ?? "nothing"}): …',
        "The stream ended before the model finished (no stop_reason was sent).",
        'The model refused to go on (stop_reason "refusal"): ${explanation}   (the stop_details.explanation of a message_delta; without one: The model refused to go on (stop_reason "refusal").)',
        'The provider ended the turn with stop_reason "${reason}".   (a stop reason this adapter does not know)',
        "The server sent an event that is not a JSON object.   (what AnthropicTurn.event returns for null, a number or a string)",
        'The server sent a malformed event: ${data}   (readJsonFrame with noun "event"; and: The server sent an event this adapter cannot read (${cause}): ${data})',
        "${who}: maxTokens is required by the Messages API: a positive integer, e.g. 4096.",
        "${who}: thinking.budgetTokens must be an integer ≥ 1024 and below maxTokens (${maxTokens}).",
        "HTTP ${status} ${statusText}: ${type}: ${message}   (an Anthropic error body, e.g. invalid_request_error: max_tokens: too large (key [redacted]); secrets become [redacted])",
      ],
      uses: ["5.1", "5.5"],
      title: {
        zh: "第二个服务商：Anthropic Messages（扩展实验）",
        en: "A second provider: Anthropic Messages (extension lab)",
      },
      hint: {
        zh: [
          "同一个 `Model` 契约，换一种线路格式。",
          "1. 出站（`toAnthropicMessages`）：系统提示不在消息里",
          "2. Anthropic 没有 tool 角色，工具结果是 user 消息里的 `tool_result` 块，连续的结果和紧随其后的用户消息合并成一条 user 消息（结果在前），角色才会交替",
          "3. error/aborted 的助手消息不发送",
          "4. 图片（同样先过 `checkImage`）是 base64 来源的 `image` 块，user 消息和 `tool_result` 里都可以有。",
          "5. 入站（`AnthropicTurn.event`/`finish`）：按 wire `index` 跟踪块（`open`、`delta` 已经写好）",
          "6. `message_start` 和 `message_delta` 带来 usage（后者是累计值，只覆盖出现的字段），`message_delta` 带来 stop_reason，`error` 事件返回服务商的错误信息，`ping` 忽略，未知事件记一条诊断",
          "7. `finish` 按 stop_reason 收尾：`tool_use` → 每个调用严格解析一次并发 `toolcall_end`，`max_tokens` → `length`（不发 `toolcall_end`），`refusal` → error，没有 stop_reason → error。",
          "8. `createAnthropicModel` 先检查参数（`maxTokens` 必填），再交给已经写好的 `AnthropicModel`。",
          "9. 和 chunk 一样，事件对象会被下一帧重用：只取字符串和数字。",
          "10. 为什么是第 05 章的扩展实验而不是新的一章：SSE 读取器、增量 JSON 解析器和传输层都可以原样复用，只有线路格式不同。",
        ].join("\n"),
        en: [
          "Same Model contract, another wire.",
          "1. Outbound: no system message, tool results as tool_result blocks in one merged user message, failed turns left out, images as base64 image blocks (in tool_result content too).",
          "2. Inbound: blocks by wire index, cumulative usage, stop_reason mapped at the end (tool_use, max_tokens → length, refusal → error).",
          "3. Events are reused like chunks: keep strings, not objects.",
          "4. An extension lab: the SSE reader, parser and transport are reused.",
        ].join("\n"),
      },
    },
  ],
  wrong: [
    {
      lab: "5.4",
      what: "break it, step 1: ChatCompletionsTurn.toolCall parses the whole rawArguments again on every delta",
      file: "src/models/openai/openai-inbound.ts",
      find: "    this.pushArguments(block, call.contentIndex, call.parser, delta);",
      replace:
        "    call.parser = new PartialJsonParser();\n" +
        '    call.parser.push(block.rawArguments ?? "");\n' +
        "    this.pushArguments(block, call.contentIndex, call.parser, delta);",
      failsWith: "parsed again from the start",
    },
    {
      lab: "5.1",
      what: "break it, step 2: readSseBatches decodes each read without TextDecoder's { stream: true }",
      file: "src/models/http/sse.ts",
      find: "sse.push(decoder.decode(value, { stream: true }))",
      replace: "sse.push(decoder.decode(value))",
      failsWith: "\uFFFD",
    },
    {
      lab: "5.1",
      what: "the unfinished line joined to each new piece and scanned again (quadratic in a long line)",
      file: "src/models/http/sse.ts",
      find: '    if (text === "") return out;\n    let start = 0;',
      replace:
        '    if (text === "") return out;\n    text = this.lineParts.join("") + text;\n    this.lineParts = [];\n    let start = 0;',
      failsWith: "quadratic",
    },
    {
      lab: "5.1",
      what: "a blank line ends a frame even when it has no data",
      file: "src/models/http/sse.ts",
      find: "      if (this.dataLines.length > 0) {",
      replace: "      {",
      failsWith: "expected",
    },
    {
      lab: "5.1",
      what: "the id is not cleared after its frame",
      file: "src/models/http/sse.ts",
      find: "      this.id = undefined;\n",
      replace: "",
      failsWith: "expected",
    },
    {
      lab: "5.2",
      what: "the open string read back whole after each piece (endsWith flattens it: quadratic)",
      file: "src/models/http/partial-json.ts",
      find: "    this.addText(run === 0 ? piece : decoded + piece.slice(run)); // run === 0: all plain, no copy",
      replace:
        "    this.addText(run === 0 ? piece : decoded + piece.slice(run));\n" +
        '    if (this.text.endsWith("\\\\")) this.escape = "";',
      failsWith: "quadratic",
    },
    {
      lab: "5.2",
      what: "parseToolArguments takes an array as arguments",
      file: "src/models/http/partial-json.ts",
      find: '  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {',
      replace: '  if (typeof parsed !== "object" || parsed === null) {',
      failsWith: "must be a JSON object, got an array",
    },
    {
      lab: "5.2",
      what: "parseToolArguments parses empty text (an error instead of {})",
      file: "src/models/http/partial-json.ts",
      find: '  if (raw.trim() === "") return { arguments: {} };\n',
      replace: "",
      failsWith: "not valid JSON",
    },
    {
      lab: "5.3",
      what: "a failed (error) assistant turn is sent back to the server",
      file: "src/models/openai/openai-wire.ts",
      find: '  if (message.stopReason === "error" || message.stopReason === "aborted") return undefined;',
      replace: '  if (message.stopReason === "aborted") return undefined;',
      failsWith: "expected",
    },
    {
      lab: "5.3",
      what: "a tool result's images dropped without the note in its tool message",
      file: "src/models/openai/openai-wire.ts",
      find: "      if (images > 0)\n",
      replace: "      if (images < 0)\n",
      failsWith: "of this result: in the next user message",
    },
    {
      lab: "5.3",
      what: "a tool result's images sent after every tool message, not once after the run",
      file: "src/models/openai/openai-wire.ts",
      find: '    if (message.role !== "toolResult" && images.length > 0) {',
      replace: "    if (images.length > 0) {",
      failsWith: "expected",
    },
    {
      lab: "5.4",
      what: "stop with tool calls ends done(stop)",
      file: "src/models/openai/openai-inbound.ts",
      find: '    if (reason === "tool_calls" || (reason === "stop" && this.calls.size > 0)) {',
      replace: '    if (reason === "tool_calls") {',
      failsWith: "toolUse",
    },
    {
      lab: "5.4",
      what: "no diagnostic when the server sent no usage",
      file: "src/models/openai/openai-inbound.ts",
      find: "    if (!this.sawUsage) this.diagnose(NO_USAGE_DIAGNOSTIC);\n",
      replace: "",
      failsWith: "The server sent no usage",
    },
    {
      lab: "5.4",
      what: "an unknown finish reason's error without its code",
      file: "src/models/openai/openai-inbound.ts",
      find: "      code: reason,\n",
      replace: "",
      failsWith: "code",
    },
    {
      lab: "5.5",
      what: "the per-call maxRetries ignored (the model's own budget sent)",
      file: "src/models/http/provider-model.ts",
      find: "    const opened = await openEventStream(request, transport);",
      replace: "    const opened = await openEventStream(request, this.transport);",
      failsWith: "must replace the model's 2",
    },
    {
      lab: "5.5",
      what: "the deadline closed in the finally only: a turn that fails inside the for await is seen by its reader before the timers and the listener go",
      file: "src/models/http/provider-model.ts",
      find: "    turn.beforeEnd = () => http.close();\n",
      replace: "",
      failsWith: "listeners on the caller's signal when the reader sees the terminal event",
    },
    {
      lab: "5.5",
      what: "reads on while the reader has not taken the last read's events (the whole answer piles up)",
      file: "src/models/http/provider-model.ts",
      find: "        if (stream.buffered > 0) await setImmediate();\n",
      replace: "",
      failsWith: "to be less than or equal to 50",
    },
    {
      lab: "5.5",
      what: "every batch counts as progress, keep-alives too",
      file: "src/models/http/provider-model.ts",
      find: "        if (turn.progressMark !== mark) http.progress();",
      replace: "        http.progress();",
      failsWith: "stalled",
    },
    {
      lab: "5.6",
      what: "end_turn with tool calls ends done(stop)",
      file: "src/models/anthropic/anthropic-inbound.ts",
      find: "        if (this.calls.length > 0) {",
      replace: "        if (this.calls.length < 0) {",
      failsWith: "toolUse",
    },
    {
      lab: "5.6",
      what: "pause_turn without its diagnostic",
      file: "src/models/anthropic/anthropic-inbound.ts",
      find: "        this.diagnose(\n          'stop_reason \"pause_turn\": the server paused a long-running turn; send the conversation back to let it go on.',\n        );\n",
      replace: "",
      failsWith: "pause_turn",
    },
    {
      lab: "5.6",
      what: "a refusal without its explanation",
      file: "src/models/anthropic/anthropic-inbound.ts",
      find: '          `The model refused to go on (stop_reason "refusal")${this.refusal ? `: ${this.refusal}` : "."}`,',
      replace: '          `The model refused to go on (stop_reason "refusal").`,',
      failsWith: "refused to go on",
    },
  ],
  breakIt: {
    zh:
      "在 `ChatCompletionsTurn.toolCall` 里，把对 `pushArguments` 的调用改成每个 delta 都对整个 `rawArguments` 从头解析：先 `call.parser = new PartialJsonParser();`，" +
      '再 `call.parser.push(block.rawArguments ?? "");`，然后照旧调用 `pushArguments`。跑 `npx vitest run test/05- -t "Lab 5\\.4\\b"`：值还是对的，哪个测试失败了？' +
      '再在你的练习文件夹里跑 `npx vitest run test/05- -t "linear time"`：三个线性测试（SSE、部分 JSON、工具参数）各把 4 MiB 分成小块喂给你自己的代码，' +
      "超过 8 秒就失败并说出读到了第几块；改坏之后工具参数那一个停在哪里？为什么“每个 delta 都从头解析”是平方级的？" +
      "（`npm run bench -- 05` 只在仓库根目录有，量的是仓库里的参考实现和上游 pi-ai，不是你的代码。）" +
      '另一个实验：把 `readSseBatches` 里 `decoder.decode(value, { stream: true })` 的 `{ stream: true }` 去掉，跑 `npx vitest run test/05- -t "Lab 5\\.1\\b"`：' +
      "哪个测试失败？被切在两次读取之间的多字节字符变成了什么？",
    en:
      "In ChatCompletionsTurn.toolCall, parse the whole rawArguments again on every delta (a new PartialJsonParser fed " +
      'rawArguments, then pushArguments as before) and run the Lab 5.4 tests: the values are right, so which test fails? In your folder, run npx vitest run test/05- -t "linear time": the three linear tests feed 4 MiB to your own code and stop after 8 s, naming the piece they reached (npm run bench -- 05 exists only at the repository root and measures the reference code): ' +
      "why is re-parsing quadratic? Then drop { stream: true } from the decode in readSseBatches and run the Lab 5.1 tests: what " +
      "does a character split between two reads become?",
  },
});
