import { defineChapter } from "../catalogue.js";

export default defineChapter({
  id: "19",
  slug: "durable",
  title: {
    zh: "持久运行：先提交，再可见——运行被杀死后从停下的地方接着跑",
    en: "Durable runs: commit first, then visible; a killed run resumes where it stopped",
  },
  invariant: {
    zh:
      "运行在任何一点被杀死（SIGKILL、断电、合上笔记本），下一个进程都能从会话里已提交的内容恢复它：" +
      "每个工具调用恰好得到一个结果，不安全的工具绝不执行两次，被切断的回答作为 aborted 消息留下，运行接着走完。",
    en:
      "Killed at any point (SIGKILL, a power cut, a closed laptop), a run is recovered by the next process from what the " +
      "session committed: every tool call gets exactly one result, no tool unsafe to replay runs twice, an answer cut " +
      "mid-stream is kept as an aborted message, and the run goes on to its end.",
  },
  adds: {
    zh:
      "第 10 章的会话文件记下了每条**结束了**的消息；第 10 章末尾的修补（`answerInterruptedCalls`）在加载时给没有结果的调用一个“被中断”的错误结果，" +
      "一写锁（`session-lock.ts`）保证一个会话只有一个写者。但一次被杀死的运行仍然丢东西：模型永远不知道它的 `bash` 命令到底跑了没有，" +
      "已经执行完、结果还没写下的调用只能当作“被中断”，流到一半的回答整个消失，而 `--continue` 只会开始一个新的提示。\n\n" +
      "本章的规则是**先提交，再可见**：一步在写进存储之前，不许任何东西依据它行动或把它显示出来。" +
      "`src/durable/store.ts` 定义运行需要的存储（`DurableStore`：会话树本身，`SessionFile` 就是一个；`StreamJournal`：正在流的回答，" +
      "文件版本 `fileStreamJournal` 只追加：第一行是整份，之后每个 delta 追加一行变化，一次 `write`；崩溃在写一半时留下残缺的最后一行，读的时候跳过它）。" +
      "`src/durable/journal.ts` 的 `RunJournal` 是写的一半（本章把它整个给你，先读懂它：命令行每次运行都经过它，所以它不能是施工现场，否则前面各章的命令行测试在练习文件夹里就跑不动了；它的测试在 `test/durable.journal.test.ts`）：包装每个工具，`execute` 之前把**意图**（`tool_intent`：调用 id、工具名、参数）提交到会话，" +
      "返回（或抛出）之后立刻提交**结果**（`tool_outcome`）；它的监听器在后面的监听器（界面）看到每个 delta 之前把回答存进流日志。" +
      "这两种新条目挂在当时的叶子下面，不在对话的主路径上，`transcriptOf` 跳过它们。" +
      "`src/durable/recovery.ts` 是读的一半：`planRecovery` 只读不写，按提交了什么给叶子上每个未回答的调用定下做法——" +
      '`recorded`（结果已提交：直接用它）、`run`（没有意图：从没开始，现在跑）、`replay`（开始了没结束，但工具声明 `replay: "safe"`，如 `read`、`ls`：再跑一次）、' +
      "`interrupted`（开始了没结束，默认不安全：错误结果说它可能生效也可能没有，让模型去检查）；" +
      "`applyRecovery` 按计划把结果追加到会话，`resumeRun` 把这些交给一个 `Agent` 并在运行没结束时 `continue()`。\n\n" +
      "命令行：`--continue` / `--resume` 打开一个上次运行被杀死的会话时，先恢复、用一条 note 说明恢复了什么，再把那次运行走完，然后才是新的提示；" +
      "交互模式先说明被杀死的运行留下了什么，再问要不要接着跑（`/resume ID` 也问）：`y`（或回车）恢复并接着跑，`n` 按原样记录（正在跑的调用得到错误结果，什么都不再执行），等你的下一条消息。" +
      "`--no-recover` 不问就拒绝：什么都不再执行，也不接着跑。证明是真实的崩溃：测试在随机时刻 SIGKILL 一个真实的进程，再恢复，检查每个调用恰好一个结果、" +
      "副作用计数从不出现两次、运行走完。",
    en:
      "Commit first, then visible. RunJournal commits a tool call's intent (tool_intent) before its execute and its outcome " +
      "(tool_outcome) right after, and keeps the streamed answer in a stream journal before later listeners see it. " +
      "planRecovery reads what a killed run left at the session's leaf and decides for each unanswered call: recorded, run " +
      '(never started), replay (started, tool says replay: "safe"), interrupted (started, may or may not have taken ' +
      "effect); applyRecovery appends the results, resumeRun hands the session to an Agent and continues the run. The CLI " +
      "recovers on --continue/--resume, says what it did, and finishes the killed run first; the interactive mode asks first " +
      "(y: go on, n: record it as it stands); --no-recover declines without asking.",
  },
  files: [
    "src/cli/features/durable.ts",
    "src/cli/features/durable-run.ts",
    "src/durable/store.ts",
    "src/durable/journal.ts",
    "src/durable/recovery.ts",
    "src/durable/recovery-hooks.ts",
    "test/support/durable-child.ts",
    "test/durable.journal.test.ts",
  ],
  labs: [
    {
      id: "19.1",
      title: { zh: "只读地定下恢复计划（planRecovery）", en: "plan the recovery, reading only" },
      says: ["the process stopped while this answer streamed; this is what had arrived"],
      hint: {
        zh: [
          "从 `store.leaf` 出发。",
          '1. 流日志里有一份回答且它的 `parentId` 等于叶子的 id（没有叶子时等于 null），它就是被切断的回答：`partial` 为这条消息，但 `stopReason: "aborted"`、`errorMessage` 为 `CUT_ANSWER`（`"the process stopped while this answer streamed; this is what had arrived"`）',
          "2. `parentId` 对不上的是过时的副本，忽略（没有被切断的回答时，`partial` 不写或写成 `undefined` 都行：测试用 `toEqual` 比较，两者相同）。",
          "3. 然后取叶子路径的对话（`transcriptOf(store.pathToLeaf(leaf.id)).messages`），用第 10 章的 `answerInterruptedCalls` 找出**末尾**（`atEnd`）没有结果的调用，按它们在最后一条助手消息里的顺序逐个决定：",
          "4. 在这条助手消息条目**之下**（条目的路径经过它）提交过 `tool_outcome` 的 → `recorded`（带上 `outcome`）",
          "5. 没有 `tool_intent` 的 → `run`",
          '6. 有意图、工具 `replay === "safe"` 的 → `replay`',
          "7. 其余 → `interrupted`。",
          "8. `unfinished` 在有 `partial`、有调用、或对话以用户消息或工具结果结尾时为 true。",
          "9. 什么都不写。",
        ].join("\n"),
        en: [
          "1. A stream journal copy whose parentId is the leaf's id is the cut answer (aborted, errorMessage CUT_ANSWER).",
          '2. The unanswered calls at the end of the leaf\'s transcript are decided by what was committed below their assistant message: outcome → recorded; no intent → run; intent and replay: "safe" → replay; else interrupted.',
          "3. unfinished: a partial, any call, or a transcript ending in a user message or a tool result.",
        ].join("\n"),
      },
    },
    {
      id: "19.2",
      uses: ["19.1"],
      title: { zh: "执行计划，接着跑（applyRecovery）", en: "carry the plan out, and go on" },
      says: [
        'Tool call "${toolName}" was interrupted: the process stopped while it ran, so it may or may not have taken effect. Check before running it again.   (then " " and what settleInterrupted said, if anything: e.g. for a bash call ... Check before running it again. Its command was still running after the crash (1 process); it was stopped now.)',
        'Tool call "${toolName}" was not run: the process stopped before it started. Run it again if it is still needed.',
        "applyRecovery: the session changed since the plan was made; make a new plan with planRecovery",
      ],
      hint: {
        zh: [
          "1. 从计划的叶子开始，每追加一条就以它为下一条的父条目：先是 `partial`（若有），提交之后才清掉流日志（顺序反了，恢复在两步之间停下就丢了这段回答）",
          "2. 再按顺序给每个调用追加一条 `toolResult` 消息：",
          "3. `recorded` 用提交过的 `content` 和 `isError`",
          "4. `interrupted` 是错误结果 `uncertainText(name, settled.get(call.id))`（`settled` 已经在你的代码之前算好：开始了却没结束的调用，先问它的工具 `settleInterrupted` 收拾残局——比如停掉还在跑的命令——它说的那句话接在后面，告诉模型后来怎样了）",
          "5. `run` 与 `replay` 用 `runCall` 真的执行一次（它经过和循环一样的 `prepareToolArguments`）。",
          "6. `run: false`（用户拒绝）时什么都不执行：`replay` 也得到 `uncertainText`，从没开始的 `run` 得到 `notRunText(name)`。",
          "7. 返回 `{ plan, appended }`，`appended` 是按顺序追加的消息。",
          "8. 传给它的工具应当是被 `RunJournal` 包装过的：恢复时再跑的调用同样先提交意图，所以恢复本身被杀死也能再恢复。",
        ].join("\n"),
        en: [
          "1. Append after the plan's leaf, chaining each entry: the partial (clear the stream journal only once it is committed)",
          "2. then one toolResult per call (recorded: the outcome; interrupted: uncertainText(name, settled.get(call.id)), the sentence its tool's settleInterrupted said; run/replay: run the call once through runCall).",
          "3. With run: false nothing runs (replay → uncertainText, run → notRunText).",
          "4. Return { plan, appended }.",
        ].join("\n"),
      },
    },
  ],
  wrong: [
    {
      lab: "19.1",
      what: "an unsafe started call replayed (the tool's replay flag ignored)",
      file: "src/durable/recovery.ts",
      find: '      else action = tool?.replay === "safe" ? "replay" : "interrupted";',
      replace: '      else action = "replay";',
      failsWith: "interrupted",
    },
    {
      lab: "19.1",
      what: "a stale streamed copy (of another leaf) kept as the cut answer",
      file: "src/durable/recovery.ts",
      find: "  if (streamed !== undefined && streamed.parentId === (leaf?.id ?? null)) {",
      replace: "  if (streamed !== undefined) {",
      failsWith: "to be undefined",
    },
    {
      lab: "19.1",
      what: "a call whose tool is no longer offered replayed or run like the others",
      file: "src/durable/recovery.ts",
      find: '      else action = tool?.replay === "safe" ? "replay" : "interrupted";',
      replace: '      else action = tool?.replay === "safe" || tool === undefined ? "replay" : "interrupted";',
      failsWith: "interrupted",
    },
    {
      lab: "19.1",
      what: "a transcript ending with a user message not counted as unfinished",
      file: "src/durable/recovery.ts",
      find: '(last.role === "user" || last.role === "toolResult");',
      replace: 'last.role === "toolResult";',
      failsWith: "unfinished",
    },
    {
      lab: "19.2",
      what: "a declined recovery (run: false) still reruns the safe calls",
      file: "src/durable/recovery.ts",
      find: '    } else if (action === "interrupted" || (!run && action === "replay")) {',
      replace: '    } else if (action === "interrupted") {',
      failsWith: "to deeply equal",
    },
    {
      lab: "19.2",
      what: "a call recovery runs loses its result's details",
      file: "src/durable/recovery.ts",
      find: "      details = result.details;\n",
      replace: "",
      failsWith: "details",
    },
    {
      lab: "19.2",
      what: "each recovered result appended as a child of the old leaf, not chained",
      file: "src/durable/recovery.ts",
      find: '    place = await store.append({ type: "message", parentId: place, message });',
      replace: '    await store.append({ type: "message", parentId: place, message });',
      failsWith: "to deeply equal",
    },
    {
      lab: "19.1",
      what: "the journal's marks read from the whole store, not from below this call's message",
      file: "src/durable/recovery.ts",
      find: "    if (!isBelow(entry)) continue;\n",
      replace: "",
      failsWith: '"interrupted"',
    },
    {
      lab: "19.2",
      what: "the stream journal cleared before the cut answer is committed",
      file: "src/durable/recovery.ts",
      find: "  if (plan.partial !== undefined) await record(plan.partial);\n  await options.stream?.clear();",
      replace: "  await options.stream?.clear();\n  if (plan.partial !== undefined) await record(plan.partial);",
      failsWith: "I will now",
    },
    {
      lab: "19.2",
      what: "a recorded error outcome appended as a success",
      file: "src/durable/recovery.ts",
      find: "      isError = outcome!.isError;",
      replace: "      isError = false;",
      failsWith: "isError",
    },
    {
      lab: "19.2",
      what: "a success outcome committed before the tool runs",
      file: "src/durable/journal.ts",
      find: "      // stopped while the intent was written: the loop has answered the call as aborted; no effect\n      signal?.throwIfAborted();",
      replace:
        '      await store.append({\n        type: "tool_outcome",\n        parentId: store.leaf?.id ?? null,\n        toolCallId,\n        toolName: tool.name,\n        content: [{ type: "text", text: "done" }],\n        isError: false,\n      });\n      // stopped while the intent was written: the loop has answered the call as aborted; no effect\n      signal?.throwIfAborted();',
      failsWith: "but its effect never ran",
    },
    {
      lab: "19.2",
      what: "break it, step 1: the intent committed after tool.execute",
      file: "src/durable/journal.ts",
      find: '      await store.append({\n        type: "tool_intent",\n        parentId: store.leaf?.id ?? null,\n        toolCallId,\n        toolName: tool.name,\n        arguments: params,\n      });\n      // stopped while the intent was written: the loop has answered the call as aborted; no effect\n      signal?.throwIfAborted();\n      let result: AgentToolResult<unknown>;\n      try {\n        result = await inner.execute(...args);\n',
      replace:
        '      let result: AgentToolResult<unknown>;\n      try {\n        result = await inner.execute(...args);\n        await store.append({\n          type: "tool_intent",\n          parentId: store.leaf?.id ?? null,\n          toolCallId,\n          toolName: tool.name,\n          arguments: params,\n        });\n        // stopped while the intent was written: the loop has answered the call as aborted; no effect\n        signal?.throwIfAborted();\n',
      failsWith: "c0",
    },
    {
      lab: "19.2",
      what: "break it, step 2: effect marked safe to replay",
      file: "test/support/durable-script.ts",
      find: '    description: "Records that it ran.",\n',
      replace: '    description: "Records that it ran.",\n    replay: "safe",\n',
      failsWith: "c0",
    },
  ],
  breakIt: {
    zh:
      '把 `RunJournal.wrap` 里提交意图的那一行移到 `tool.execute` **之后**，再跑 `npx vitest run test/19- -t "Lab 19\\.2\\b"`：' +
      "进程在工具运行时被杀死，会话里没有意图，恢复以为它从没开始，于是又执行了一次——崩溃测试会报出 effects 文件里出现了两次的调用 id（它在每个 `effect` 运行之前和运行之中各杀一次，每次跑都一样，所以每次都能抓到）。" +
      '再试一次：把 `peek` 的 `replay: "safe"` 也加到 `effect` 上（`test/support/durable-script.ts`），看同一个断言如何失败。',
    en:
      "Move the intent's append after tool.execute in RunJournal.wrap and run the Lab 19.2 tests: a kill during the tool " +
      "leaves no intent, recovery thinks the call never started and runs it again, and the crash test (which kills before and during every effect, the same on every run) reports an effect " +
      'id twice. Then mark `effect` replay: "safe" (test/support/durable-script.ts) and watch the same assertion fail.',
  },
  next: {
    zh:
      "本章让一次运行挺过它的进程，但仍在一台机器上。机器本身死掉时，要由另一台机器把运行走完；评测要跑几百个用例 × 重复次数 × 模型时，一台机器也不够。" +
      "这时人们用的是持久执行引擎（Temporal、Restate、DBOS），而不是自己写的队列。仓库里的 `packages/pi-course-restate`（`@pi/course-restate`，单独一个包，`@pi/course` 不依赖它）" +
      "把同一个 `Agent`、同一个循环放到 Restate 上：每个模型回合、每个工具调用都是引擎记下的一步（`journaled-model.ts`、`journaled-tool.ts`）；" +
      '工具的 `replay` 决定一步能不能再跑：`"safe"` 的没有结果就再跑，其他的先记意图、再跑效果，接手的进程发现“有意图、没结果”时不再执行，' +
      "而是给出本章的 `uncertainText`。它的测试自己启动 Restate 服务器和三个工作进程，在模型流式输出时、副作用之前和之后、可重放的调用进行中用 SIGKILL 杀掉正在跑的工作进程" +
      "（按计划杀 9 次，再在 6 个并发运行下至少杀 1 次、通常 3 次）：每次运行都由另一个进程走完，不安全的副作用从不执行两次，被中断的调用得到和本章一样的文字，对话记录和本地运行一样且成对。" +
      "评测套件（`cli.ts eval`）把每个用例 × 重复交给引擎，任意多个工作进程来取，得出和 `pi-course eval` 一样的报告；测试在用例检查时杀 2 次，一个用例都不丢、不重复。" +
      "代价（这台共享的 2 核机器上实测）：本章的本地日志每个工具调用多花约 0.1–0.2 毫秒（每次 fsync 约 1 毫秒），引擎上每一步约 1.3–2.2 毫秒（一个工具调用是回合、意图、结果三步）；" +
      "200 个小运行一次提交，1 个工作进程约 100–250 次/秒，2、4 个进程并不更快（CPU 已经用满，引擎服务器每次运行约 1.5 毫秒 CPU）；" +
      "200 个离线评测用例在 1、2、4 个工作进程上约 2.0、3.3、4.6 个/秒。更大的机器或多台机器上，工作进程按核数线性增加吞吐，直到单个 Restate 节点成为上限。",
    en:
      "Beyond one machine: packages/pi-course-restate runs the same Agent on Restate, each model turn and tool call a journaled step, " +
      "replay deciding what may run again; its tests SIGKILL workers mid-stream and around effects, and distribute an eval suite across workers.",
  },
});
