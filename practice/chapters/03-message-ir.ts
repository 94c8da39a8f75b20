import { defineChapter } from "../catalogue.js";

export default defineChapter({
  id: "03",
  slug: "message-ir",
  title: { zh: "规范消息", en: "Canonical messages" },
  invariant: {
    zh:
      "只存储和回放规范消息；终止事件与它的消息必须一致：事件名与 stopReason 相符（done ⇔ stop/length/toolUse，error ⇔ error/aborted），" +
      "而且事件的 `reason` 必须等于消息的 `stopReason`（例如 `error` 事件的 reason 是 `error`，消息却是 `aborted`，也不一致）。",
    en:
      "Only canonical messages are stored and replayed; a terminal event agrees with its message: its name fits the stopReason, " +
      "and its reason equals the stopReason (an error event with reason error carrying an aborted message is incoherent too).",
  },
  adds: {
    zh:
      "`types.ts` 里的词汇：文本块、工具调用、三种消息角色（user / assistant / toolResult）、`ModelEvent`；`model.ts` 里的 `Model` 契约；" +
      "`messages.ts` 里的构造器和 `textOf`；以及 `event-stream.ts` 里的 `AssistantMessageEventStream`，它在 `push` 时拒绝不一致的终止事件。" +
      "各家提供方 API 的请求/响应格式、界面上显示的文本都属于别的层，这里只有统一的消息结构。" +
      "`types.ts` 一次写全：第 5 章才用到的 `ImageContent`、`ErrorDetails` 和几个可选字段（`argumentsError`、`cacheRead`、`errorDetails`、`attempts`、`partialArguments`）已经在里面，现在不用管它们。",
    en:
      "The vocabulary (content blocks, the three roles, ModelEvent, the Model contract), message constructors and textOf, " +
      "and AssistantMessageEventStream, which refuses an incoherent terminal event at push. types.ts is written whole: the types " +
      "and optional fields chapter 05 uses (ImageContent, ErrorDetails, argumentsError, cacheRead, errorDetails, attempts, partialArguments) are there already.",
  },
  files: ["src/types.ts", "src/model.ts", "src/messages.ts"],
  labs: [
    {
      id: "3.1",
      title: { zh: "消息构造器", en: "message constructors" },
      hint: {
        zh: [
          "1. 构造器在创建消息时打上时间戳（可用 `timestamp` 显式传入），并复制输入，消息绝不与调用者共享任何对象：",
          "2. 文本块和图片块（`data`、`mimeType`）是新的对象（不只是新数组）",
          "3. 助手消息的内容要深拷贝（工具调用的 `arguments` 也是新对象）",
          "4. `usage` 也是一份新的拷贝（默认值来自冻结的 `EMPTY_USAGE`，同样要拷贝）。",
          '5. 默认值：provider 和 model 为 `"unknown"`，`isError` 为 false',
          "6. `errorMessage`、`details` 只在给了的时候才出现。",
        ].join("\n"),
        en: [
          "1. Constructors stamp the time (overridable with timestamp) and copy their input, sharing no object with the caller:",
          "2. new text and image blocks (not just a new array)",
          "3. assistant content deep-copied (tool-call arguments too)",
          "4. a fresh usage (also when it defaults to the frozen EMPTY_USAGE).",
          '5. Defaults: provider and model "unknown", isError false',
          "6. errorMessage and details only when given.",
        ].join("\n"),
      },
    },
    {
      id: "3.2",
      title: { zh: "textOf：有损投影", en: "textOf: a lossy projection" },
      hint: {
        zh: '只取文本块，用 "\\n" 连接；跳过工具调用；不修改输入。',
        en: 'Text blocks joined with "\\n", tool calls skipped, the input never mutated.',
      },
      uses: ["3.1"],
    },
    {
      id: "3.3",
      title: { zh: "终止事件的一致性", en: "terminal coherence" },
      hint: {
        zh:
          "不一致是程序错误：在 push 时直接抛出异常拒绝它，不要悄悄接受，被拒绝的事件也不能进入流。" +
          "抛出的必须是 `TypeError`，消息里要有 `reason must equal the message's stopReason` 这句话（测试用正则检查它），" +
          "最好再写明事件名、reason 和 stopReason。合法的事件交给父类 `EventStream` 的 `push`。",
        en:
          "A mismatch is a programming error: throw at push, and the refused event never reaches the stream. Throw a TypeError " +
          'whose message contains "reason must equal the message\'s stopReason" (the tests match that phrase); coherent events go ' +
          "to EventStream's push.",
      },
      uses: ["3.1"],
    },
  ],
  wrong: [
    {
      lab: "3.2",
      what: "break it, step 1: textOf includes the tool calls' arguments",
      file: "src/messages.ts",
      find: '    if (block.type === "text") parts.push(block.text);',
      replace:
        '    if (block.type === "text") parts.push(block.text);\n    else if (block.type === "toolCall") parts.push(JSON.stringify(block.arguments));',
      failsWith: "textOf is lossy on purpose",
    },
    {
      lab: "3.1",
      what: "break it, step 2: assistantMessage keeps the caller's content array (no copy)",
      file: "src/messages.ts",
      find: "    content: structuredClone(content as AssistantContent[]),",
      replace: "    content: content as AssistantContent[],",
      failsWith: "assistantMessage copies its content",
    },
    {
      lab: "3.1",
      what: "text blocks passed through as the caller's objects (only images copied)",
      file: "src/messages.ts",
      find: '    return { type: "text", text: block.text };\n  });',
      replace: "    return block;\n  });",
      failsWith: "not to be",
    },
    {
      lab: "3.1",
      what: "the default usage is the frozen EMPTY_USAGE itself, not a copy",
      file: "src/messages.ts",
      find: "    usage: { ...(overrides.usage ?? EMPTY_USAGE) },",
      replace: "    usage: overrides.usage ?? EMPTY_USAGE,",
      failsWith: "not to be",
    },
    {
      lab: "3.1",
      what: "the default provider wins over the caller's",
      file: "src/messages.ts",
      find: '    provider: overrides.provider ?? "unknown",',
      replace: '    provider: "unknown",',
      failsWith: "provider",
    },
    {
      lab: "3.1",
      what: "toolResultMessage's isError always false, whatever the caller says",
      file: "src/messages.ts",
      find: "    isError: input.isError ?? false,",
      replace: "    isError: false,",
      failsWith: "isError",
    },
    {
      lab: "3.1",
      what: "assistantMessage drops the errorMessage it is given",
      file: "src/messages.ts",
      find: "    ...(overrides.errorMessage !== undefined && { errorMessage: overrides.errorMessage }),\n",
      replace: "",
      failsWith: "errorMessage",
    },
    {
      lab: "3.2",
      what: "textOf returns the first text block only, where all were meant",
      file: "src/messages.ts",
      find: '    if (block.type === "text") parts.push(block.text);\n  }',
      replace: '    if (block.type === "text") {\n      parts.push(block.text);\n      break;\n    }\n  }',
      failsWith: "expected 'first' to be 'first\\nsecond'",
    },
    {
      lab: "3.2",
      what: "textOf joins the blocks with nothing between them",
      file: "src/messages.ts",
      find: '  return parts.join("\\n");',
      replace: '  return parts.join("");',
      failsWith: "firstsecond",
    },
    {
      lab: "3.2",
      what: "textOf ends every block with a newline, the last one too",
      file: "src/messages.ts",
      find: '  return parts.join("\\n");',
      replace: '  return parts.map((part) => `${part}\\n`).join("");',
      failsWith: "first\\nsecond\\n",
    },
    {
      lab: "3.3",
      what: "only the reason's kind checked, not that it equals the message's stopReason",
      file: "src/event-stream.ts",
      find: "      if (!allowed.has(event.reason) || message.stopReason !== event.reason) {",
      replace: "      if (!allowed.has(event.reason)) {",
      failsWith: "to throw",
    },
    {
      lab: "3.3",
      what: "the terminal event pushed before it is checked: a refused event still ends the stream",
      file: "src/event-stream.ts",
      find: '    if (event.type === "done" || event.type === "error") {\n      const message =',
      replace:
        '    super.push(event);\n    if (event.type === "done" || event.type === "error") {\n      const message =',
      failsWith: "toolUse",
    },
    {
      lab: "3.3",
      what: "an error event checked against the done reasons",
      file: "src/event-stream.ts",
      find: '      const allowed = event.type === "done" ? DONE_REASONS : ERROR_REASONS;',
      replace: "      const allowed = DONE_REASONS;",
      failsWith: 'Incoherent "error" event',
    },
    {
      lab: "3.3",
      what: "an incoherent event refused with a plain Error, not a TypeError",
      file: "src/event-stream.ts",
      find: "        throw new TypeError(\n          `Incoherent",
      replace: "        throw new Error(\n          `Incoherent",
      failsWith: "TypeError",
    },
  ],
  breakIt: {
    zh:
      "让 `textOf` 也把工具调用的参数拼进文本，运行测试：哪个测试说明了“有损”是刻意的？再让 `assistantMessage` 直接使用调用者传入的 " +
      "content 数组（不复制），哪个测试失败？调用者之后修改自己的数组，消息会发生什么？",
    en:
      "Make textOf include tool-call arguments: which test says lossy is on purpose? Then let assistantMessage keep the caller's " +
      "content array as it is (no copy): which test fails, and what happens to the message when the caller mutates its array?",
  },
});
