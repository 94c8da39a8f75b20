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
      title: { zh: "把一个回合播放成模型事件", en: "playing a turn as model events" },
      hint: {
        zh: "start、逐块的 delta、每个工具调用的 toolcall_end，最后 done 或 error；播放中途中止也是 error 事件，出错的回合保留已经流出的部分文本。",
        en: "start, deltas, toolcall_end per call, then done or error; an abort mid-play is an error event, and an error turn keeps its partial text.",
      },
      // play() resolves the turn first: until lab 4.2 is written its site is what these tests hit.
      uses: ["4.2"],
    },
    {
      id: "4.2",
      title: { zh: "找到要播放的回合", en: "resolving the turn to play" },
      hint: {
        zh: "预先中止、脚本用完、responder 抛错：全部变成 error 事件，绝不抛出。",
        en: "Pre-aborted, script exhausted, responder threw: all error events, never a throw.",
      },
    },
  ],
  // Temporary: these tests are red in practice(04) but do not show the construction site's error
  // (they compare event types or content only, so the error event's "Lab 4.x …：尚未实现" message
  // never appears), or are green against it. The proof lists them on every run; fix the tests
  // (e.g. assert errorMessage/stopReason first) and delete the waivers.
  waivers: [
    ...[
      "Lab 4.1 · stream() returns at once and plays asynchronously",
      "Lab 4.1 · plays two turns from one instance and records a deep copy of each request",
      "Lab 4.1 · an abort mid-play ends with an aborted error event that keeps the partial content",
      "Lab 4.1 · a length turn streams its calls' text but never completes them (no toolcall_end)",
      "Lab 4.1 · never splits a surrogate pair across deltas",
      "Lab 4.2 · a responder computes the turn from the context it was asked with",
    ].map((test) => ({ test, why: "red, but the failure does not name the lab (the site's error hides in an error event)" })),
    {
      test: "Lab 4.2 · a context that cannot be copied is an error event",
      why: "green against the sites: the copy happens in stream(), outside every lab region",
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
