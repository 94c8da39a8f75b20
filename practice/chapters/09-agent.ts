import { defineChapter } from "../catalogue.js";

export default defineChapter({
  id: "09",
  slug: "agent",
  title: {
    zh: "有状态的 Agent：状态、订阅、steer、follow-up 与中止",
    en: "The stateful Agent: state, subscribe, steer, follow-up, abort",
  },
  invariant: {
    zh:
      "同一时刻只有一个 run；状态先吸收事件、监听器后看到事件；空闲之后 state.messages 恰好是各次 run 新增消息的拼接，" +
      "每个工具调用恰好一个结果，没有挂起的调用；排队的消息不丢也不重：要么已注入对话，要么还在队列里；" +
      "监听器抛错会让 run 干净地结束并被报告出来，从不被默默吞掉。",
    en:
      "One run at a time; the state takes each event in before any listener sees it; once idle, state.messages is exactly " +
      "the runs' new messages concatenated, every tool call has one result and none is pending; a queued message is never " +
      "lost nor doubled (injected, or still queued); a throwing listener ends the run cleanly and is reported, never swallowed.",
  },
  adds: {
    zh:
      "第 07 章的循环每次从零开始：调用方自己保管对话、自己排队、自己处理中止。库的使用者更常用的是上面那一层——" +
      "pi-agent-core 的 `Agent` 类：`new Agent({ initialState: { systemPrompt, model, tools } })` 保管对话，" +
      '`prompt("…")` 跑一次循环，`agent.state` 给出只读快照（`messages`、`isStreaming`、`streamingMessage`、' +
      "`pendingToolCalls`、`errorMessage`），`subscribe(listener)` 按订阅顺序逐个 await 监听器（慢的监听器会拖慢整个 run，这是背压），" +
      "`steer()` 在当前工具批次之后插话，`followUp()` 等模型本来要停下时再接着说，`abort()` 停掉当前 run，" +
      "`continue()` 从对话末尾接着跑，`waitForIdle()` 等到空闲。本章分三步搭起来：先写把事件折叠进状态的 reducer，" +
      "再写两个消息队列，最后写一次 run 的生命周期（开始、把每个事件先交给 reducer 再交给监听器、结束时回到空闲）。" +
      "上游 pi 1.6 在这里有几个真 bug：一个抛错的监听器会让后面的监听器收不到事件（#8025），" +
      "被循环取出但还没注入的 steering 消息遇到中止会丢（下游 fork 报告过）——本章的测试点名防守这些情形，" +
      "另有一个 fast-check 性质测试，在随机时刻（包括监听器内部）发 prompt、steer、follow-up 和中止，检查整套不变式。",
    en:
      "The class library users build on: an Agent that owns the transcript, runs one loop at a time, reduces every event " +
      "into a read-only state before awaiting its listeners in order, queues steering (after the tool batch) and follow-ups " +
      "(when the model would stop), aborts, continues and waits for idle. Three labs: the reducer, the queues, the run " +
      "lifecycle. Named tests defend upstream bugs (#8025, lost steering on abort); a fast-check property drives random lives.",
  },
  files: [
    "src/agent/agent.ts",
    "src/agent/agent-state.ts",
    "src/agent/agent-queue.ts",
    "src/agent/agent-run.ts",
    "test/09-agent.property.test.ts",
  ],
  labs: [
    {
      id: "9.1",
      title: { zh: "reducer：把循环事件折叠进状态（reduceAgentEvent）", en: "the reducer" },
      says: [
        'The turn ended with stopReason "${stopReason}".   (the errorMessage of a failed turn whose message carries none)',
      ],
      hint: {
        zh: [
          "1. `message_start`（只对助手消息）和 `message_update` 设置 `streamingMessage`",
          "2. `message_end` 清掉它并把消息追加进 `messages`",
          "3. `tool_execution_start`/`end` 增删 `pendingToolCalls` 里的 id——每次都换一个新的 Set，旧快照手里的那个不能变",
          '4. 失败回合（`error`/`aborted`）的 `turn_end` 记下 `errorMessage`（消息没带 errorMessage 时写 `The turn ended with stopReason "aborted".` 这样的一句）',
          "5. `agent_end` 清掉 `streamingMessage`，它若带着 `errorMessage`（例如到了回合上限）也记下，不带就保留原来的。",
          "6. 不在运行中的调用发来的 `tool_execution_update` 返回 false：它既不进状态，也不交给监听器。",
          "7. 不在运行中的调用的 `tool_execution_end` 照常返回 true，`pendingToolCalls` 保持原来那个 Set。",
        ].join("\n"),
        en: [
          "1. message_start (assistant) and message_update set streamingMessage",
          "2. message_end clears it and appends the message",
          "3. tool starts/ends add/remove ids in a NEW set each time",
          '4. a failed turn_end sets errorMessage (without one on the message: The turn ended with stopReason "<reason>".)',
          "5. agent_end clears the streaming message and, when it carries an errorMessage (the turn limit), sets errorMessage (else keeps it).",
          "6. An update for a call that is not running returns false.",
          "7. An end for a call that is not running returns true and keeps the same set.",
        ].join("\n"),
      },
    },
    {
      id: "9.2",
      title: { zh: "两个队列：一次取一条，或者全部取走（MessageQueue.take）", en: "the queues" },
      hint: {
        zh:
          "`one-at-a-time` 每次只取最老的一条，其余保持顺序继续等；`all` 一次全部取走。取走就是出队：取出的消息归循环所有，" +
          "循环会把它注入对话（哪怕中止紧跟着就来了），所以队列要忘掉它。用一个 head 下标代替 `shift()`，让每条消息的进出都是摊还 O(1)，" +
          "取走的槽位多于等待的消息时再压缩数组。",
        en:
          "one-at-a-time takes the oldest message, all takes everything; taking is dequeuing. Use a head index instead of " +
          "shift() so each message costs O(1) amortised, and compact once the taken slots outnumber the waiting ones.",
      },
    },
    {
      id: "9.3",
      says: [
        "convertToLlm failed: ${message}   (errorMessage of a run whose convertToLlm threw)",
        'A listener threw on "${event}": ${message}${more}. The run was stopped and ended cleanly; fix the listener, or catch inside it what it may throw.   (AgentListenerError, already written in agent-run.ts)',
        "${name} failed: ${message}   (convertToLlm / transformContext throwing: the loop of chapter 07 ends the run with this errorMessage)",
      ],
      title: { zh: "一次 run 的生命周期（AgentRun.execute、AgentRun.deliver）", en: "the run lifecycle" },
      hint: {
        zh: [
          "1. `execute`：设 `isStreaming`、清掉上次的 `errorMessage`",
          "2. 每次改了 draft 都调用 `this.host.changed(…)`（`agent.state` 是缓存的快照，不调用它就看不到变化；参数表示对话本身是否变了：只有 `message_end` 传 true，`agent.state.messages` 才换成新数组，运行的开始和结束都传 false）",
          "3. 用对话的副本启动循环，事件接收端用已经写好的 `inOrder`，写成 `(event) => this.inOrder(event)`（直接传 `this.inOrder` 也能通过类型检查，但 `this` 丢了，每个 9.3 测试都会栈溢出；它按顺序调用 `deliver`：中止之后循环不再等待接收端，事件就排在仍在进行的投递后面）",
          "4. 循环结束后再 `await this.delivered`，等最后的投递（包括 `agent_end`）送完",
          "5. 无论循环怎么结束，`finally` 里都要回到空闲（`isStreaming` 置 false、`host.finished(this)`、兑现 `idle`）",
          "6. 然后，如果有监听器抛过错，就用 `AgentListenerError` 让 `prompt()` reject，并把它写进 `errorMessage`。",
          "7. `deliver`：先交给 reducer（返回 false 就到此为止），再按顺序调用每个监听器",
          "8. 同步返回的就接着下一个，返回 promise 的就转到 `deliverRest` 逐个 await。",
          "9. 监听器抛错时记下来、像 `abort()` 一样停掉 run，但后面的监听器照样收到这个事件。",
        ].join("\n"),
        en: [
          "1. execute: mark streaming and call this.host.changed(…) after each change of the draft (agent.state is a cached snapshot; its argument says whether the transcript changed: true only at message_end, so state.messages is a new array only then)",
          "2. start the loop on a copy of the transcript with the given inOrder as its sink, bound: (event) => this.inOrder(event) (passing this.inOrder typechecks but loses this) (deliver, one event after the other, also once the loop stops waiting after an abort)",
          "3. then await this.delivered",
          "4. whatever happens return to idle in finally",
          "5. then reject with an AgentListenerError if a listener threw.",
          "6. deliver: reduce first, then each listener in order (await those that return a promise)",
          "7. a throw is recorded and aborts the run, and the later listeners still get the event.",
        ].join("\n"),
      },
    },
  ],
  wrong: [
    {
      lab: "9.1",
      what: "streamingMessage set by any message_start, a user message's too",
      file: "src/agent/agent-state.ts",
      find: '      if (event.message.role === "assistant") state.streamingMessage = event.message;',
      replace: "      state.streamingMessage = event.message;",
      failsWith: "to deeply equal [ 'agent_start -'",
    },
    {
      lab: "9.1",
      what: "pendingToolCalls changed in place instead of replaced by a new set",
      file: "src/agent/agent-state.ts",
      find: "      const pending = new Set(state.pendingToolCalls);\n      pending.add(event.toolCallId);\n      state.pendingToolCalls = pending;",
      replace: "      state.pendingToolCalls.add(event.toolCallId);",
      failsWith: "expected [ 'a', 'b' ] to deeply equal [ 'a' ]",
    },
    {
      lab: "9.1",
      what: "a tool_execution_update of a call that is not running accepted",
      file: "src/agent/agent-state.ts",
      find: "      return state.pendingToolCalls.has(event.toolCallId);",
      replace: "      return true;",
      failsWith: "expected true to be false",
    },
    {
      lab: "9.1",
      what: "a good turn_end clears the errorMessage an earlier failed turn of the run set",
      file: "src/agent/agent-state.ts",
      find: '          event.message.errorMessage ?? `The turn ended with stopReason "${event.message.stopReason}".`;\n      }',
      replace:
        '          event.message.errorMessage ?? `The turn ended with stopReason "${event.message.stopReason}".`;\n      } else {\n        state.errorMessage = undefined;\n      }',
      failsWith: "expected undefined to be 'boom'",
    },
    {
      lab: "9.1",
      what: "an agent_end without errorMessage clears the one the run had",
      file: "src/agent/agent-state.ts",
      find: "      if (event.errorMessage !== undefined) state.errorMessage = event.errorMessage;",
      replace: "      state.errorMessage = event.errorMessage;",
      failsWith: "expected undefined to be 'Turn limit reached",
    },
    {
      lab: "9.2",
      what: "one-at-a-time ignored: every waiting message taken at each poll",
      file: "src/agent/agent-queue.ts",
      find: '    if (this.mode === "all" || waiting === 1) {',
      replace: "    if (this.mode !== undefined || waiting === 1) {",
      failsWith: "expected [ { role: 'user', \u2026(2) }, \u2026(2) ] to deeply equal [ { role: 'user', \u2026(2) } ]",
    },
    {
      lab: "9.2",
      what: "all mode takes the oldest message only",
      file: "src/agent/agent-queue.ts",
      find: '    if (this.mode === "all" || waiting === 1) {',
      replace: "    if (waiting === 1) {",
      failsWith: "expected [ { role: 'user', \u2026(2) } ] to deeply equal [ { role: 'user', \u2026(2) }, \u2026(2) ]",
    },
    {
      lab: "9.2",
      what: "compaction off by one: the oldest waiting message dropped with the taken ones",
      file: "src/agent/agent-queue.ts",
      find: "      this.items = this.items.slice(this.head);\n      this.head = 0;\n    }\n    return [oldest];",
      replace: "      this.items = this.items.slice(this.head + 1);\n      this.head = 0;\n    }\n    return [oldest];",
      failsWith: "to deeply equal [ { role: 'user', \u2026(2) } ]",
    },
    {
      lab: "9.2",
      what: "all mode after one-at-a-time polls hands back the whole array, the slots already taken too",
      file: "src/agent/agent-queue.ts",
      find: "      const taken = this.head === 0 ? this.items : this.items.slice(this.head);",
      replace: "      const taken = this.items;",
      failsWith: "expected [ undefined, \u2026(3) ]",
    },
    {
      lab: "9.3",
      what: "the run's end never sets isStreaming back to false",
      file: "src/agent/agent-run.ts",
      find: "draft.isStreaming = false;\n      draft.streamingMessage = undefined;",
      replace: "draft.streamingMessage = undefined;",
      failsWith: "agent.state.isStreaming is still true after waitForIdle() resolved",
    },
    {
      lab: "9.3",
      what: "break it, step 1: deliver returns after a listener's throw (upstream #8025): later listeners miss the event",
      file: "src/agent/agent-run.ts",
      find: "        this.listenerFailed(event, error);\n        continue;",
      replace: "        this.listenerFailed(event, error);\n        return;",
      failsWith: "the events a listener received break the loop's grammar",
    },
    {
      lab: "9.3",
      what: "break it, step 2: one-at-a-time take returns the oldest message and drops the rest",
      file: "src/agent/agent-queue.ts",
      find:
        "    const oldest = this.items[this.head]!;\n" +
        "    this.items[this.head] = undefined as never; // let it be collected\n" +
        "    this.head++;",
      replace: "    const oldest = this.items[this.head]!;\n    this.items = [];\n    this.head = 0;",
      failsWith: "found 0 times",
    },
  ],
  breakIt: {
    zh:
      '把 `AgentRun.deliver` 里监听器抛错后的 `continue` 改成 `return`（上游 #8025 的行为），跑 `npx vitest run test/09- -t "Lab 9\\.3\\b"`：' +
      "哪个具名测试先失败？性质测试又给出了多小的反例？再把 `MessageQueue.take` 的 one-at-a-time 分支改成取出最老的一条后清空整个队列：" +
      '性质测试报告哪条排队的消息"出现了 0 次"？',
    en:
      "In AgentRun.deliver, turn the `continue` after a listener's throw into `return` (upstream #8025) and run the Lab 9.3 " +
      "tests: which named test fails, and how small is the property's counterexample? Then make one-at-a-time take the oldest " +
      "message and drop the rest: which queued message does the property find 0 times?",
  },
});
