import { defineChapter } from "../catalogue.js";

export default defineChapter({
  id: "11",
  slug: "context",
  title: {
    zh: "上下文预算：历史不动，每次按预算重建上下文",
    en: "The context budget: history stays, the context is rebuilt",
  },
  invariant: {
    zh:
      "投影要么放得进预算，要么用数据说明为什么放不进；只按整段交互从最旧的开始丢，工具调用永远不和它的结果分开，" +
      "上下文永远不以工具结果开头，系统提示和最新的用户消息永远保留；同样的输入给出同样的输出。压缩只追加一条条目，历史一行不改。",
    en:
      "A projection fits its budget or says why as data; it drops whole interactions from the oldest, never separates a " +
      "tool call from its result, never starts with a tool result, always keeps the system prompt and the newest user " +
      "message, and is stable. Compaction appends one entry and never rewrites history.",
  },
  adds: {
    zh:
      "会话越长，模型的上下文窗口越装不下。本章不删历史，而是在每次调用模型之前从会话路径重建它看到的上下文：" +
      "`groupInteractions` 把对话切成「交互」——从一条用户消息到下一条，中间的助手回合、工具调用和结果、自定义消息都在里面；" +
      "调用和结果按 `toolCallId` 配对，并行调用的结果哪怕乱序到达也一样，孤儿结果、重复结果、回答了失败回合的结果都直接拒绝（供应商也会拒绝）。" +
      "`projectMessages` 用可插拔的估算器（默认：字符数/4，再用最新一条可信助手消息的真实 usage 校准）从最旧的交互开始整段丢弃，" +
      "直到放进 `budget`；最新的交互放不下时不偷偷截断，而是在 `overflow` 里写明差多少、该怎么办。" +
      "`transcriptOf` 读出一条路径的消息：有压缩条目时，最新那条的摘要（作为用户消息）代替它之前的一切，再接上 `firstKeptEntryId` 之后的条目。" +
      "`compact` 让模型写一份结构化摘要（目标、约束、进度、决定、文件、未完成的事、下一步），在不会拆开调用与结果的位置切开，" +
      "追加一条 `compaction` 条目；摘要失败（出错、被 length 截断、回答里有工具调用）什么都不追加，并说明原因。" +
      "上游 pi 在多次压缩之后曾留下没有调用的孤儿工具结果，导致供应商一直返回 400（#1764、#4189、#6832）——本章的性质测试专门守这一点。" +
      "最后把这些接进第 09 章的 `Agent`：`session` 选项让它从会话路径恢复、把每条 `message_end` 追加进文件（写失败不丢消息，`prompt()` 明确报错）；" +
      "`contextBudget` 让每次调用模型之前都投影到预算，并在运行开始时按阈值自动压缩。",
    en:
      "Rebuild the model's context from the session path before every call instead of deleting history: interactions " +
      "(calls paired with results by id), projection to a token budget with a pluggable estimator (chars/4 calibrated by " +
      "the newest trusted usage), overflow reported as data, the newest compaction's summary standing in for what it cut, " +
      "and compaction as one appended entry whose failure appends nothing. Property tests guard against pi's orphan " +
      "tool results after chained compactions. Finally the Agent takes a session (resume, append every message_end, " +
      "report a failed write) and a context budget (project before each call, compact at a threshold).",
  },
  files: [
    "src/session/interactions.ts",
    "src/session/token-estimate.ts",
    "src/session/context.ts",
    "src/session/summary-prompt.ts",
    "src/session/compaction.ts",
    "src/session/interrupted.ts",
    "src/agent/agent-session.ts",
    "test/11-context.property.test.ts",
    "test/11-agent-session.test.ts",
  ],
  labs: [
    {
      id: "11.1",
      says: [
        'transcript message ${i}: the tool result for call "${id}" has no tool call before it; a provider would refuse the context. Fix the transcript (or the compaction that cut it) so every result follows its call.',
        'transcript message ${i}: the tool result for call "${id}" answers a call of an error/aborted assistant message, which the model never sees; a provider would refuse the context. Fix the transcript (or the compaction that cut it) so every result follows its call.',
        'transcript message ${i}: a second tool result for call "${id}"; each call gets exactly one result.',
      ],
      title: {
        zh: "交互：调用与结果配对（openSpans、groupInteractions）",
        en: "interactions: calls paired with results",
      },
      hint: {
        zh: [
          "1. `openSpans`：先扫一遍，记下每个调用（只算不是 error/aborted 的助手消息里的）在哪条消息",
          "2. 每个结果按 `toolCallId` 找它的调用",
          "3. 找不到、重复（同一个 id 的第二个结果：一个已经回答过的 id 被后面的调用重用，也不重新打开——供应商拒绝共用一个 id 的结果）、或者回答的是失败回合（`error` 或 `aborted`）的调用，就抛 `TypeError` 并写明是第几条消息。",
          "4. 再扫一遍，记住「已开始的调用里最远的结果在哪」，在它之前的位置都不能切。",
          "5. `groupInteractions`：在不能切的位置之外，每条用户消息开始一段新交互。",
        ].join("\n"),
        en: [
          "1. openSpans: index every call (of non-failed assistant messages)",
          "2. pair each result by id",
          "3. refuse orphans, duplicates (a second result for an id, even when a later call reuses an answered id: providers refuse results sharing an id) and answers to failed (error/aborted) turns",
          "4. then mark every index before the farthest pending result.",
          "5. groupInteractions: a user message at a cuttable index starts an interaction.",
        ].join("\n"),
      },
    },
    {
      id: "11.2",
      says: [
        "compact: the estimator counted message ${bad} as ${count}; counts must be finite and >= 0.   (from compact)",
        "projectMessages: the estimator counted message ${bad} as ${count}; counts must be finite and >= 0.   (from projectMessages)",
        "${who}: the estimator counted message ${bad} as ${String(count)}; counts must be finite and >= 0.",
        '（`who` 是调用者的名字，例如 compact 传 "compact"，于是消息以 `compact: ` 开头；projectMessages 传 "projectMessages"。who names the caller: compact passes "compact", so its message starts with "compact: "; projectMessages passes "projectMessages".）',
      ],
      title: { zh: "投影到预算（projectMessages）", en: "projection to a budget" },
      hint: {
        zh: [
          "1. 先分组，再让估算器给出每条消息的 token 数。",
          "2. 从最新的交互往回累加：最新的一段无论如何都保留，更旧的一段加上去超了预算就停——停，不是跳过（跳过就会留下中间有洞的上下文）。",
          "3. 最新的一段即使单独放不下也要保留（这时填 `overflow`）。",
          "4. 工作量要和消息数成线性：每往回走一段，只把这一段的计数加到累计值上；不要对每一段重新求从它开头到末尾的和，也不要每段再调一次估算器（测试数读取次数：每多一条消息，对消息和计数的读取最多多 20 次）。",
          "5. 结果是从某段交互开头开始的后缀，`context` 里带上给了的 `systemPrompt` 和 `tools`。",
          "6. 总数超过预算时填好 `overflow`。",
        ].join("\n"),
        en: [
          "1. Group, count, then walk from the newest interaction back: the newest is always kept; stop (don't skip) at the first older one that would not fit.",
          "2. The newest is kept even when it alone does not fit (then fill `overflow`).",
          "3. Linear work: add each interaction's own counts to a running total; never sum from its start to the end again, nor call the estimator per interaction (the test counts reads: at most 20 more per message added).",
          "4. The context carries the systemPrompt and tools when given.",
          "5. Fill `overflow` when the total is over budget.",
        ].join("\n"),
      },
    },
    {
      id: "11.3",
      says: [
        'compaction entry "${compaction.id}": its firstKeptEntryId "${compaction.firstKeptEntryId}" is not on the path before it. Pass the path from the root to the leaf (pathToLeaf).',
      ],
      title: { zh: "路径的消息：最新的压缩代替它之前的一切（transcriptOf）", en: "the transcript of a path" },
      hint: {
        zh:
          "从叶子往回找最新的 `compaction` 条目。没有：按顺序取所有 `message` 条目。有：先放 `summaryMessage(entry)`，" +
          "再取从 `firstKeptEntryId` 到压缩条目之间的消息，再取压缩条目之后的；`usageFrom` 是压缩之后第一条消息的下标。" +
          "`firstKeptEntryId` 等于压缩条目自己的 id 表示之前一条都不保留；不在路径上压缩条目之前的位置（不在路径上，或在它之后）就抛 `TypeError`。",
        en:
          "Find the newest compaction; without one take every message entry; with one: its summary, the entries from " +
          "firstKeptEntryId up to it, then those after it; usageFrom marks the first message after it. A firstKeptEntryId " +
          "that is not on the path before the compaction (absent, or after it) throws a TypeError.",
      },
    },
    {
      id: "11.4",
      says: [
        "no summary, nothing appended: the summarizer returned number, not text   (a summarizer that returned a number)",
        "findCut 返回字符串表示找不到切点 (a string says why there is no cut):",
        "the ${n} messages that could be cut hold ${kept} tokens, within keepRecentTokens (${keepRecentTokens}).",
        "there is no place to cut: every message after the first is inside a tool call and its results.",
        "findCut(messages, counts, keepRecentTokens, min)：切点是 >= min 的下标（min 是 1，有上一次压缩时是 2：第一条是旧摘要，不能切走）。A cut point is an index >= min: 1, or 2 when the transcript starts with the previous summary.",
        "被摘要的消息不包括上一次的摘要（它作为 previousSummary 另给摘要器）。The summarised messages exclude the previous summary, which the summarizer gets as previousSummary.",
        "tokensBefore 是整段记录（系统提示 + 所有消息）；tokensAfter 是系统提示 + 新摘要消息 + 保留的消息。tokensBefore counts the system prompt and every message; tokensAfter the system prompt, the new summary message and the kept messages.",
        "compact 失败的 reason.message (the failures' reason.message):",
        "the session is empty.",
        "the leaf is already a compaction; nothing was added since.",
        "no summary, nothing appended: ${error.message}   (the summarizer threw; or: the summarizer returned ${typeof text}, not text; or: the summary is empty)",
        'the session moved on while the summary was written (leaf "${leaf}" is now "${newLeaf}"); nothing appended. Compact again.',
        "the session refused the compaction entry: ${error.message}",
        "the summary does not fit: it counts ${summaryTokens} tokens, over the ${maxSummaryTokens} allowed (maxSummaryTokens); nothing appended.   (summaryTokens: the new summary message as the estimator counts it)",
        "compact: keepRecentTokens must be a finite number >= 0, got ${String(keepRecentTokens)}   (thrown, a TypeError)",
      ],
      title: { zh: "压缩（findCut、compact）", en: "compaction" },
      hint: {
        zh: [
          "1. `findCut`：从最新的消息往回累加 token，直到够 `keepRecentTokens`，然后往后找第一个能切的位置（不在调用与结果之间、不是工具结果），找不到再往前找。",
          "2. `compact`：叶子已经是压缩条目、会话为空、没什么可切的，都返回 `nothing_to_compact`",
          "3. 摘要器抛错、返回的不是文本或只有空白，或者摘要消息超过 `maxSummaryTokens`，返回 `summary_failed`（摘要器拿到运行的 `signal`，好停下它的模型调用）",
          "4. 写摘要期间会话又往前走了（叶子变了）返回 `leaf_moved`",
          "5. `append` 拒绝返回 `append_failed`——这些情况都不能追加任何东西。",
          "6. 成功时摘要（去掉首尾空白）后面附上从工具调用里算出的文件清单，`tokensBefore`/`tokensAfter` 用同一个估算器算（两次计数都以 `compact` 的名字检查估算器）",
          "7. 摘要消息的 token 数超过（>）`maxSummaryTokens` 才算放不下，正好相等可以。",
        ].join("\n"),
        en: [
          "1. findCut: walk back to keepRecentTokens, then the first valid cut point at or after it (else before it).",
          "2. compact: nothing_to_compact / summary_failed / leaf_moved / append_failed append nothing",
          "3. on success append one entry with the trimmed summary, the files section and tokens before/after from the same estimator (both counts checked as compact's).",
          "4. A summary message of exactly maxSummaryTokens fits; only more is refused.",
        ].join("\n"),
      },
      // The property test builds sessions and reads them back through transcriptOf.
      uses: ["11.3"],
    },
    {
      id: "11.5",
      says: [
        "the context needs ${tokens} tokens (system prompt ${systemPromptTokens}, newest interaction ${newestInteractionTokens} in ${newestInteractionMessages} messages), over the budget of ${budget} by ${tokens - budget}; nothing older is left to drop. Compact the session, shorten the system prompt, or raise the budget.",
        "SessionWriteError 的消息里的条数是构造时 unsaved 的长度；之后没写进会话的消息继续推进同一个 unsaved 数组。The count in a SessionWriteError's message is unsaved.length when it is made; later unsaved messages are pushed to the same array.",
        'transformContext failed: transformContext must return an array of messages   (用户的 transformContext 返回的不是数组时，projector 抛 TypeError("transformContext must return an array of messages")，循环把它报告成这样。When the user\'s transformContext returns no array, the projector throws that TypeError and the loop reports it so.)',
        'compact threw: ${messageOf(error)}   (compact() 自己 reject 时交给 onCompaction 的 reason.message，kind 是 "summary_failed"。the reason.message onCompaction gets when compact() rejects; its kind is "summary_failed")',
      ],
      title: { zh: "把会话和预算接进 Agent（SessionKeeper）", en: "the Agent with a session and a budget" },
      hint: {
        zh: [
          "1. `attach`：先读（`transcriptOf(store.pathToLeaf(位置))`，位置默认是会话的 leaf），读成功了再改状态——读失败不能留下半接上的会话；可信 usage 从 `transcript.usageFrom` 开始（压缩之前那些消息的 usage 是旧上下文的，不能信）；传 `undefined` 是断开，对话记录原样保留。",
          "2. `record`：每条 `message_end` 的消息以上一条条目为父追加，等它写完再返回，这样后面的监听器在磁盘上就能看到它；写失败时消息留在内存里，记下 `SessionWriteError`（之后的消息记进 `unsaved`），并中止这次运行。",
          "3. `projector`：先跑用户自己的 `transformContext`（返回的不是数组就抛 `TypeError`），再 `projectMessages` 投影到预算（用预算的估算器），结果交给 `onProjection`；回答被裁剪过的上下文的那条助手消息，它的 usage 只代表裁剪后的上下文，之后不能再拿来估算整段记录（把 `usageFrom` 挪到它后面）——一次运行的最后一条回答也一样，下一次运行开始时的压缩检查不能信它。",
          "4. `compactIfDue`：在运行开始、第一次调用模型之前检查，估算值到了（>=）`compactAt × budget` 就 `compact()`，把预算的 `estimator`、`summarize`、这次运行的系统提示、`keepRecentTokens`（默认 `Math.floor(budget / 4)`）、`maxSummaryTokens = Math.max(1, budget - keepRecentTokens)`（摘要要和保留的消息一起放得下）和运行的 `signal` 交给它；`compact()` 自己 reject 也算失败（见 says）。",
          "5. 成功就从新摘要重建对话记录（别忘了这次运行的 `context.messages`，`onCompaction` 被调用时 `agent.state.messages` 已经是新的），失败只报告，运行照常靠投影继续。",
          "6. `onCompaction` 可以不给。",
        ].join("\n"),
        en: [
          "1. attach: read the path first, then change state; undefined detaches and keeps the transcript.",
          "2. record: append each message_end after the previous entry and await it; on failure keep the message, record a SessionWriteError and abort the run; trust usage from transcript.usageFrom on.",
          "3. projector: the user's transformContext (no array: TypeError), then projectMessages with the budget's estimator; stop trusting usage answered to a trimmed context, the run's last answer included.",
          "4. compactIfDue: at the start of a run, compact once the count reaches (>=) compactAt × budget, passing the budget's estimator and summarize, the run's system prompt, keepRecentTokens (default Math.floor(budget / 4)), maxSummaryTokens = Math.max(1, budget - keepRecentTokens) and the signal; a rejecting compact() is a failure too.",
          "5. On success restart the transcript from the summary before calling onCompaction (optional); on failure report and go on.",
        ].join("\n"),
      },
    },
  ],
  wrong: [
    {
      lab: "11.1",
      what: "a second result for the same call accepted",
      file: "src/session/interactions.ts",
      find: "      if (at < 0) {\n        throw new TypeError(",
      replace: "      if (at < -1) {\n        throw new TypeError(",
      failsWith: "expected [Function] to throw an error",
    },
    {
      lab: "11.1",
      what: "a user message always starts an interaction, even inside a call's span",
      file: "src/session/interactions.ts",
      find: '    if (messages[i]!.role === "user" && !open[i]) {',
      replace: '    if (messages[i]!.role === "user") {',
      failsWith: "to deeply equal",
    },
    {
      lab: "11.1",
      what: "the calls of an error/aborted message taken as answerable",
      file: "src/session/interactions.ts",
      find: "        if (failed) (unreachable ??= new Set()).add(block.id);\n        else if",
      replace: '        if (failed && block.id === "") (unreachable ??= new Set()).add(block.id);\n        else if',
      failsWith: "expected [Function] to throw an error",
    },
    {
      lab: "11.1",
      what: "a span closed at its call's first result, not its last",
      file: "src/session/interactions.ts",
      find: "      lastResultAt[at] = i;",
      replace: "      if (lastResultAt[at]! < 0) lastResultAt[at] = i;",
      failsWith: "to deeply equal",
    },
    {
      lab: "11.2",
      what: "the newest interaction dropped when it cannot fit",
      file: "src/session/context.ts",
      find: "    if (!isNewest && tokens + cost > budget) break;",
      replace: "    if (tokens + cost > budget) break;",
      // The property test of the lab may fail first: its report names the same problem.
      failsWith: "the newest interaction was dropped",
    },
    {
      lab: "11.2",
      what: "quadratic: each interaction's fit tested by summing every message from its start to the end again",
      file: "src/session/context.ts",
      find:
        "    let cost = 0;\n    for (let i = groups[g]!.start; i < groups[g]!.end; i++) cost += counts.messages[i]!;\n" +
        "    const isNewest = g === groups.length - 1;\n    if (!isNewest && tokens + cost > budget) break;\n    tokens += cost;",
      replace:
        "    let suffix = counts.systemPrompt;\n    for (let i = groups[g]!.start; i < messages.length; i++) suffix += counts.messages[i]!;\n" +
        "    const isNewest = g === groups.length - 1;\n    if (!isNewest && suffix > budget) break;\n    tokens = suffix;",
      failsWith: "reads per message added",
    },
    {
      lab: "11.2",
      what: "the system prompt not counted",
      file: "src/session/context.ts",
      find: "  let tokens = counts.systemPrompt;",
      replace: "  let tokens = 0;",
      failsWith: "tokens",
    },
    {
      lab: "11.3",
      what: "the oldest compaction used instead of the newest",
      file: "src/session/context.ts",
      find: '  for (let i = path.length - 1; i >= 0; i--) {\n    if (path[i]!.type === "compaction") {',
      replace: '  for (let i = 0; i < path.length; i++) {\n    if (path[i]!.type === "compaction") {',
      failsWith: "to deeply equal",
    },
    {
      lab: "11.3",
      what: "usage trusted from the start, not only after the compaction",
      file: "src/session/context.ts",
      find: "  transcript.usageFrom = filled;",
      replace: "  transcript.usageFrom = 0;",
      failsWith: "usageFrom",
    },
    {
      lab: "11.3",
      what: "a firstKeptEntryId not on the path keeps everything instead of refusing",
      file: "src/session/context.ts",
      find: "    if (firstKept < 0) {\n      throw new TypeError(",
      replace: "    if (firstKept < -1) {\n      throw new TypeError(",
      failsWith: "is not on",
    },
    {
      lab: "11.4",
      what: "the previous summary not given to the summarizer",
      file: "src/session/compaction.ts",
      find: "          ...(compaction && { previousSummary: compaction.summary }),\n",
      replace: "",
      failsWith: "previous",
    },
    {
      lab: "11.4",
      what: "a blank summary accepted",
      file: "src/session/compaction.ts",
      find: '    if (text.trim() === "") throw new Error("the summary is empty");\n',
      replace: "",
      failsWith: "summary is empty",
    },
    {
      lab: "11.4",
      what: "the cut moved back only: the first valid place after the target never tried",
      file: "src/session/compaction.ts",
      find: "  for (let i = target; i < messages.length; i++) if (valid(i)) return i;\n",
      replace: "",
      failsWith: "to deeply equal",
    },
    {
      lab: "11.5",
      what: "every message appended as a root (parentId null), not as the child of the one before",
      file: "src/agent/agent-session.ts",
      find: '      this.place = await store.append({ type: "message", parentId: this.place ?? null, message });',
      replace: '      this.place = await store.append({ type: "message", parentId: null, message });',
      failsWith: "expected null to be",
    },
    {
      lab: "11.5",
      what: "after a refused write, later messages dropped instead of joining the unsaved list",
      file: "src/agent/agent-session.ts",
      find: "      (this.failure.unsaved as AgentMessage[]).push(message);\n      return;",
      replace: "      return;",
      failsWith: "expected [ 'toolResult:ok' ] to deeply equal [ 'toolResult:ok', 'toolResult:ok' ]",
    },
    {
      lab: "11.5",
      what: "compaction due only above the threshold, not at it",
      file: "src/agent/agent-session.ts",
      find: "    if (tokensBefore < threshold) return;",
      replace: "    if (tokensBefore <= threshold) return;",
      failsWith: "expected [] to have a length of 1 but got +0",
    },
    {
      lab: "11.5",
      what: "the caller's transformContext skipped by the projector",
      file: "src/agent/agent-session.ts",
      find: "      const input = user === undefined ? messages : await user(messages, signal);",
      replace: "      const input = messages;",
      failsWith: "expected undefined to be 67",
    },
    {
      lab: "11.4",
      what: "break it, step 1: findCut takes every index as a cut point",
      file: "src/session/compaction.ts",
      find: "  const valid = (i: number) => !open[i];",
      replace: "  const valid = (_i: number) => true;",
      failsWith: "has no tool call before it",
    },
    {
      lab: "11.2",
      what: "break it, step 2: projectMessages skips an older interaction that does not fit and goes on with older ones",
      file: "src/session/context.ts",
      find:
        "  let kept = groups.length;\n" +
        "  for (let g = groups.length - 1; g >= 0; g--) {\n" +
        "    let cost = 0;\n" +
        "    for (let i = groups[g]!.start; i < groups[g]!.end; i++) cost += counts.messages[i]!;\n" +
        "    const isNewest = g === groups.length - 1;\n" +
        "    if (!isNewest && tokens + cost > budget) break;\n" +
        "    tokens += cost;\n" +
        "    kept = g;\n" +
        "  }\n" +
        "  const firstKept = kept < groups.length ? groups[kept]!.start : messages.length;\n" +
        "  const context: AgentContext = { messages: messages.slice(firstKept) };",
      replace:
        "  let kept = groups.length;\n" +
        "  const keptGroups: number[] = [];\n" +
        "  for (let g = groups.length - 1; g >= 0; g--) {\n" +
        "    let cost = 0;\n" +
        "    for (let i = groups[g]!.start; i < groups[g]!.end; i++) cost += counts.messages[i]!;\n" +
        "    const isNewest = g === groups.length - 1;\n" +
        "    if (!isNewest && tokens + cost > budget) continue;\n" +
        "    tokens += cost;\n" +
        "    kept = g;\n" +
        "    keptGroups.unshift(g);\n" +
        "  }\n" +
        "  const firstKept = kept < groups.length ? groups[kept]!.start : messages.length;\n" +
        "  const context: AgentContext = {\n" +
        "    messages: keptGroups.flatMap((g) => messages.slice(groups[g]!.start, groups[g]!.end)),\n" +
        "  };",
      failsWith: "the kept messages are not the transcript's suffix",
    },
  ],
  breakIt: {
    zh:
      '在你写的 `findCut` 里让每个下标都算合法切点（不再检查调用与结果之间、不再跳过工具结果），跑 `npx vitest run test/11- -t "Lab 11\\.4\\b"`：' +
      "性质测试缩出来的最小反例是什么？压缩之后，哪条工具结果失去了它的调用，谁先发现的？这正是上游 pi #6832 的形状。" +
      "再让你写的 `projectMessages` 在某个较老的交互放不下时跳过它、接着放更老的（而不是停下）：哪个不变式先失败，为什么上下文里会出现一个洞？",
    en:
      "In your findCut, accept every index as a cut point and run the Lab 11.4 tests: what is the smallest counterexample, and which tool " +
      "result lost its call (pi #6832)? Then make your projectMessages skip an older interaction that does not fit and go on with older ones (instead of stopping): which invariant fails first?",
  },
});
