import { defineChapter } from "../catalogue.js";

export default defineChapter({
  id: "00",
  slug: "prologue",
  mode: "observe",
  title: { zh: "序章：观察一次完整的智能体运行", en: "Prologue: observe one full agent run" },
  invariant: {
    zh: "一次运行的事件总是嵌套成 agent ⊃ turn ⊃ message / tool 的结构，并且每个工具调用在模型再次被调用之前都恰好有一个带相同 id 的结果。",
    en:
      "A run's events always nest as agent ⊃ turn ⊃ message / tool, and every tool call gets exactly one result with its id " +
      "before the model is called again.",
  },
  adds: {
    zh:
      "本章不写代码。这个文件夹里是完整的参考库，加上主程序 `src/cli/`：`npm start` 在一个新建的临时工作区里运行一个智能体，" +
      "它读取一个有错别字的文件、修改它、运行检查命令，然后回答。默认的模型是内置的 `ScriptedModel`（离线、确定），" +
      "工具是第 08 章的真实编码工具（read / edit / bash 真的在磁盘上执行）。屏幕上的每一行都是一个 `AgentEvent`：" +
      "先把这些事件的顺序看熟，后面每一章你都会亲手实现其中的一段。" +
      "（`src/cli/launch.ts` 让智能体在一个单独启动、环境里没有 API key 的进程里运行，所以模型执行的命令从祖先进程的环境里也读不到 key；" +
      "Ctrl-C 会中止运行，退出码是 130。）",
    en:
      "No code to write. npm start runs one agent in a fresh temporary workspace: it reads a file with a typo, edits it, runs " +
      "the check and answers, on the embedded ScriptedModel with the real coding tools. Every line printed is one AgentEvent; " +
      "learn their order here, then build each piece in the chapters that follow. (src/cli/launch.ts runs the agent in a " +
      "process started apart, without the API key in its environment, so no command finds it in an ancestor's; Ctrl-C " +
      "stops the run with exit code 130.)",
  },
  // The main program, src/cli/, belongs to chapter 13 (the wiring); this folder holds all of it.
  files: ["test/fixtures/prologue-replay-turn-1.sse", "test/fixtures/prologue-replay-turn-2.sse"],
  labs: [],
  observe: [
    {
      command: "npm start -- --help",
      text: {
        zh: "先看看主程序能做什么：离线演示、`--json`、连接真实服务器的 `--base-url` / `--model` / `--cwd`。",
        en: "See what the main job does: the offline demo, --json, and --base-url / --model / --cwd for a real server.",
      },
    },
    {
      command: "npm start",
      text: {
        zh:
          "运行之前先在纸上写下你的预测：任务是“修好 greeting.mjs 的错别字并证明检查通过”。会有几个 turn？" +
          "第一个 turn 里，`message_start` / `message_end` 会出现几次，分别属于哪个角色（user、assistant、toolResult）？" +
          "`tool_execution_start` 出现在助手消息的 `message_end` 之前还是之后？最后一个 turn 为什么没有工具结果？" +
          "然后运行，逐行对照：每一行缩进表示它属于谁（agent ⊃ turn ⊃ message / tool）。",
        en:
          "Before running, write down your predictions: how many turns? In turn 1, how many message_start / message_end, and " +
          "for which roles? Does tool_execution_start come before or after the assistant's message_end? Why does the last " +
          "turn have no tool result? Then run it and check line by line.",
      },
    },
    {
      command: "npm start -s -- --json | head -20",
      text: {
        zh:
          "同样的运行，每行一个 JSON 事件（`-s` 让 npm 不在 stdout 上打印它自己的 `> start` 行，输出才是纯 JSON）。找到第一个 `message_update`：它的 `event` 字段是哪一种模型事件？" +
          "JSON 里的 `message_update` 只带增量（delta），不带“到目前为止的消息”，完整的消息在哪一行？为什么这样输出才不会随回答长度平方增长？",
        en:
          'The same run, one JSON event per line (-s keeps npm\'s own "> start" lines off stdout). Which model event does the first message_update carry? In JSON it carries only the delta, ' +
          "not the message so far: which line has the whole message, and why does that keep the output linear in the answer's size?",
      },
    },
    {
      command: "npm start -- --drop-tool-result",
      text: {
        zh:
          "弄坏它：这个开关让模型看不到第一个工具结果（见 `src/cli/main.ts` 里的 `convertToLlm`）。先预测：运行会在哪里停下？" +
          "然后读“配对检查”（`src/cli/pairing.ts`）打印的错误。为什么每个工具调用在下一次调用模型之前必须恰好有一个带相同 id 的结果？" +
          "真实的 OpenAI 服务器遇到同样的上下文会返回 HTTP 400。",
        en:
          "Break it: the model no longer sees the first tool result. Predict where the run stops, then read what the pairing " +
          "check says. (A real OpenAI server answers such a context with HTTP 400.)",
      },
    },
    {
      command: "npm test",
      text: {
        zh:
          "测试把主程序当成真正的命令来启动（也包括一个在 127.0.0.1 上回放录制对话的 OpenAI 兼容服务器）。" +
          "读 `test/00-prologue.test.ts`，找到断言完整事件顺序的那几行，和你刚才的预测比一比。",
        en:
          "The tests spawn the real command, also against a local OpenAI-compatible server replaying a recorded " +
          "conversation. Compare the asserted event order with your predictions.",
      },
    },
  ],
  scripts: { start: "tsx src/cli/start.ts" },
  devDependencies: ["tsx"],
  wrong: [
    {
      lab: "Prologue · npm start runs one full agent run",
      what: "break it: the demo's second turn edits with an oldText the file does not hold",
      file: "src/cli/demo.ts",
      find: `edits: [{ oldText: '"Helo, "', newText: '"Hello, "' }]`,
      replace: `edits: [{ oldText: '"Hallo, "', newText: '"Hello, "' }]`,
      failsWith: "turn 2's edit failed",
    },
    {
      lab: "Prologue · --json stays linear",
      what: "quadratic output: --json's message_update keeps the partial message (the answer so far) on every line",
      file: "src/cli/trace.ts",
      find: '  return { type: "message_update", event: rest };',
      replace: '  return { type: "message_update", event: event as unknown as Record<string, unknown> };',
      failsWith: '"partial"',
    },
    {
      lab: "Prologue · the pairing check names",
      what: "errors swallowed: a tool result that answers no pending call passes the pairing check",
      file: "src/cli/pairing.ts",
      find:
        "      if (!pending.delete(message.toolCallId)) {\n" +
        "        return `the tool result for ${message.toolCallId} (${message.toolName}) answers no pending tool call.`;\n" +
        "      }",
      replace: "      pending.delete(message.toolCallId);",
      failsWith: "the tool result for c1 (read) answers",
    },
    {
      lab: "Prologue · the pairing check names",
      what: "order: an unanswered call is checked only at the end, so a result that comes after the next message passes",
      file: "src/cli/pairing.ts",
      find: "    if (pending.size > 0) return unanswered();\n",
      replace: "",
      failsWith: "tool call c1 (read) has no result",
    },
  ],
  breakIt: {
    zh:
      "除了 `--drop-tool-result`，再试一次手动破坏：在 `src/cli/demo.ts` 里把第二个回合的 `oldText` 改成文件里不存在的文本。" +
      "预测：edit 工具会怎样失败？模型下一回合看到了什么？运行会以 error 结束还是正常结束？" +
      '然后跑 `npx vitest run test/00- -t "npm start runs"`：测试在哪一步发现了它？',
    en:
      "Also change the second turn's oldText in src/cli/demo.ts to text the file does not hold: how does edit fail, what does " +
      "the model see next, and does the run end in error or normally? Then run the test named 'npm start runs': where does it notice?",
  },
});
