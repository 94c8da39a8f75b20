import { defineChapter } from "../catalogue.js";

export default defineChapter({
  id: "16",
  slug: "codemode",
  title: {
    zh: "Codemode：模型写一段调用工具的脚本，在 QuickJS 沙箱里运行",
    en: "Codemode: the model writes a script that calls tools, in a QuickJS sandbox",
  },
  invariant: {
    zh:
      "脚本能做的不会超过模型能做的：每个嵌套调用都走和模型调用同一条流水线（曝光、校验、钩子、事件）；" +
      "脚本从不在主线程上运行，所有限制（时间、内存、栈、调用次数、参数与输出大小、中止）都由宿主掌握；" +
      "每次失败都是一条错误结果，列出已经做过的嵌套调用（它们不会被撤销），而且一个脚本留下的东西到不了下一个脚本。",
    en:
      "A script can do nothing the model may not: every nested call goes through the model's own pipeline (exposure, validation, " +
      "hooks, events). A script never runs on the host thread; the host owns every limit (time, memory, stack, calls, sizes, " +
      "abort); every failure is an error result listing the nested calls already made (not undone), and nothing of one script " +
      "reaches the next.",
  },
  adds: {
    zh:
      "一个需要二十次工具调用的任务要花二十轮模型调用。Codemode 让模型写一段 JavaScript（一个 async 函数体），" +
      "在脚本里 `await tools.<名字>(参数)` 调用工具，一轮就做完。脚本跑在 QuickJS（`quickjs-wasi`，这是第一个由某一章加入的运行时依赖，练习文件夹会安装它）里，" +
      "QuickJS 跑在一个 worker 线程里：`src/codemode/worker-source.ts` 是 worker 的代码，`sandbox.ts` 是宿主——一个一直开着的 worker，" +
      "每个脚本一个全新的 VM（启动 worker 要几十到几百毫秒，新建 VM 大约 2 毫秒）。嵌套调用通过 `ToolExecutionContext.callTool` 回到循环自己的流水线" +
      "（`src/agent/tool-execution.ts` 的 ch16 部分），事件带着 `parentToolCallId`，id 是父调用的 id 加 `.1`、`.2`……" +
      "`declarations.ts` 把可调用的工具写成 TypeScript 声明放进 `code` 工具的描述（`code-tool.ts`），每个工具只带描述的第一句（最多 120 个字符），" +
      "已经直接声明给模型的工具只写签名——每次请求都要发送这些文字，越短越省 token。命令行用 `--codemode` 打开它。",
    en:
      "The code tool runs one JavaScript snippet that calls many tools: QuickJS (quickjs-wasi, the first runtime dependency a " +
      "chapter adds) in one warm worker thread, a fresh VM per script, host-owned limits, nested calls through the loop's own " +
      "pipeline with parentToolCallId, and the callable tools as TypeScript declarations. --codemode turns it on in the CLI.",
  },
  files: [
    "src/agent/nested-calls.ts",
    "src/cli/features/codemode.ts",
    "src/codemode/worker-source.ts",
    "src/codemode/script-calls.ts",
    "src/codemode/sandbox.ts",
    "src/codemode/declarations.ts",
    "src/codemode/code-tool.ts",
    // the bench of the break-it step: your CodeSandbox against pi-codemode, in the practice folder
    "kit/codemode-bench.ts",
  ],
  scripts: { bench: "tsx kit/codemode-bench.ts" },
  devDependencies: ["tsx"],
  labs: [
    {
      id: "16.1",
      title: { zh: "嵌套调用走同一条流水线（callTool）", en: "nested calls through the same pipeline" },
      hint: {
        zh:
          "`nestedCalls`（`src/agent/nested-calls.ts`）是工具批次的一个中间件：它给每个正在执行的调用一个 `ToolExecutionContext`。`callTool(name, args)`：计数加一，造一个 `ToolCall`，id 是 `<父 id>.<计数>`（计数器属于这一个父调用，每个父调用都从 1 数起）；" +
          "然后交给 `nested(call, options?.signal)`（批次给的运行器；调用方给了 `signal` 时，这个信号只中止这一个调用，运行照常继续：它记下父调用，事件据此带上 `parentToolCallId`，曝光检查据此把它当成脚本的调用；" +
          "再和模型的调用一样走 `emitStart` → `prepareCall` → `runPreparedCall` → `emitEnd`），返回 `{result, isError}`。嵌套调用没有自己的结果消息：父调用的结果会报告它们。",
        en:
          "callTool (a middleware of the tool batch, src/agent/nested-calls.ts): id <parent>.<n>, then run it with nested(call, options?.signal) (the batch's " +
          "runner: it remembers the parent, tags the events with parentToolCallId, and runs the same pipeline as a model's call); return {result, isError}.",
      },
    },
    {
      id: "16.2",
      title: {
        zh: "宿主：一个热的 worker，所有限制归宿主（CodeSandbox.runNow）",
        en: "the host: a warm worker, every limit the host's",
      },
      says: [
        "the script ran longer than ${timeoutMs} ms (timeoutMs) and was stopped",
        "the script made more than ${maxCalls} tool calls (maxCalls) and was stopped",
        "the arguments of tools.${name} are ${length} characters long, more than ${maxArgChars} (maxArgChars); the script was stopped   (e.g. the arguments of tools.t are 108 characters long, more than 50 (maxArgChars); the script was stopped)",
        'TypeError: nope   (a script that throws new TypeError("nope") fails with kind script and the message name: message, made by the worker; given)',
        "the run was aborted; the script was stopped",
        "the run was aborted before the script started   (the signal was already aborted: no worker is asked)",
        "the sandbox's worker crashed: ${error.message}   (the worker's error event: an uncaught error in its thread)",
        "the sandbox's worker exited   (the worker's exit event while a script runs)",
        'the sandbox failed: RangeError: codemode timeoutMs must be a finite number of milliseconds ≥ 0, got -1   (userDuration(limits.timeoutMs, "codemode timeoutMs") throws; run() reports it, given)',
        'Error: boom   (a callTool that rejects anyway with new Error("boom"): the call is an error, the script\'s Error says String(error))',
        "the returned value is ${length} characters of JSON, more than ${maxOutputChars} (maxOutputChars)   (given)",
        "InternalError: out of memory · RangeError: Maximum call stack size exceeded   (QuickJS's own messages, kind limit; given)",
        "the sandbox crashed: RuntimeError: memory access out of bounds   (the worker, given: a wasm trap without a stack limit)",
        "[${n} more console lines cut: output limit reached]   (the worker, given)",
      ],
      hint: {
        zh:
          "按顺序：\n" +
          "1. 合并默认限制（`DEFAULT_SANDBOX_LIMITS`）；`maxStackBytes` 发给 worker 之前封顶为 `MAX_STACK_BYTES`（512 KiB：QuickJS 不收更大的值，会让每个脚本都以脚本错误失败）。\n" +
          "2. `signal` 已经中止：在启动或取用 worker 之前就返回 `aborted`（不启动任何 worker）。\n" +
          "3. 拿到 worker（`ensureWorker`，第一次才启动），给这次运行一个新的 `runId`；准备 `outcome`（结果，只定一次）和 `released`（worker 真正空下来，队列等它）。\n" +
          "4. `stop(kind, message)`：先给出结果，再把共享内存里的中断标志设成这个 `runId`（VM 的中断处理函数看到 `>= runId` 就打断脚本）、发 `cancel`，`STOP_GRACE_MS`（250 ms）之内 worker 不回话就 `terminate()` 并换一个新的。\n" +
          '5. worker 的 `call` 消息：先查调用次数和参数长度（超了就 `stop("limit", …)`）；参数是 worker 发来的 JSON 文本：`JSON.parse` 解析，解析不了（脚本改了 `JSON.stringify`）就把文本原样当参数，不能抛出；' +
          "记下 `{name, args}`，用 `calls.add(record, request.callTool(name, args, calls.signal))` 交给宿主，回答用 `reply` 发回去（`ok` 为假时脚本里会抛出 Error）。\n" +
          "6. 给出结果时用 `calls.end(STOP_GRACE_MS)`（`ScriptCalls`，已经写好：让还没回答的调用收到中止信号、标上 `cancelled`，最多再等 250 ms），它完成后才交出结果；`done` 消息用 `doneOutcome` 读出结果。\n" +
          '7. 计时器到点就 `stop("timeout", …)`，`signal` 中止就 `stop("aborted", …)`；worker 出错或退出都是 `sandbox`（出错时它已经不能用了：换一个新的）；结果一旦给出，worker 再发来的 `call` 一律不跑。\n' +
          "8. 运行结束时（`cleanup`）清掉计时器（否则一个很短的脚本也让进程多活 `timeoutMs`），摘掉挂在 worker 和 `signal` 上的监听器。最后发 `run` 消息。",
        en:
          "1. Merge the limits; cap maxStackBytes at MAX_STACK_BYTES (512 KiB) before posting it. 2. An already aborted signal: " +
          "answer aborted before any worker is started. 3. Start or reuse the worker; a run id, an outcome settled once, a released promise. " +
          "4. stop(): settle, raise the interrupt flag, send cancel, terminate after STOP_GRACE_MS (250 ms). 5. Per call: check maxCalls " +
          "and maxArgChars; JSON.parse the arguments, and keep text that is not JSON as it is (never throw); calls.add(record, " +
          "request.callTool(name, args, calls.signal)). 6. Settle after calls.end(STOP_GRACE_MS) (ScriptCalls, given: cancels the calls " +
          "still running, waits 250 ms at most); read done with doneOutcome. 7. Timer and signal stop the script; a worker error or exit is " +
          "a sandbox failure; no call runs once the outcome is given. 8. cleanup clears the timer and takes every listener off.",
      },
    },
    {
      id: "16.3",
      says: [
        "  /** the b tool */\n  b(args: Record<string, unknown>): Promise<string>;\n   (declarations.ts, given: a tool's doc comment is the first sentence of its description, here a tool described as /** the c tool */ too)",
      ],
      title: { zh: "把 JSON Schema 写成 TypeScript（toTypeScript）", en: "JSON Schema as TypeScript" },
      hint: {
        zh: [
          "1. `const` → `JSON.stringify` 的值（写不成 JSON 的是 `unknown`）",
          "2. `enum` → 用 ` | ` 连起来的字面量",
          "3. `anyOf`/`oneOf` → 各部分用 ` | ` 连起来（空的 `enum`、`anyOf`、`oneOf` 是 `never`）",
          "4. `type` 是数组时同理（每个类型带着 schema 的其他字段）。",
          "5. 不是对象的 schema（`null`、`true`）是 `unknown`。",
          "6. `string`、`number`/`integer` → `number`、`boolean`、`null`",
          "7. `array` → `T[]`，元素类型里有空格时写 `Array<T>`",
          "8. `object` → `{ a: T; b?: U }`（不在 `required` 里的加 `?`，不是标识符的键用 JSON 字符串写），没有属性时是 `Record<string, unknown>`（`additionalProperties: false` 时是 `{}`）",
          "9. 其他一律 `unknown`，嵌套超过 6 层也是 `unknown`。",
        ].join("\n"),
        en: [
          "1. const, enum, anyOf/oneOf and type arrays as unions",
          "2. primitives",
          "3. T[] or Array<T>",
          "4. objects with optional fields marked ?",
          "5. an object without properties is Record<string, unknown> ({} with additionalProperties: false)",
          "6. an empty enum or union is never",
          "7. anything else, and anything nested deeper than 6 levels (a schema that contains itself), unknown.",
        ].join("\n"),
      },
    },
    {
      id: "16.4",
      title: { zh: "code 工具（createCodeTool 的 execute）", en: "the code tool" },
      says: [
        "Runs JavaScript as the body of an async function in a QuickJS sandbox   (the start of the description; given)",
        "The code tool runs only inside the agent loop, which hands it the ToolExecutionContext.",
        "Result: ${JSON of the value}\\nConsole:\\n${lines}\\nTool calls: ${n}   (reportOutcome, given: each part only when there is something to say)",
        "The script failed (${kind}): ${message}.\\nTool calls made before the failure (they are not undone):\\n1. ${name} ${JSON args} → ok|error|cancelled|unfinished   (reportOutcome, given)",
        "Tool calls: ${n}; ${k} still running when the script returned were cancelled (${names}): await every call whose result you need.   (reportOutcome, given)",
      ],
      hint: {
        zh:
          "没有 `context`（不在循环里直接调用 `execute`）就返回下面 says 里的那条错误结果（The code tool runs only inside the agent loop…）。否则在沙箱（`options.sandbox`，默认全进程共享的一个）里运行脚本：" +
          "`tools` 是可调用工具的名字，`limits`、`signal` 照传；`callTool(name, args, signal)` 用 `context.callTool(name, args, { signal })` 跑嵌套调用（脚本结束时这个信号让还在跑的调用停下），把结果的所有文本块用 `textOfContent` 拼起来交回脚本（不只是第一块）。" +
          "结果的文字用 `reportOutcome(outcome)`，`details` 放整个 `outcome`（包括 `calls` 列表），`isError` 是 `!outcome.ok`。",
        en:
          "Without a context, refuse. Else run the script in the sandbox with the callable names, the limits and the signal; nested " +
          "calls through context.callTool, their text back to the script; answer with reportOutcome, details the outcome.",
      },
      uses: ["16.3"],
    },
  ],
  wrong: [
    {
      lab: "16.2",
      what: "break it, step 1: the VM gets no stack limit (maxStackBytes 0 passed to the worker)",
      file: "src/codemode/sandbox.ts",
      find: "        maxStackBytes: Math.min(limits.maxStackBytes, MAX_STACK_BYTES),",
      replace: "        maxStackBytes: 0,",
      failsWith: "deep recursion ends at QuickJS's stack limit",
    },
    {
      lab: "16.2",
      what: "break it, step 2: a new worker for every script",
      file: "src/codemode/sandbox.ts",
      find: "    if (this.worker !== undefined) return this.worker;",
      replace: "    if (this.worker !== undefined) void this.worker.terminate();",
      failsWith: "workers started for four scripts",
    },
    {
      lab: "16.2",
      what: "maxStackBytes posted without its 512 KiB cap",
      file: "src/codemode/sandbox.ts",
      find: "        maxStackBytes: Math.min(limits.maxStackBytes, MAX_STACK_BYTES),",
      replace: "        maxStackBytes: limits.maxStackBytes,",
      failsWith: "must be capped",
    },
    {
      lab: "16.2",
      what: "the run's timer not cleared once the outcome is given",
      file: "src/codemode/sandbox.ts",
      find: "      clearTimeout(timer);\n      clearTimeout(grace);",
      replace: "      clearTimeout(grace);",
      failsWith: "timers left after the run",
    },
    {
      lab: "16.2",
      what: "the already-aborted check after a worker is started",
      file: "src/codemode/sandbox.ts",
      find: "    const calls = new ScriptCalls<NestedCallRecord>();\n    if (request.signal?.aborted) {",
      replace:
        "    const calls = new ScriptCalls<NestedCallRecord>();\n    await this.ensureWorker();\n    if (request.signal?.aborted) {",
      failsWith: "workers started for a run aborted before it began",
    },
    {
      lab: "16.1",
      what: "one nested-id counter shared by every parent",
      file: "src/agent/nested-calls.ts",
      find: "function callsOf(parent: ToolCall, nested: NestedCallRunner): ToolExecutionContext {\n  let count = 0;",
      replace: "let count = 0;\nfunction callsOf(parent: ToolCall, nested: NestedCallRunner): ToolExecutionContext {",
      failsWith: "counted per parent",
    },
    {
      lab: "16.1",
      what: "the caller's signal not passed to the nested call",
      file: "src/agent/nested-calls.ts",
      find: "      const { result, isError } = await nested(call, options?.signal);",
      replace: "      const { result, isError } = await nested(call);",
      failsWith: "the run did not end within",
    },
    {
      lab: "16.1",
      what: "nested ids numbered from 0",
      file: "src/agent/nested-calls.ts",
      find: "        id: `${parent.id}.${count}`,",
      replace: "        id: `${parent.id}.${count - 1}`,",
      failsWith: "counted per parent from 1",
    },
    {
      lab: "16.4",
      what: "a nested result's first text block only",
      file: "src/codemode/code-tool.ts",
      find: "          return { text: textOfContent(result.content), isError };",
      replace: "          return { text: textOfContent(result.content.slice(0, 1)), isError };",
      failsWith: "every text block of the nested result",
    },
    {
      lab: "16.4",
      what: "details without the list of calls",
      file: "src/codemode/code-tool.ts",
      find: '      return { content: [{ type: "text", text: reportOutcome(outcome) }], details: outcome, isError: !outcome.ok };',
      replace:
        '      return { content: [{ type: "text", text: reportOutcome(outcome) }], details: { ...outcome, calls: [] }, isError: !outcome.ok };',
      failsWith: "details is the whole outcome",
    },
    {
      lab: "16.4",
      what: "the tool's signal not passed to the sandbox",
      file: "src/codemode/code-tool.ts",
      find: "        ...(signal !== undefined && { signal }),\n",
      replace: "",
      failsWith: "abort",
    },
    {
      lab: "16.3",
      what: "an optional property written without ?",
      file: "src/codemode/declarations.ts",
      find: '        return `${name}${required.has(key) ? "" : "?"}: ${toTypeScript(value, depth + 1)}`;',
      replace: "        return `${name}: ${toTypeScript(value, depth + 1)}`;",
      failsWith: "mode?",
    },
    {
      lab: "16.3",
      what: "an element type with spaces written T[] (a union's [] binds to its last part)",
      file: "src/codemode/declarations.ts",
      find: '      return item.includes(" ") ? `Array<${item}>` : `${item}[]`;',
      replace: "      return `${item}[]`;",
      failsWith: "Array<",
    },
    {
      lab: "16.3",
      what: "an empty enum written as nothing instead of never",
      file: "src/codemode/declarations.ts",
      find: '  if (Array.isArray(s.enum)) return s.enum.map((v) => JSON.stringify(v)).join(" | ") || "never";',
      replace: '  if (Array.isArray(s.enum)) return s.enum.map((v) => JSON.stringify(v)).join(" | ");',
      failsWith: "never",
    },
  ],
  breakIt: {
    zh:
      "在 `sandbox.ts` 里把传给 worker 的 `maxStackBytes` 换成 0（`maxStackBytes: 0,`），" +
      '跑 `npx vitest run test/16- -t "Lab 16\\.2\\b"`：无限递归的脚本让 VM 崩溃了，宿主还活着吗？下一个脚本还能运行吗？' +
      "再把 `ensureWorker` 里复用 worker 的那一行改成每次都结束旧的、新开一个（`if (this.worker !== undefined) void this.worker.terminate();`），" +
      "再跑一次 Lab 16.2 的测试：哪个测试数出了几个 worker？想量时间的话，就在练习文件夹里跑 `npm run bench`（`kit/codemode-bench.ts`，量的是你自己的 `src/codemode`；" +
      "第一次运行会把 pi-codemode 1.6.0 装进 `node_modules/.cache/`）：改动前后各跑一次，看 pi-codemode 和你的沙箱的比值怎么变（机器忙时看 CPU 那一列），然后把改动撤回。",
    en:
      "Pass maxStackBytes 0 to the worker in sandbox.ts and run the Lab 16.2 tests: an endless recursion crashes the VM; does " +
      "the host survive, and does the next script run? Then start a worker per script (ensureWorker terminates the old one " +
      "instead of reusing it): which test counts the workers? To time it, run npm run bench in the practice folder (kit/codemode-bench.ts times your own src/codemode; the first run installs pi-codemode 1.6.0 into node_modules/.cache/) before and after the change, and watch the ratio to pi-codemode move (read the CPU column on a busy machine); then undo the change.",
  },
});
