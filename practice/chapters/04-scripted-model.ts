import { defineChapter } from "../catalogue.js";

export default defineChapter({
  id: "04",
  slug: "scripted-model",
  title: { zh: "脚本模型 ScriptedModel", en: "ScriptedModel" },
  invariant: {
    zh: "stream() 立即返回且从不抛出：每个回合都以恰好一个 done 或 error 事件结束，失败（脚本错误、中止、脚本用完）都是流里的 error 事件。",
    en: "stream() returns at once and never throws: every turn ends with exactly one done or error event, and every failure is an error event in the stream.",
  },
  adds: {
    zh:
      "`ScriptedModel`：一个确定性的 `Model`，把脚本里的回合播放成模型事件：`start`、文本的 `text_delta`、" +
      "每个工具调用的 `toolcall_delta` 与 `toolcall_end`，最后是 `done`。它是后面各章测试的替身，也是主程序默认内置的模型。" +
      "`requests` 记录最近收到的上下文的拷贝（最多 `keepRequests` 个，默认 100；各拷贝共享已拷贝过的消息，长跑的内存只相当于一份对话），`calls` 数调用次数。" +
      "文件里已经给好的帮手可以直接用：`this.interrupted(signal)` 让出一次事件循环，然后告诉你是否已中止；" +
      "`this.abort(stream, partial)` 以中止结束回合并保留已流出的内容；`this.fail(stream, reason, text)` 推送一条空的错误消息；" +
      "`this.blank(stopReason)` 是本模型的空消息（provider、model、时间戳都已填好）；`pieces(text, size)` 把文本切成 delta；" +
      "`this.keptCopy(context)` 是 `requests` 要记的那份拷贝（消息与工具定义各只拷贝一次，之后的请求共享它）。",
    en:
      "A deterministic Model that plays scripted turns as model events; the test double of every later chapter and the " +
      "embedded default model of the main job. It records copies of the latest contexts it is asked with (keepRequests, default 100; the copies share each message, copied once) and counts calls. Provided helpers: " +
      "interrupted (one yield, then is the signal aborted?), abort, fail, blank, pieces, keptCopy (the copy requests keeps).",
  },
  files: ["src/models/scripted-model.ts"],
  labs: [
    {
      id: "4.1",
      title: {
        zh: "stream() 与选回合：立即返回，失败都是事件",
        en: "stream() and choosing the turn: return at once, failures as events",
      },
      hint: {
        zh: [
          "1. `stream` 里同步完成这几件事再返回流：`calls` 加一，用 `structuredClone` 深拷贝上下文给 `play`（responder 可能改它），并把 `this.keptCopy(context)` 记进 `requests`（`keepRequests` 为 0 时不记；超过 `keepRequests` 就丢掉最旧的；任何一次拷贝失败都是 error 事件）",
          "2. 然后**直接调用** `this.play(...)`（不要放进 `queueMicrotask`/`setImmediate`）：`play` 一开始就调用 `resolveTurn`，而预先中止的检查和“取走一个回合”必须在 `stream()` 返回之前同步发生（`resolveTurn` 在第一个 `await` 之前做完这两件事）。",
          "3. `play` 返回的 promise 要接上 `.catch`：播放中任何意外抛出都变成 error 事件，**消息里保留原错误的 message**（后面实验的施工现场错误就是靠它显示出来的）。",
          "4. `resolveTurn` 取下一个回合：脚本里的一项可能是消息、`ScriptedFailure`（用已给的 `failureScript` 变成要播放的消息）或 responder（用上下文和从 0 数起的回合号调用它，可能是 async）。",
          "5. 预先中止（不消耗回合）、脚本用完、responder 抛错，全部是 error 事件，绝不抛出；responder 返回了无效的值不用特意检查，读它时抛出的错误会走上面的 `.catch`。",
          "6. 测试逐字检查这五种 errorMessage：① 预先中止（reason 为 `aborted`）：`Request was aborted`（responder 算完回合时信号已中止也一样：只有这一个 error 事件，没有 start）；② 脚本用完：`ScriptedModel: the script has no turn N (it has M). Add a turn to the script, or stop the run sooner.`，N 数的是回合（已取走的回合数 + 1，被预先中止的调用不算），M 是脚本长度；③ responder 抛错：`ScriptedModel: the responder threw: <错误的 message>`；④ `.catch` 接住的意外：`ScriptedModel: cannot play call N: <错误的 message>`，N 数的是调用（第几次调用 `stream()`，即 `calls`）；⑤ 拷贝失败：`ScriptedModel: the context cannot be copied: <错误的 message>`（测试只查 `cannot be copied`）。",
        ].join("\n"),
        en: [
          "1. In stream(), synchronously: count the call, deep-copy the context for play (structuredClone: a responder may change it) and record this.keptCopy(context) in requests (none when keepRequests is 0; drop the oldest past keepRequests; a failed copy is an error event)",
          "2. then call this.play(...) directly, not from a microtask or setImmediate: the pre-abort check and taking the turn happen before stream() returns.",
          "3. Catch play's rejection as an error event that keeps the cause's message.",
          "4. resolveTurn takes the next turn (a message, a ScriptedFailure made playable by failureScript, or a responder called with the context and the 0-based turn index)",
          "5. pre-aborted (uses no turn) or aborted while a responder computed the turn (one error event, no start), script exhausted, responder threw: error events, never a throw.",
          '6. The five errorMessages the tests require: "Request was aborted"; "ScriptedModel: the script has no turn N (it has M). Add a turn to the script, or stop the run sooner." (N counts turns taken + 1); "ScriptedModel: the responder threw: <message>"; "ScriptedModel: cannot play call N: <message>" (N counts calls to stream()); "ScriptedModel: the context cannot be copied: <message>".',
        ].join("\n"),
      },
    },
    {
      id: "4.2",
      title: { zh: "把文本回合播放成模型事件", en: "playing a text turn as model events" },
      hint: {
        zh: [
          '1. 先建 `partial = this.blank("stop")`，**立刻**推送 `start`（它前面不让出、不查 signal）。',
          "2. 之后每个事件之前（每个 delta，以及最后的 done/error）恰好让出一次：`await this.interrupted(signal)`，结果为 true 就用 `this.abort(stream, partial)` 结束回合；否则才修改共享的 `partial`、推送事件，这样读者看到的每个 partial 都是它那个事件时的样子。",
          '3. 文本块：第一个 delta 时把一个新的 `{ type: "text", text: "" }` 放进 `partial.content`，每个 `text_delta` 把 delta 追加上去，`contentIndex` 是这个块的位置，事件里的 `partial` 就是那个共享对象。',
          "4. 工具调用块交给 `playToolCall`（Lab 4.3；它返回 false 表示回合已被中止）。",
          "5. 最后：`usage` 复制脚本的、`stopReason` 与 errorMessage 取脚本的，`stop`/`length`/`toolUse` 推送 `done`（`message` 就是 partial 本身），`error`/`aborted` 推送 `error`，所以出错的回合保留已流出的文本。",
        ].join("\n"),
        en: [
          '1. partial = this.blank("stop"); push start at once (no yield, no signal check before it).',
          "2. Before every later event (each delta, the final done/error) yield exactly once with this.interrupted(signal) (aborted → this.abort), and only then change the shared partial and push.",
          "3. Text blocks grow in place, one text_delta per piece",
          "4. tool calls go to playToolCall.",
          "5. Finally copy usage, set stopReason (and errorMessage) and push done or error carrying partial itself.",
        ].join("\n"),
      },
      // Its tests call stream() first: in practice(04) they meet lab 4.1's site before this one.
      uses: ["4.1"],
    },
    {
      id: "4.3",
      title: {
        zh: "播放工具调用：toolcall_delta 与 toolcall_end",
        en: "playing a tool call: toolcall_delta and toolcall_end",
      },
      hint: {
        zh: [
          '1. 流式期间，块的样子是 `{ type: "toolCall", id, name, arguments: {}, rawArguments: "到目前为止的 JSON 文本" }`：JSON 文本是脚本里的 `rawArguments`，没有就用 `JSON.stringify(arguments)`，按 `pieces` 切开，每片一个 `toolcall_delta`（同样先让出、再改 partial、再推送）。',
          "2. 然后再让出一次，把 `arguments` 设成脚本参数的深拷贝，脚本没有 `rawArguments` 就删掉这个字段，推送 `toolcall_end`：它的 `toolCall` 必须就是 `partial.content` 里、也就是最终消息里的那个对象（测试用 `toBe` 检查，不能是副本）。",
          "3. `length` 回合被截断了：调用的文本照样流出，但**没有** `toolcall_end`，块保持流式时的样子（`arguments: {}` 加 `rawArguments`）。",
          "4. 中途中止：`this.abort(stream, partial)` 并返回 false。",
        ].join("\n"),
        en: [
          '1. While streaming, the block is { type: "toolCall", id, name, arguments: {}, rawArguments: text so far }; the text is the script\'s rawArguments or JSON.stringify(arguments), one toolcall_delta per piece.',
          "2. Then yield, set arguments to a deep copy of the scripted ones, drop rawArguments unless scripted, and push toolcall_end carrying the very block object of the final message.",
          "3. A length turn streams the text but has no toolcall_end.",
          "4. On abort: this.abort and return false.",
        ].join("\n"),
      },
      uses: ["4.1"],
    },
  ],
  wrong: [
    {
      lab: "4.1",
      what: "break it, step 1: a signal aborted before the call throws instead of pushing the error event",
      file: "src/models/scripted-model.ts",
      find: '    if (signal?.aborted) return this.fail(stream, "aborted", "Request was aborted");\n    const turnIndex',
      replace: '    if (signal?.aborted) throw new Error("Request was aborted");\n    const turnIndex',
      failsWith: "with reason aborted, never a throw",
    },
    {
      lab: "4.2",
      what: "break it, step 2: stream() starts play in a microtask",
      file: "src/models/scripted-model.ts",
      find: '    this.play(stream, snapshot, options.signal).catch((error) =>\n      this.fail(stream, "error", `ScriptedModel: cannot play call ${call}: ${describe(error)}`),\n    );',
      replace:
        '    queueMicrotask(() =>\n      this.play(stream, snapshot, options.signal).catch((error) =>\n        this.fail(stream, "error", `ScriptedModel: cannot play call ${call}: ${describe(error)}`),\n      ),\n    );',
      failsWith: "play began late",
    },
    {
      lab: "4.1",
      what: "requests never capped: every context is kept, keepRequests ignored",
      file: "src/models/scripted-model.ts",
      find: "      if (this.requests.length > this.keepRequests) this.requests.shift();\n",
      replace: "",
      failsWith: '"b"',
    },
    {
      lab: "4.1",
      what: "a pre-aborted call uses up a turn (the turn counted before the abort check)",
      file: "src/models/scripted-model.ts",
      find: 'if (signal?.aborted) return this.fail(stream, "aborted", "Request was aborted");\n    const turnIndex = this.played++;',
      replace:
        'const turnIndex = this.played++;\n    if (signal?.aborted) return this.fail(stream, "aborted", "Request was aborted");',
      failsWith: "the script has no turn 2",
    },
    {
      lab: "4.1",
      what: "the exhausted script names its turn 0-based (no turn 0)",
      file: "src/models/scripted-model.ts",
      find: "`ScriptedModel: the script has no turn ${turnIndex + 1} (it has ${count}). `",
      replace: "`ScriptedModel: the script has no turn ${turnIndex} (it has ${count}). `",
      failsWith: "the script has no turn 0",
    },
    {
      lab: "4.1",
      what: "an abort while the responder computes is not checked again: the late turn is played",
      file: "src/models/scripted-model.ts",
      find: '        return this.fail(stream, "error", `ScriptedModel: the responder threw: ${describe(error)}`);\n      }\n      if (signal?.aborted) return this.fail(stream, "aborted", "Request was aborted");\n',
      replace:
        '        return this.fail(stream, "error", `ScriptedModel: the responder threw: ${describe(error)}`);\n      }\n',
      failsWith: "aborted",
    },
    {
      lab: "4.1",
      what: "the request recorded is the caller's own context, not a copy",
      file: "src/models/scripted-model.ts",
      find: "      this.requests.push(kept);\n",
      replace: "      this.requests.push(context);\n",
      failsWith: "changed after the call",
    },
    {
      lab: "4.2",
      what: "a text delta replaces the block's text instead of adding to it",
      file: "src/models/scripted-model.ts",
      find: '          target.text += delta;\n          stream.push({ type: "text_delta"',
      replace: '          target.text = delta;\n          stream.push({ type: "text_delta"',
      failsWith: "Hello wo",
    },
    {
      lab: "4.2",
      what: "chunkSize ignored: the whole text in one delta",
      file: "src/models/scripted-model.ts",
      find: "        for (const delta of pieces(block.text, this.chunkSize)) {",
      replace: "        for (const delta of [block.text]) {",
      failsWith: "Hell",
    },
    {
      lab: "4.2",
      what: "the scripted errorMessage dropped from an error turn",
      file: "src/models/scripted-model.ts",
      find: "    if (script.errorMessage !== undefined) partial.errorMessage = script.errorMessage;\n",
      replace: "",
      failsWith: "errorMessage",
    },
    {
      lab: "4.2",
      what: "the abort checked once at the end of the turn, not before each delta",
      file: "src/models/scripted-model.ts",
      find: "          if (await this.interrupted(signal)) return this.abort(stream, partial);\n          if (partial.content.length === contentIndex) partial.content.push(target);\n          target.text += delta;",
      replace:
        "          await this.interrupted(undefined);\n          if (partial.content.length === contentIndex) partial.content.push(target);\n          target.text += delta;",
      failsWith: "text",
    },
    {
      lab: "4.3",
      what: "a length turn completes its calls (toolcall_end) like any other",
      file: "src/models/scripted-model.ts",
      find: '    if (stopReason === "length") return true;\n',
      replace: "",
      failsWith: "toolcall_end",
    },
    {
      lab: "4.3",
      what: "rawArguments kept on a call scripted with arguments only",
      file: "src/models/scripted-model.ts",
      find: "    if (block.rawArguments === undefined) delete target.rawArguments;\n",
      replace: "",
      failsWith: "rawArguments",
    },
    {
      lab: "4.3",
      what: "the completed call holds the script's own arguments object, not a copy",
      file: "src/models/scripted-model.ts",
      find: "    target.arguments = structuredClone(block.arguments);",
      replace: "    target.arguments = block.arguments;",
      failsWith: "not to be",
    },
    {
      lab: "4.3",
      what: "an abort while a call streams is noticed only after its last delta",
      file: "src/models/scripted-model.ts",
      find: "    for (const delta of pieces(json, this.chunkSize)) {\n      if (await this.interrupted(signal)) {",
      replace:
        "    for (const delta of pieces(json, this.chunkSize)) {\n      if (await this.interrupted(undefined)) {",
      failsWith: "'start', 'toolcall_delta', 'error'",
    },
  ],
  breakIt: {
    zh:
      "找到你的代码里检查“调用前就已中止”的地方，把推送 error 事件改成直接 `throw`。运行测试：调用者会看到什么？" +
      "为什么 `Model` 的契约要求 `stream` 从不抛出？再把 `stream()` 里对 `play` 的调用挪进 `queueMicrotask`：哪个测试失败，少了哪个事件？",
    en:
      "Where your code checks for a signal aborted before the call, throw instead of pushing the error event: what does the " +
      "caller see, and why does the Model contract say stream never throws? Then move the call to play into queueMicrotask: " +
      "which test fails, and which event is missing?",
  },
});
