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
      "`requests` 深拷贝记录每次收到的上下文。",
    en:
      "A deterministic Model that plays scripted turns as model events; the test double of every later chapter and the " +
      "embedded default model of the main job. It records a deep copy of every context it is asked with.",
  },
  files: ["src/scripted-model.ts"],
  labs: [
    {
      id: "4.1",
      title: { zh: "stream() 与选回合：立即返回，失败都是事件", en: "stream() and choosing the turn: return at once, failures as events" },
      hint: {
        zh:
          "stream：深拷贝并记录上下文（拷贝失败也是 error 事件），异步开始播放，立刻返回流，播放中任何意外抛出都变成 error 事件。" +
          "resolveTurn：预先中止（不消耗回合）、脚本用完、responder 抛错或返回坏值：全部是 error 事件，绝不抛出。",
        en:
          "stream: deep-copy and record the context (a failed copy is an error event), start playing asynchronously, return at once; " +
          "resolveTurn: pre-aborted (uses no turn), script exhausted, responder threw: all error events, never a throw.",
      },
    },
    {
      id: "4.2",
      title: { zh: "把一个回合播放成模型事件", en: "playing a turn as model events" },
      hint: {
        zh: "start、逐块的 delta、每个工具调用的 toolcall_end，最后 done 或 error；每个事件之前让出一次事件循环，播放中途中止也是 error 事件，出错的回合保留已经流出的部分文本。",
        en: "start, deltas, toolcall_end per call, then done or error; yield before each event; an abort mid-play is an error event, and an error turn keeps its partial text.",
      },
      // Its tests call stream() first: in practice(04) they meet lab 4.1's site before this one.
      uses: ["4.1"],
    },
  ],
  breakIt: {
    zh:
      "在 `play` 开头对已中止的 signal 直接 `throw`，而不是推送 error 事件。运行测试：调用者会看到什么？" +
      "为什么 `Model` 的契约要求 `stream` 从不抛出？",
    en:
      "Throw on a pre-aborted signal instead of pushing an error event: what does the caller see, and why does the Model " +
      "contract say stream never throws?",
  },
});
