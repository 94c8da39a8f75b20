import { defineChapter } from "../catalogue.js";

export default defineChapter({
  id: "15",
  slug: "tool-search",
  title: { zh: "工具的曝光与工具搜索", en: "Tool exposure and tool search" },
  invariant: {
    zh:
      "模型只能调用在那一次请求里声明给它的工具：其余的调用一律以一条说明原因的错误结果回答，工具本身不会运行；" +
      "声明集合的每一次变化都记在对话记录里（工具结果的 `declaredTools`），所以从同一份记录恢复的会话声明同样的工具。",
    en:
      "The model may call only the tools declared to it in that request: any other call is answered with an error result that " +
      "says why, and the tool never runs. Every change of the declared set is recorded in the transcript (a tool result's " +
      "declaredTools), so a session resumed from it declares the same tools.",
  },
  adds: {
    zh:
      "接上 MCP 服务器（第 17 章）之后，一个智能体很容易有上百个工具：每次请求都声明全部工具要花几千个 token。" +
      "本章把“声明给模型”和“可以调用”分开：`AgentTool.exposure` 有四种取值——`direct`（默认：每次都声明，可以调用）、" +
      "`deferred`（找到之前不声明）、`codemode`（只能从第 16 章的脚本里调用）、`hidden`（只有应用自己能用）。" +
      "循环（`src/agent/tool-exposure.ts`）按对话记录算出每次请求的声明集合，并拒绝对其他工具的调用；" +
      "`tool_search` 工具（`src/tool-search/`）用 BM25 风格的打分在名字、描述和参数名上给延迟工具排名，" +
      "它的结果通过 `declareTools` 请循环从下一次请求起声明找到的工具，循环把新声明的名字记在结果消息的 `declaredTools` 上。" +
      "命令行里 MCP 工具超过 20 个时就自动延迟，并且告诉你。" +
      "给定的 `src/agent/declared-window.ts` 给声明集合设了上限：延迟工具最多同时声明 `MAX_DECLARED_DEFERRED`（20）个，" +
      "最久没被找到或调用的先退出（再调用它会被拒绝，再搜一次就回来）；它同样只从对话记录算出，所以恢复的对话声明的一样。",
    en:
      "Exposure separates what the model is told from what it may call: direct, deferred, codemode, hidden. The loop computes each " +
      "request's declared set from the transcript and refuses any other call; tool_search ranks deferred tools BM25-style and " +
      "asks the loop to declare the best matches from the next request on. The CLI defers MCP tools above 20. Given: at most " +
      "MAX_DECLARED_DEFERRED (20) deferred tools stay declared, the least recently found or called drop out (declared-window.ts).",
  },
  files: [
    "src/agent/tool-exposure.ts",
    "src/agent/declared-window.ts",
    "src/tool-search/bm25.ts",
    "src/tool-search/tool-search.ts",
    "src/cli/tool-declaration.ts",
  ],
  labs: [
    {
      id: "15.1",
      title: {
        zh: "声明集合与拒绝（declaredToolNames、exposureRefusal）",
        en: "the declared set, and refusals",
      },
      says: [
        'Tool "${name}" was not declared to you in this request: it is a deferred tool. Find it with tool_search first; it is declared to you from the next request on.',
        'Tool "${name}" was not declared to you in this request: it can only be called from a script (the code tool), as tools.${name}(args).   (for a tool d: … from a script (the code tool), as tools.d(args).)',
        'Tool "${name}" not found. Available tools: ${declared names in the order of the declared set, ", "-joined, or (none)}.   (a hidden tool reads like an unknown one)',
        'Tool "${name}" is not callable from a script. Callable tools: ${every tool but hidden ones and the calling tool, in tool order, ", "-joined, or (none)}.   (an unknown name too)',
      ],
      hint: {
        zh:
          "两个函数：" +
          "\n     - `declaredToolNames`：全是 `direct` 的工具时返回 `undefined`（快速路径，已经写好）；否则是所有 `direct` 工具（按工具的顺序），" +
          '加上对话记录里任一工具结果（`role: "toolResult"`）或压缩摘要（`role: "user"`，第 11 章的摘要消息会带上被压缩部分声明过的工具）的 `declaredTools` 中出现的 `deferred` 工具（按记录里出现的顺序）。' +
          "\n     - `codemode`、`hidden` 和不认识的名字即使出现在 `declaredTools` 里也不算；模型**调用**过一个工具也不算声明了它（被拒绝的调用同样留在记录里）。" +
          '\n     - `exposureRefusal`：来自脚本（`origin: "script"`）的调用可以用 `direct`、`deferred`、`codemode` 工具，不能用 `hidden` 的，也不能调用发起脚本的工具本身；不行时（名字不认识也一样）列出可调用的工具，按工具的顺序，不含 hidden 的和发起脚本的工具。' +
          "\n     - 来自模型的调用只要名字在声明集合里就放行，否则按工具的曝光方式给出下面“测试逐字检查的文字”里的那几句；“Available tools” 按声明集合的顺序列出（Set 保持加入的顺序）。" +
          "\n     - 循环在 `prepareCall` 里、准备参数之前就问它，所以被拒绝的工具一次也不会运行。扩展（第 12 章）或 MCP 服务器（第 17 章）加进来的工具带着自己的 `exposure`，规则一样。",
        en:
          "declaredToolNames: direct tools (tool order) plus deferred ones named in the declaredTools of a tool result or of a compaction summary (a user message), " +
          "never codemode/hidden/unknown names, never a tool just because the model called it. exposureRefusal: a script may " +
          "reach direct, deferred and codemode tools (not hidden ones, not its own tool; the list in tool order); the model only the declared set (listed in the set's order).",
      },
    },
    {
      id: "15.2",
      title: { zh: "把声明记进对话记录（newlyDeclared）", en: "recording a declaration in the transcript" },
      hint: {
        zh:
          "工具结果可以带 `declareTools: [名字…]`。`newlyDeclared` 从中挑出这次运行里确实是 `deferred`、而且这次请求还没声明的工具，按 `context.tools` 的顺序（不是 `declareTools` 的顺序），每个一次；" +
          "出错的结果不算；一个也没有时返回 `undefined`。给定的窗口（`declared-window.ts`）随后只留下最近被找到或调用的 20 个延迟工具。它在 `src/agent/tool-exposure.ts` 里，由工具批次的中间件 `toolExposure` 调用：中间件的 `result` 把它们写到结果消息的 `declaredTools` 上，" +
          "`afterBatch` 在这一批结束后把它们加进声明集合，从下一次请求起声明它们。记录在结果消息上而不是另起一种消息：库自己加一种自定义消息角色会让每个用户的 `AgentMessage` 都多一种情况。",
        en:
          "newlyDeclared: the names of a successful result's declareTools that are deferred tools not declared yet, in tool order; " +
          "the toolExposure middleware writes them on the result message as declaredTools and declares them from the next request on.",
      },
      uses: ["15.1"],
    },
    {
      id: "15.3",
      title: { zh: "BM25 排名（tokenize、rankTools）", en: "BM25 ranking" },
      hint: {
        zh:
          "两个函数：" +
          "\n     - `tokenize`：在驼峰处断开（`readFile` → `read file`），转小写，按**非 Unicode 字母数字**切分（`/[^\\p{L}\\p{N}]+/u`：`Größe` 是一个词 `größe`，不是 `gr` 和 `e`），丢掉空词，再去掉长于 3 个字母、以 `s` 结尾但不是 `ss` 结尾的词尾 `s`（`issues` → `issue`，`process` 不变）。" +
          "\n     - `rankTools`：每个工具是一篇文档（`toolWords`：名字算两次、描述、顶层参数名）；查询词去重（`red red` 和 `red` 得分一样）。" +
          "\n     - IDF = `ln(1 + (N − n + 0.5) / (n + 0.5))`；每个词的得分 `idf · f·(k1+1) / (f + k1·(1 − b + b·长度/平均长度))`，k1 = 1.2，b = 0.75。" +
          "\n     - 只留下得分大于 0 的，按得分从高到低、同分按名字排序，最多 `limit` 个。",
        en:
          "tokenize: split camelCase humps and anything but Unicode letters and digits (Größe is one word), lowercase, drop a plural s. rankTools: BM25 (k1 1.2, b 0.75) over " +
          "name twice, description and parameter names, each query word once; positive scores only, best first, ties by name, at most limit.",
      },
    },
    {
      id: "15.4",
      title: { zh: "tool_search 工具", en: "the tool_search tool" },
      says: [
        "Searches ${n} more tools that are not declared to you yet   (the start of tool_search's description; given)",
        "Searches ${n} more tools (${from}) that are not declared to you yet   (with the option from; the CLI gives the MCP servers' names, e.g. Searches 21 more tools (the MCP servers s, p) that …)",
        "Declared from your next request on:\\n- ${name}: ${first line of its description}   (one line per match)",
        "details: { query, matches }: matches are the relevant matches ({ name, score }, best first), the ones declared",
        'No deferred tool matches "${query}". Try other words; some deferred tools: ${up to 20 names, ", "-joined}${", … (N in all)" when there are more}.',
        "createToolSearchTool: maxResults must be a positive integer, got ${maxResults}.   (given)",
      ],
      hint: {
        zh:
          "`execute` 里：" +
          "\n     - 只在**延迟**工具（`deferred`，创建时已经挑出）里用 `rankTools(deferred, query, limit)` 排名——`limit` 就是 `maxResults`（默认 5，可以更大）——再交给给定的 `relevantMatches`（去掉得分不到最好一个一半的）。" +
          "\n     - 有结果时返回下面“测试逐字检查的文字”里的那段，每个匹配一行，只写描述的**第一行**（给定的 `firstLine`），并带上 `declareTools`（匹配到的名字，同样的顺序）。" +
          "\n     - 没有结果时不带 `declareTools`，返回“没有匹配”的那句话，列出一些延迟工具的名字帮模型换个说法。" +
          "\n     - 两种情况的 `details` 都是 `{ query, matches }`，`matches` 就是 `relevantMatches` 留下的那些。" +
          "\n     - 给定的 `deferMcpTools`（`src/cli/tool-declaration.ts`）保留 MCP 服务器自己设的 `exposure`，没设的超过 20 个时改成 `deferred` 并把 `tool_search` 放在最前面。",
        en:
          "Rank the deferred tools only with rankTools(deferred, query, limit), limit being maxResults (5 by default, larger honoured); keep relevantMatches (given); " +
          "on matches answer with the list (first line of each description) and declareTools, else say nothing matched and name some deferred tools; details is { query, matches }.",
      },
      uses: ["15.1", "15.3"],
    },
  ],
  wrong: [
    {
      lab: "15.1",
      what: "counts a tool as declared because the model called it",
      file: "src/agent/tool-exposure.ts",
      find: "    // A tool result's declaration, or a compaction summary's (the declarations it condensed).\n",
      replace:
        '    if (message.role === "assistant")\n      for (const block of message.content) if (block.type === "toolCall" && deferred.has(block.name)) declared.add(block.name);\n    // A tool result\'s declaration, or a compaction summary\'s (the declarations it condensed).\n',
      failsWith: "a call of the model declares nothing",
    },
    {
      lab: "15.1",
      what: "counts every known name in declaredTools, codemode and hidden ones too",
      file: "src/agent/tool-exposure.ts",
      find: "    for (const name of message.declaredTools) if (deferred.has(name)) declared.add(name);",
      replace:
        "    for (const name of message.declaredTools) if (tools.some((tool) => tool.name === name)) declared.add(name);",
      failsWith: "only deferred tools count",
    },
    {
      lab: "15.1",
      what: "given code the lab relies on: an extension's registration copies only the fields it knows (exposure lost)",
      file: "src/resources/extension-host.ts",
      find: '        staged.tools.push({ ...tool, label: typeof tool.label === "string" ? tool.label : tool.name });',
      replace:
        '        const { name, description, parameters, execute } = tool;\n        staged.tools.push({ name, description, parameters, execute, label: typeof tool.label === "string" ? tool.label : tool.name });',
      failsWith: "a tool an extension registers keeps its exposure",
    },
    {
      lab: "15.2",
      what: "order: the new names in declareTools' order, not the tools'",
      file: "src/agent/tool-exposure.ts",
      find: '  const fresh = tools\n    .filter((tool) => tool.exposure === "deferred" && names.includes(tool.name) && !declared.has(tool.name))\n    .map((tool) => tool.name);',
      replace:
        '  const fresh = [...new Set(names)].filter(\n    (name) => tools.some((tool) => tool.name === name && tool.exposure === "deferred") && !declared.has(name),\n  );',
      failsWith: "newlyDeclared lists the names in the order of context.tools",
    },
    {
      lab: "15.2",
      what: "an error result declares too",
      file: "src/agent/tool-exposure.ts",
      find: "  if (done.isError || declared === undefined) return undefined;",
      replace: "  if (declared === undefined) return undefined;",
      failsWith: "an error result declares nothing",
    },
    {
      lab: "15.2",
      what: "a tool already declared is recorded again",
      file: "src/agent/tool-exposure.ts",
      find: " && names.includes(tool.name) && !declared.has(tool.name))",
      replace: " && names.includes(tool.name))",
      failsWith: "a tool already declared is not recorded again",
    },
    {
      lab: "15.2",
      what: "cap missing (given code): the window of 20 never lets a deferred tool drop out",
      file: "src/agent/tool-exposure.ts",
      find: "      for (const name of window.declare(names)) declared.delete(name);",
      replace: "      window.declare(names);",
      failsWith: "the least recently found or called must drop out",
    },
    {
      lab: "15.3",
      what: "query words not de-duplicated",
      file: "src/tool-search/bm25.ts",
      find: "  const terms = [...new Set(tokenize(query))];",
      replace: "  const terms = tokenize(query);",
      failsWith: "the query's words are counted once",
    },
    {
      lab: "15.3",
      what: "split on ASCII letters and digits only",
      file: "src/tool-search/bm25.ts",
      find: "    .split(/[^\\p{L}\\p{N}]+/u)",
      replace: "    .split(/[^a-z0-9]+/)",
      failsWith: "Größe stays one word",
    },
    {
      lab: "15.3",
      what: "ties left in the tools' order",
      file: "src/tool-search/bm25.ts",
      find: "  matches.sort((a, b) => b.score - a.score || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));",
      replace: "  matches.sort((a, b) => b.score - a.score);",
      failsWith: "ties go by name",
    },
    {
      lab: "15.4",
      what: "tool_search ranks every tool, not only the deferred ones",
      file: "src/tool-search/tool-search.ts",
      find: '      const matches = relevantMatches(rankTools(deferred, query, limit));\n      if (matches.length === 0) {\n        const some = deferred.slice(0, 20).map((tool) => tool.name);\n        const more = deferred.length > some.length ? `, … (${deferred.length} in all)` : "";\n        return {\n          content: [\n            {\n              type: "text",\n              text: `No deferred tool matches "${query}". Try other words; some deferred tools: ${some.join(", ") || "(none)"}${more}.`,\n            },\n          ],\n          details: { query, matches },\n        };\n      }\n      const lines = matches.map((match) => {\n        const tool = deferred.find((candidate) => candidate.name === match.name)!;',
      replace:
        '      const matches = relevantMatches(rankTools(tools, query, limit));\n      if (matches.length === 0) {\n        const some = deferred.slice(0, 20).map((tool) => tool.name);\n        const more = deferred.length > some.length ? `, … (${deferred.length} in all)` : "";\n        return {\n          content: [\n            {\n              type: "text",\n              text: `No deferred tool matches "${query}". Try other words; some deferred tools: ${some.join(", ") || "(none)"}${more}.`,\n            },\n          ],\n          details: { query, matches },\n        };\n      }\n      const lines = matches.map((match) => {\n        const tool = tools.find((candidate) => candidate.name === match.name)!;',
      failsWith: "tool_search ranks the deferred tools only",
    },
    {
      lab: "15.4",
      what: "the whole description instead of its first line",
      file: "src/tool-search/tool-search.ts",
      find: "        return `- ${tool.name}: ${firstLine(tool.description)}`;",
      replace: "        return `- ${tool.name}: ${tool.description}`;",
      failsWith: "only the first line of a description is shown",
    },
    {
      lab: "15.4",
      what: "cap: maxResults not passed on (5 always)",
      file: "src/tool-search/tool-search.ts",
      find: "rankTools(deferred, query, limit)",
      replace: "rankTools(deferred, query)",
      failsWith: "maxResults above 5 is honoured",
    },
    {
      lab: "15.4",
      what: "every match declared, not only those near the best",
      file: "src/tool-search/tool-search.ts",
      find: "relevantMatches(rankTools(deferred, query, limit))",
      replace: "rankTools(deferred, query, limit)",
      failsWith: "only matches near the best (relevantMatches) are declared",
    },
    {
      lab: "15.1",
      what: "break it, step 1: exposureRefusal lets every model call through",
      file: "src/agent/tool-exposure.ts",
      find: "  if (declared === undefined || declared.has(name)) return undefined;\n",
      replace: "  return undefined; // every model call passes\n",
      failsWith: "tools ran that the request did not declare",
    },
    {
      lab: "15.3",
      what: "break it, step 2: tokenize keeps the plural s",
      file: "src/tool-search/bm25.ts",
      find:
        "    .filter((word) => word.length > 0)\n" +
        '    .map((word) => (word.length > 3 && word.endsWith("s") && !word.endsWith("ss") ? word.slice(0, -1) : word));',
      replace: "    .filter((word) => word.length > 0);",
      failsWith: "only where tokenize drops the plural s",
    },
  ],
  breakIt: {
    zh:
      '把 `exposureRefusal` 里对模型调用的检查删掉（总是返回 `undefined`），跑 `npx vitest run test/15- -t "Lab 15\\.1\\b"`：' +
      "哪个工具被运行了？再把 `tokenize` 里去掉复数 `s` 的那一步删掉，先想一想 “create issue” 还能找到 `github_list_issues` 吗？" +
      '然后跑 `npx vitest run test/15- -t "Lab 15\\.3\\b"` 验证。',
    en:
      "Let exposureRefusal pass every model call and run the Lab 15.1 tests: which tool ran? Drop the plural step of tokenize, " +
      'think whether "create issue" still finds github_list_issues, then run the Lab 15.3 tests.',
  },
});
