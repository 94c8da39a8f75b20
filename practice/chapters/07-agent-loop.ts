import { defineChapter } from "../catalogue.js";

export default defineChapter({
  id: "07",
  slug: "agent-loop",
  title: { zh: "智能体循环：agentLoop 与 AgentEvent 生命周期", en: "The agent loop and the AgentEvent lifecycle" },
  invariant: {
    zh:
      "每个工具调用在下一次调用模型之前（或运行结束之前）恰好得到一个结果（error/aborted 助手消息里的调用除外：它们既不执行也不回答）；无论哪里抛出异常（模型、convertToLlm、transformContext、" +
      "钩子、队列 getter），运行都以一个格式良好的事件序列结束（错误助手消息、turn_end、agent_end），result() 一定落定，" +
      "没有未处理的 rejection，不会挂起；中止之后不再调用模型，也不再等待任何用户代码。",
    en:
      "Every tool call gets exactly one result before the next model call or the end of the run (except the calls of an " +
      "error or aborted assistant message: never run, never answered); whatever throws (the model, " +
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
      "这些防御不散在循环里，而是集中在一处：`src/agent/guards.ts` 里一个个具名的守卫（除了实验 7.4 自己写的钩子守卫，都已给出），分别包住事件 sink、" +
      "transformContext/convertToLlm、队列 getter、模型流、工具的 execute 和两个工具钩子，`LoopRun` 在运行开始时把它们套上；" +
      "循环本身按 `AgentLoopConfig` 上写明的契约调用它们，只处理守卫给出的几种回答（值、`aborted`、`failed` 及其文字）。" +
      "另有一个 fast-check 性质测试，用两千次带随机故障（包括这些恶意值）的运行检查整套不变式。",
    en:
      "The heart of the library: agentLoop and agentLoopContinue. Turns of model message events and tool batches (parallel " +
      "by default, sequential on request), the per-call pipeline with beforeToolCall/afterToolCall, length/error/aborted " +
      "turns, terminate, steering after a batch, follow-ups after a stop, a turn limit and abort, all with errors as data. " +
      "The failure path is total (hostile thrown values and results), an abort stops all waiting on user code, " +
      "hookTimeoutMs bounds the tool hooks, and a repeated call id is renamed and answered. " +
      "Those defences stand in one place, the named guards of src/agent/guards.ts (given, except the hooks' guard that Lab 7.4 writes), which LoopRun wraps around the " +
      "sink, the context hooks, the queue getters, the model stream, each tool and the tool hooks; the loop calls them " +
      "under their contracts and handles only the guards' answers (a value, aborted, failed with its text). " +
      "Exact event sequences are tested, and a fast-check property runs 2,000 seeded runs with random faults.",
  },
  files: [
    "src/agent/types.ts",
    "src/agent/agent-loop.ts",
    "src/agent/loop-run.ts",
    "src/agent/tool-execution.ts",
    "src/agent/tool-middleware.ts",
    "src/agent/settle.ts",
    "src/agent/guards.ts",
    "test/07-agent-loop.property.test.ts",
    "test/07-agent-loop.hardening.test.ts",
  ],
  labs: [
    {
      id: "7.1",
      says: ["convertToLlm failed: ${message}", "transformContext failed: ${message}"],
      title: { zh: "一个回合（streamAssistantMessage）", en: "one turn: streamAssistantMessage" },
      hint: {
        zh: [
          "这个实验的测试单独跑一个回合：测试文件自带一个最小的循环（`oneTurn`），只调用你的 `streamAssistantMessage`，所以写完这一个函数就能变绿，不必先写 `runLoop`。",
          "1. 先 `await run.modelContext()`（它调用 transformContext、convertToLlm；抛出的错误已经写成 `convertToLlm failed: …` 这样的文字）：抛错就返回一条错误助手消息，错误文字就是抛出的消息；此时若已中止，改为 aborted 消息 `ABORTED_BEFORE_MODEL`。",
          "2. 调用模型前再看一次 signal。",
          "3. 读模型流：第一个事件（不论类型）之前发 `message_start`（消息就是事件的 partial），之后每个非 start 事件发一个 `message_update`，`done`/`error` 交给 `reportFinal`（它发 `message_end` 并记录消息）。",
          "4. 模型流用已给出的守卫 `openModelStream(model, context, signal)` 打开：它的 `next()` 和 `result()` 与 signal 赛跑，中止之后不再等一个不理会 signal 的模型，返回 undefined（并已停止读流），回合以 `ABORTED_WHILE_ANSWERING` 结束；第一个事件的 partial 先交给 `checkedPartial()`。",
          "5. `stream()` 或读流时抛错，调用 `stream.stop()`，收尾成 `The model failed: <消息>`",
          "6. 流没有终结事件就结束，用 `stream.result()` 的结果，它也失败就同样收尾",
          "7. `reportFailure` 会保留已经流出的内容。",
        ].join("\n"),
        en: [
          "Its tests run one turn alone (the test file's own minimal loop, `oneTurn`, calls only your function), so it goes green before runLoop exists.",
          "1. modelContext() (a throw becomes an error message with the thrown text; aborted if the signal is)",
          "2. check the signal before the call",
          "3. message_start before the first event",
          "4. one message_update per other event",
          "5. done/error to reportFinal",
          "6. a throwing or torn stream becomes `The model failed: …` keeping the partial.",
          "7. Open the stream with the guard openModelStream(): its next() and result() give undefined once the signal is aborted",
          "8. check the first partial with checkedPartial().",
        ].join("\n"),
      },
    },
    {
      id: "7.2",
      says: [
        "getSteeringMessages failed: ${message}",
        "getFollowUpMessages failed: ${message}",
        "agentLoop: no prompts, and the transcript ends with an assistant message …",
      ],
      title: { zh: "循环控制（runLoop）", en: "loop control: runLoop" },
      hint: {
        zh: [
          '`runLoop` 自己发 `agent_start`（只发一次），然后一个回合接一个回合：`turn_start`，用 `run.add()` 注入待发消息；已中止就用 `run.failure("aborted", ABORTED_BEFORE_MODEL)` 加 `run.add()` 代替模型调用，否则先 `run.turns++` 再调用 `streamAssistantMessage`（`run.turns` 只数真正的模型调用）。结束用 `run.finish()`。`poll`、`turnLimitReached`、`ABORTED_BEFORE_MODEL` 都已给出。`runLoop` 抛出的异常由已给出的 `LoopRun` 收尾成 `The agent loop failed: …`。回合之后按这个顺序决定：',
          "1. 助手消息是 error/aborted：`run.endTurn(message, [])`，结束运行，不执行其中的工具调用；",
          "2. 有工具调用：`length` 回合交给 `refuseTruncatedCalls`，否则交给 `executeToolBatch`（实验 7.3），结果用 `run.recordResults()` 记下；然后 `run.endTurn(message, results)`；",
          "3. 批次报告了 hookFailure：`run.fail(hookFailure)`；",
          "4. 已中止，或全部结果都说 terminate：结束；",
          "5. `run.turns >= maxTurns`（默认 `DEFAULT_MAX_TURNS`）：这就是最后一个回合，不再取任何队列；有工具调用时把 `turnLimitReached(...)` 交给 `run.finish()`，它会出现在 `agent_end.errorMessage` 上，没有就直接结束——不为上限另开一个回合；",
          '6. `poll(run, "getSteeringMessages")`：返回 undefined 说明运行已经以错误结束，直接 return；有消息就带着它们进入下一回合（即使刚刚中止：取出来就是出队了，不能丢）；',
          "7. 已中止：结束；",
          "8. 有工具结果：继续；",
          "9. 取 follow-up：有就继续，没有就结束。",
        ].join("\n"),
        en: [
          "runLoop sends agent_start itself and counts run.turns (model calls only). Each turn: turn_start, inject pending messages with run.add(), an aborted message instead of the model after an abort, else run.turns++ and streamAssistantMessage. Then, in order:",
          "1. error/aborted → end;",
          "2. calls → refuseTruncatedCalls (length) or executeToolBatch (Lab 7.3), recordResults, endTurn;",
          "3. hookFailure → run.fail;",
          "4. aborted or unanimous terminate → end;",
          "5. at maxTurns → end, polling nothing, with turnLimitReached(...) on agent_end when there were calls (no extra turn);",
          "6. steering → next turn;",
          "7. aborted → end;",
          "8. tool results → next turn;",
          "9. follow-ups → next turn, else end.",
        ].join("\n"),
      },
    },
    {
      id: "7.3",
      title: {
        zh: "工具批次：每个调用恰好一个结果（executeToolBatch、prepareCall、runPreparedCall）",
        en: "tool batches",
      },
      hint: {
        zh: [
          '1. 事件顺序见测试 “a "read main.ts" run”：一次工具调用再一次回答，恰好 19 个事件（agent_start、turn_start、用户消息两个、助手消息的 start/update/update/end、tool_execution_start/end、结果消息两个、turn_end、第二回合的 turn_start 与助手消息四个事件、turn_end、agent_end）。',
          "2. 并行批次：逐个 `tool_execution_start` + 准备（准备失败的调用立刻 `tool_execution_end`），然后用 `Promise.all` 一起执行，每个完成时发 `tool_execution_end`，最后按源顺序发结果消息。",
          "3. 顺序批次：每个调用准备、执行、结束、发结果之后才轮到下一个。",
          '4. 准备：中止了就 `abortedCall`；批次已有 hookFailure 就回答 `Tool call "<名字>" was not executed: the run is ending (<hookFailure>).`',
          '5. `run.repeatedCalls` 里的调用（id 重复、已被改名）不执行，回答 `Tool call "<名字>" was not executed: its id "<原 id>" was already used by an earlier call in the same message, so it was renamed "<新 id>". Every call needs its own id; re-issue this call if it is still needed.`',
          '6. 找不到工具回答 `Tool "<名字>" not found. Available tools: <逗号分隔的名字，没有就是 (none)>.`；再 `prepareToolArguments`（第 06 章），最后 `askBeforeToolCall`——没有设置钩子时它直接返回 undefined，所以每个调用都可以调用它（实验 7.4 才写钩子本身）。',
          '7. 执行交给已给出的守卫 `runGuardedTool()`：同步抛错、异步 reject、读不出来的结果（`Tool "<名字>" <原因>`）都是 `failed` 及其文字，中止（不等不守规矩的工具）是 `aborted`，否则是只读一次、成了纯数据的结果 `done`；然后交给 `applyAfterToolCall`（没有钩子时原样返回）。',
          "8. `onUpdate` 在这个调用的 `tool_execution_end` 之后必须失效。",
          "9. 结果里的 `isError: false`、`terminate: false` 写不写都可以。",
        ].join("\n"),
        en: [
          "1. Parallel: start and prepare each call in order, run the ready ones together, end each as it finishes, then the result messages in source order.",
          "2. Sequential: one call at a time.",
          "3. The exact texts for a call not run (run ending, repeated id, unknown tool) are in the Chinese hint.",
          "4. askBeforeToolCall and applyAfterToolCall return at once when no hook is set, so call them for every call.",
          "5. Run execute through the guard runGuardedTool() (failed, aborted, or the result read once as plain data)",
          "6. onUpdate goes dead at the call's end.",
        ].join("\n"),
      },
      // Every run goes through the loop first.
      uses: ["7.2"],
    },
    {
      id: "7.4",
      title: {
        zh: "钩子与它们的守卫（guardToolHooks、askBeforeToolCall、applyAfterToolCall）",
        en: "hooks and their guard: beforeToolCall and afterToolCall",
      },
      hint: {
        zh: [
          '1. `beforeToolCall` 看到校验后的参数；`{ block: true, reason }` 把 reason 变成错误结果（没有 reason 时是 `Tool call "<名字>" was blocked.`）。',
          "2. 本章的防御都是 `src/agent/guards.ts` 里的具名守卫，前几个实验直接用；这个实验自己写一个：`guardToolHooks` 把两个钩子包成 `run.hooks.before` / `run.hooks.after`，回答只有三种——`value`（已读成纯数据）、`aborted`、`failed`（附运行结束时用的文字）。",
          "3. 守卫里用 `settle(() => hook(ctx, signal), signal, hookTimeoutMs)` 调用钩子，只在 try 里读一次它的回答（`block`、`reason`；`afterToolCall` 的回答交给已给出的 `readOverride`），失败的文字用已给出的 `failed()` 写。",
          '4. 然后在 tool-execution.ts 里只按这三种回答处理：钩子抛错是应用的 bug：`failed` 带着该调用的错误结果文字（`beforeToolCall failed for "<名字>": <消息>`），并用 `hookThrew()` 记在批次上：同一批次里在它之后才准备的调用不再执行，回答 `…the run is ending (…)`；已经准备好的调用（并行批次里排在它前面、等着一起执行的）照常执行。本回合结束后整个运行以同样文字的错误消息收尾。',
          "5. `beforeToolCall` 执行期间中止了，调用就算中止；`afterToolCall` 执行期间中止，工具已经跑完，保留它自己的结果。",
          "6. `afterToolCall` 逐字段覆盖：没给的字段保留工具自己的值（`content`、`details`、`isError`、`terminate`）。",
          "7. 钩子的返回值读不出来（getter 抛错、Proxy），或者超过 `hookTimeoutMs` 还没落定，守卫都按钩子抛错处理，同样是 `failed`。",
          "8. 本实验最后一个测试是性质测试：两千次带随机故障的运行；失败时它打印 `{ seed, path }`，按测试文件开头的说明可以只重放那一个例子。",
        ].join("\n"),
        en: [
          "1. The chapter's defences are named guards in src/agent/guards.ts, used as given by the other labs; this lab writes one: guardToolHooks wraps both hooks as run.hooks.before/after (settle with the signal and hookTimeoutMs, the answer read once in a try, readOverride and failed() given), answering value (read as plain data), aborted or failed.",
          "2. Then the batch handles only those answers.",
          "3. beforeToolCall sees the validated arguments; a block's reason becomes the error result",
          "4. a throw (an app bug) is failed, with the call's error text, recorded with hookThrew(): calls of the batch prepared after it are answered without running (calls already prepared still run), and the run ends with the same text",
          "5. an abort during beforeToolCall answers the call as aborted, one during afterToolCall keeps the tool's own result (it already ran).",
          "6. afterToolCall overrides field by field.",
          "7. An answer that cannot be read, or no answer within hookTimeoutMs, is failed too.",
          "8. The property test comes last; its file says how to replay a failing seed and path.",
        ].join("\n"),
      },
      uses: ["7.2"],
    },
  ],
  wrong: [
    {
      lab: "7.2",
      what: "errors mis-worded: a turn that starts after an abort ends as aborted with no errorMessage",
      file: "src/agent/agent-loop.ts",
      find: '      message = run.failure("aborted", "The run was aborted before the model was called.");',
      replace: '      message = run.failure("aborted", "");',
      failsWith: "The run was aborted before the model was called.",
    },
    {
      lab: "7.3",
      what: "a context without a tools list: the unknown-tool answer reads tools! and throws inside prepareCall",
      file: "src/agent/tool-execution.ts",
      find: "(run.context.tools ?? []).map((t) => t.name)",
      replace: "run.context.tools!.map((t) => t.name)",
      failsWith: "tool c1 started but never ended",
    },
    {
      lab: "7.2",
      what: "break it, step 1: no abort check after the steering poll in runLoop",
      file: "src/agent/agent-loop.ts",
      find: "      continue;\n    }\n    if (run.signal?.aborted) return run.finish();\n",
      replace: "      continue;\n    }\n",
      failsWith: "polled after the abort",
    },
    {
      lab: "7.3",
      what: "break it, step 2: runGuardedTool settles the tool without the run's signal",
      file: "src/agent/guards.ts",
      find: "  const executed = await settle(execute, signal);",
      replace: "  const executed = await settle(execute, undefined);",
      failsWith: "the run did not end within",
    },
    {
      lab: "7.1",
      what: "a message_update for the start event too",
      file: "src/agent/agent-loop.ts",
      find: '      if (event.type !== "start") {\n        const emitted',
      replace: "      {\n        const emitted",
      failsWith: "message_update",
    },
    {
      lab: "7.1",
      what: "a failing transformContext/convertToLlm reported as the model's failure",
      file: "src/agent/agent-loop.ts",
      find: "    return reportFailure(run, undefined, messageOf(error));\n  }",
      replace: "    return reportFailure(run, undefined, `The model failed: ${messageOf(error)}`);\n  }",
      failsWith: "convertToLlm failed",
    },
    {
      lab: "7.1",
      what: "a failed stream's partial dropped from the error message",
      file: "src/agent/agent-loop.ts",
      find: "    return reportFailure(run, started, `The model failed: ${messageOf(error)}`);",
      replace: "    return reportFailure(run, undefined, `The model failed: ${messageOf(error)}`);",
      failsWith: "messages nest",
    },
    {
      lab: "7.1",
      what: "a throw from the model left to the loop's catch-all (no stop, no error message of the turn)",
      file: "src/agent/agent-loop.ts",
      find: "  } catch (error) {\n    stream?.stop();\n    return reportFailure(run, started, `The model failed: ${messageOf(error)}`);",
      replace:
        "  } catch (error) {\n    throw error;\n    return reportFailure(run, started, `The model failed: ${messageOf(error)}`);",
      failsWith: "messages nest",
    },
    {
      lab: "7.2",
      what: "the config's maxTurns ignored: the default always wins",
      file: "src/agent/agent-loop.ts",
      find: "  const maxTurns = run.config.maxTurns ?? DEFAULT_MAX_TURNS;",
      replace: "  const maxTurns = DEFAULT_MAX_TURNS;",
      failsWith: "turn",
    },
    {
      lab: "7.2",
      what: "the turn limit off by one: one model call more than maxTurns",
      file: "src/agent/agent-loop.ts",
      find: "    if (run.turns >= maxTurns) return run.finish(",
      replace: "    if (run.turns > maxTurns) return run.finish(",
      failsWith: "turn",
    },
    {
      lab: "7.2",
      what: "an error turn does not end the run (only an aborted one does)",
      file: "src/agent/agent-loop.ts",
      find: '    if (message.stopReason === "error" || message.stopReason === "aborted") {\n      await run.endTurn(message, []);',
      replace: '    if (message.stopReason === "aborted") {\n      await run.endTurn(message, []);',
      failsWith: "error",
    },
    {
      lab: "7.2",
      what: "the turn limit checked after the steering poll: a steering message is dequeued after the last allowed turn",
      file: "src/agent/agent-loop.ts",
      find: '    if (run.turns >= maxTurns) return run.finish(calls.length > 0 ? turnLimitReached(run.turns, maxTurns) : undefined);\n    const steering = await run.steering();\n    if (typeof steering === "string") return run.fail(steering);',
      replace:
        '    const steering = await run.steering();\n    if (typeof steering === "string") return run.fail(steering);\n    if (run.turns >= maxTurns) return run.finish(calls.length > 0 ? turnLimitReached(run.turns, maxTurns) : undefined);',
      failsWith: "polled after the last allowed turn",
    },
    {
      lab: "7.3",
      what: "an unknown tool's answer names only the first tool",
      file: "src/agent/tool-execution.ts",
      find: '    const names = (run.context.tools ?? []).map((t) => t.name).join(", ") || "(none)";',
      replace: '    const names = run.context.tools?.[0]?.name ?? "(none)";',
      failsWith: "Available tools",
    },
    {
      lab: "7.3",
      what: "parallel results appended in completion order, not source order",
      file: "src/agent/tool-execution.ts",
      find: '      prepared.map(async (one) => {\n        if (one.kind === "answered") return one;\n        const done = await runPreparedCall(run, batch, one);\n        await emitEnd(run, done);\n        return done;\n      }),\n    );\n    for (const done of settled) {\n      finished.push(done);\n      results.push(await emitResult(run, done));\n    }',
      replace:
        '      prepared.map(async (one) => {\n        const done = one.kind === "answered" ? one : await runPreparedCall(run, batch, one);\n        if (one.kind !== "answered") await emitEnd(run, done);\n        finished.push(done);\n        results.push(await emitResult(run, done));\n        return done;\n      }),\n    );\n    void settled;',
      failsWith: "toolResult",
    },
    {
      lab: "7.3",
      what: "a batch sequential only when every tool asks for it",
      file: "src/agent/tool-execution.ts",
      find: '    calls.some((call) => findTool(run.context, call.name)?.executionMode === "sequential");',
      replace: '    calls.every((call) => findTool(run.context, call.name)?.executionMode === "sequential");',
      failsWith: "tool_execution_start:c3",
    },
    {
      lab: "7.3",
      what: "onUpdate never closed: updates after the call's tool_execution_end still emitted",
      file: "src/agent/tool-execution.ts",
      find: "  open = false;\n  await Promise.all(updates);",
      replace: "  await Promise.all(updates);",
      failsWith: "tool_execution_update",
    },
    {
      lab: "7.3",
      what: "one terminate result ends the run (some, where every was meant)",
      file: "src/agent/tool-execution.ts",
      find: "finished.every((done) => done.result.terminate === true);",
      replace: "finished.some((done) => done.result.terminate === true);",
      failsWith: "turn_start",
    },
    {
      lab: "7.4",
      what: "a block without a reason read as no block: the call runs",
      file: "src/agent/guards.ts",
      find: '        if (outcome.value?.block !== true) return { kind: "value", value: undefined };\n        const reason: unknown = outcome.value.reason;\n        return { kind: "value", value: typeof reason === "string" ? reason : null };',
      replace:
        '        if (outcome.value?.block !== true) return { kind: "value", value: undefined };\n        const reason: unknown = outcome.value.reason;\n        return { kind: "value", value: typeof reason === "string" ? reason : undefined };',
      failsWith: "read c1 a",
    },
    {
      lab: "7.4",
      what: "afterToolCall's override replaces details even when it leaves them out",
      file: "src/agent/tool-execution.ts",
      find: '    details: "details" in override ? override.details : done.result.details,',
      replace: "    details: override.details,",
      failsWith: '"n": 1',
    },
    {
      lab: "7.4",
      what: "an abort during afterToolCall answers the call as aborted, though the tool already ran",
      file: "src/agent/tool-execution.ts",
      find: '  if (answer.kind === "aborted") return done;',
      replace: '  if (answer.kind === "aborted") return abortedCall(call);',
      failsWith: "abort",
    },
    {
      lab: "7.4",
      what: "a throwing beforeToolCall answers its call but is not recorded: the run goes on",
      file: "src/agent/tool-execution.ts",
      find: '  if (answer.kind === "failed") return hookThrew(batch, call, answer.failure);\n  if (answer.value === undefined) return undefined;',
      replace:
        '  if (answer.kind === "failed") return answered(call, answer.failure);\n  if (answer.value === undefined) return undefined;',
      failsWith: "beforeToolCall failed",
    },
  ],
  breakIt: {
    zh:
      '把 `runLoop` 里 steering 之后的那行 `if (run.signal?.aborted) return run.finish();` 删掉，跑 `npx vitest run test/07- -t "Lab 7\\.2\\b"`：' +
      "哪个测试失败？中止之后又从哪个队列取了消息？这个 bug 是随机故障的浸泡测试（完整仓库里的 `npm run soak`）先找到的，" +
      "之后才有了那条点名的测试。再把 guards.ts 里 `runGuardedTool` 调用 `settle()` 时的 signal 参数换成 `undefined`：哪个测试会一直等到超时，为什么？",
    en:
      "Delete the abort check after the steering poll in runLoop and run the Lab 7.2 tests: which fails, and which queue " +
      "was polled after the abort? (The soak found this bug first.) Then pass undefined as settle()'s signal in runGuardedTool (guards.ts): which test " +
      "waits until its deadline, and why?",
  },
});
