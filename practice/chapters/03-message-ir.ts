import { defineChapter } from "../catalogue.js";

export default defineChapter({
  id: "03",
  slug: "message-ir",
  title: { zh: "规范消息", en: "Canonical messages" },
  invariant: {
    zh: "只存储和回放规范消息；终止事件的名称与消息的 stopReason 必须一致（done ⇔ stop/length/toolUse，error ⇔ error/aborted）。",
    en: "Only canonical messages are stored and replayed; a terminal event's name always agrees with its message's stopReason.",
  },
  adds: {
    zh:
      "`types.ts` 里的词汇：文本块、工具调用、三种消息角色（user / assistant / toolResult）、`ModelEvent` 与 `Model` 契约；" +
      "`messages.ts` 里的构造器和 `textOf`；以及 `event-stream.ts` 里的 `AssistantMessageEventStream`，它在 `push` 时拒绝不一致的终止事件。" +
      "提供方的线上格式和界面文本是别的层次，这里只有规范形状。",
    en:
      "The vocabulary (content blocks, the three roles, ModelEvent, the Model contract), message constructors and textOf, " +
      "and AssistantMessageEventStream, which refuses an incoherent terminal event at push.",
  },
  files: ["src/types.ts", "src/messages.ts"],
  labs: [
    {
      id: "3.1",
      title: { zh: "消息构造器", en: "message constructors" },
      hint: {
        zh: "构造器在边界上设置时间戳（可显式传入），并复制输入，消息绝不与调用者共享数组。",
        en: "Constructors stamp the time (overridable) and copy their input: a message never shares arrays with the caller.",
      },
    },
    {
      id: "3.2",
      title: { zh: "textOf：有损投影", en: "textOf: a lossy projection" },
      hint: {
        zh: "只取文本块，用 \"\\n\" 连接；跳过工具调用；不修改输入。",
        en: "Text blocks joined with \"\\n\", tool calls skipped, the input never mutated.",
      },
      uses: ["3.1"],
    },
    {
      id: "3.3",
      title: { zh: "终止事件的一致性", en: "terminal coherence" },
      hint: {
        zh: "不一致是程序错误：在 push 时大声拒绝（throw），而不是悄悄接受。",
        en: "A mismatch is a programming error: refuse it loudly at push.",
      },
      uses: ["3.1"],
    },
  ],
  breakIt: {
    zh:
      "让 `textOf` 也把工具调用的参数拼进文本，运行测试：哪个测试说明了“有损”是刻意的？再把 `assistantMessage` 里的 " +
      "`structuredClone` 去掉，修改调用者的数组后，消息会发生什么？",
    en:
      "Make textOf include tool-call arguments: which test says lossy is on purpose? Drop structuredClone in assistantMessage " +
      "and mutate the caller's array: what happens to the message?",
  },
});
