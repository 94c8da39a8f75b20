import { defineChapter } from "../catalogue.js";

export default defineChapter({
  id: "07",
  slug: "agent-loop",
  testOrderWaiver: "its tests predate the lab-order rule of the proof; put them in lab order (Lab 7.1's first) and remove this line",
  title: { zh: "智能体循环：agentLoop 与 AgentEvent 生命周期", en: "The agent loop and the AgentEvent lifecycle" },
  invariant: {
    zh:
      "每个工具调用在下一次调用模型之前（或运行结束之前）恰好得到一个结果；无论哪里抛出异常（模型、convertToLlm、transformContext、" +
      "钩子、队列 getter），运行都以一个格式良好的事件序列结束（错误助手消息、turn_end、agent_end），result() 一定落定，" +
      "没有未处理的 rejection，不会挂起；中止之后不再调用模型，也不再等待任何用户代码。",
    en:
      "Every tool call gets exactly one result before the next model call or the end of the run; whatever throws (the model, " +
      "convertToLlm, transformContext, a hook, a queue getter) the run still ends well formed (an error assistant message, " +
      "turn_end, agent_end), result() settles, nothing is left unhandled or hanging; after an abort no model is called " +
      "and no user code is waited for.",
  },
  adds: {
    zh:
      "整个库的心脏：`agentLoop(prompts, context, config, signal?)` 返回 `EventStream<AgentEvent, AgentMessage[]>`。" +
      "一个回合是：`turn_start` → 注入的消息 → 模型的一条助手消息（`message_start`、每个模型事件一个 `message_update`、`message_end`）" +
      "→ 工具批次（`tool_execution_start/update/end` 与结果消息）→ `turn_end`。批次默认并行：按源顺序逐个准备，一起执行，" +
      "`tool_execution_end` 按完成顺序发出，结果消息按源顺序追加；只要有一个工具要求 `sequential`，整批就顺序执行。" +
      "每个调用走同一条管道：找工具 → `prepareArguments` → 校验（第 06 章）→ `beforeToolCall`（可以 block）→ `execute` → " +
      "`afterToolCall`（逐字段覆盖）。找不到的工具、坏参数、被拦下、抛异常、被中止，全都变成模型读得懂的错误结果。" +
      "`length` 回合什么都不执行，请模型重发每个调用；`error`/`aborted` 回合不执行工具并结束运行；全部结果都说 `terminate` 时结束运行。" +
      "steering 消息在整个批次之后注入，follow-up 消息在模型自然停下之后开始新的回合；还有回合上限和中止。" +
      "上游 pi-agent-core 1.6 在流函数或 convertToLlm 抛错时会永远挂起并留下未处理的 rejection，中止后还会再调用一次模型——" +
      "这些正是本章测试点名防守的情形。失败路径本身也不能失败：抛出的东西哪怕没有字符串形式（`Object.create(null)`、" +
      "`toString` 会抛错的对象、每次访问都抛错的 Proxy），工具结果或钩子返回值的 getter 会抛错，也只会变成一条读得懂的错误。" +
      "中止之后，循环不再等待任何用户代码（钩子、队列 getter、工具、模型流、事件 sink），在有限时间内以格式良好的序列结束；" +
      "没有中止时，可以用 `hookTimeoutMs` 给 beforeToolCall/afterToolCall 设上限。同一条消息里两个调用用了同一个 id 时，" +
      "第一个照常执行，重复的那个换成新 id（`<id>_dup1`）并得到一条错误结果——因为提供方不接受重复的 id。" +
      "另有一个 fast-check 性质测试，用两千次带随机故障（包括这些恶意值）的运行检查整套不变式。",
    en:
      "The heart of the library: agentLoop and agentLoopContinue. Turns of model message events and tool batches (parallel " +
      "by default, sequential on request), the per-call pipeline with beforeToolCall/afterToolCall, length/error/aborted " +
      "turns, terminate, steering after a batch, follow-ups after a stop, a turn limit and abort, all with errors as data. " +
      "The failure path is total (hostile thrown values and results), an abort stops all waiting on user code, " +
      "hookTimeoutMs bounds the tool hooks, and a repeated call id is renamed and answered. " +
      "Exact event sequences are tested, and a fast-check property runs 2,000 seeded runs with random faults.",
  },
  files: [
    "src/agent-loop.ts",
    "src/loop-run.ts",
    "src/tool-execution.ts",
    "src/settle.ts",
    "src/loop-input.ts",
    "test/07-agent-loop.property.test.ts",
    "test/07-agent-loop.hardening.test.ts",
  ],
  labs: [
    {
      id: "7.1",
      title: { zh: "回合与循环（runLoop、streamAssistantMessage）", en: "the turn and the loop" },
      hint: {
        zh:
          "`streamAssistantMessage`：先 `modelContext()`（transformContext、convertToLlm，它们抛错就返回一条错误助手消息），" +
          "调用模型前再看一次 signal；读模型流时，第一个事件带来 `message_start`，之后每个非 start 事件一个 `message_update`，" +
          "`done`/`error` 带来 `message_end`；流若没有终结事件就结束，或者抛错，都收尾成错误消息（保留已流出的内容）。" +
          "每次等模型的下一个事件都用 `settle()` 和 signal 赛跑：不理会 signal 的模型不能让中止的运行一直挂着。" +
          "`runLoop`：每个回合先注入待发消息；到了回合上限或已中止，就用一条合成的 error/aborted 消息代替模型调用；" +
          "回合结束后按顺序决定：中止或 terminate → 结束；取 steering → 有就继续；有工具结果 → 继续；取 follow-up → 有就继续，否则结束。" +
          "中止之后一个队列都不要再取（取出来就是出队了，不能丢）。",
        en:
          "streamAssistantMessage: modelContext (hook throws become an error message), check the signal before the call, " +
          "message_start on the first event, one update per event, message_end on done/error; a torn or throwing stream " +
          "becomes an error message; race each read against the signal with settle(). runLoop: inject pending messages, synthesize a message at the turn limit or after an " +
          "abort, then after each turn: abort/terminate end it; steering, tool results or follow-ups continue it.",
      },
    },
    {
      id: "7.2",
      title: { zh: "工具批次：每个调用恰好一个结果（executeToolBatch、prepareCall、runPreparedCall）", en: "tool batches" },
      hint: {
        zh:
          "并行批次：逐个 `tool_execution_start` + 准备（准备失败的调用立刻 `tool_execution_end`），然后用 `Promise.all` 一起执行，" +
          "每个完成时发 `tool_execution_end`，最后按源顺序发结果消息。顺序批次：每个调用准备、执行、结束、发结果之后才轮到下一个。" +
          "执行用 `settle()` 包起来：同步抛错、异步 reject、以及中止（不等不守规矩的工具）都变成结果；" +
          "工具返回的结果用 `readToolResult()` 只读一次、读成普通对象（getter 抛错也只是一条错误结果）；" +
          "`run.repeatedCalls` 里的调用（id 与前一个调用重复，已被改名）不执行，直接回答；" +
          "`onUpdate` 在这个调用的 `tool_execution_end` 之后必须失效。",
        en:
          "Parallel: start and prepare each call in order, run the ready ones together, end each as it finishes, then the " +
          "result messages in source order. Sequential: one call at a time. Wrap execute in settle() (throws, rejections and " +
          "aborts become results), read its result once with readToolResult(), answer run.repeatedCalls without running " +
          "them; onUpdate goes dead at the call's end.",
      },
      // Every run goes through the loop first.
      uses: ["7.1"],
    },
    {
      id: "7.3",
      title: { zh: "钩子（askBeforeToolCall、applyAfterToolCall）", en: "hooks: beforeToolCall and afterToolCall" },
      hint: {
        zh:
          "`beforeToolCall` 看到校验后的参数；`{ block: true, reason }` 把 reason 变成错误结果；钩子抛错是应用的 bug：该调用得到写明钩子名的错误结果（hookThrew），批次里尚未开始的调用不再执行，本轮结束后整个运行以错误消息收尾；" +
          "`beforeToolCall` 执行期间中止了，调用就算中止；`afterToolCall` 执行期间中止，工具已经跑完，保留它自己的结果。`afterToolCall` 逐字段覆盖：没给的字段保留工具自己的值（`content`、`details`、`isError`、`terminate`）。" +
          "钩子的返回值读不出来（getter 抛错、Proxy），或者超过 `hookTimeoutMs` 还没落定，都按钩子抛错处理（`settle()` 的第三个参数，再交给 `hookFailure()`）。",
        en:
          "beforeToolCall sees the validated arguments; a block's reason becomes the error result; a throw (an app bug) becomes an " +
          "error result naming the hook, later calls of the batch are not run, and the run ends; an abort during beforeToolCall answers the call as aborted, one during afterToolCall keeps the tool's own result (it already ran). afterToolCall overrides field by field. " +
          "An answer that cannot be read, or no answer within hookTimeoutMs, counts as a throw.",
      },
      uses: ["7.1"],
    },
  ],
  breakIt: {
    zh:
      "把 `runLoop` 里 steering 之后的那行 `if (run.signal?.aborted) return run.finish();` 删掉，跑 `npm test -- -t \"Lab 7.1\"`：" +
      "哪个测试失败？中止之后又从哪个队列取了消息？这个 bug 是随机故障的浸泡测试（完整仓库里的 `npm run soak`）先找到的，" +
      "之后才有了那条点名的测试。再把 `settle()` 的 signal 参数换成 `undefined`：哪个测试会一直等到超时，为什么？",
    en:
      "Delete the abort check after the steering poll in runLoop and run the Lab 7.1 tests: which fails, and which queue " +
      "was polled after the abort? (The soak found this bug first.) Then pass undefined as settle()'s signal: which test " +
      "waits until its deadline, and why?",
  },
});
