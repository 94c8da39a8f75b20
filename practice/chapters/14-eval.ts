import { defineChapter } from "../catalogue.js";

export default defineChapter({
  id: "14",
  slug: "eval",
  title: {
    zh: "评测工具（毕业项目）：让智能体做一组任务，判分，并写出人能读的报告",
    en: "The eval harness (capstone): run the agent on a suite of tasks, judge it, and report",
  },
  invariant: {
    zh:
      "每次运行都有且只有一个结论：通过、任务失败、协议失败、基础设施失败或被中断，并说明是哪个阶段、为什么；" +
      "协议检查（每个工具调用恰好一个结果、会话文件重新打开后与运行的消息完全相同、工作区之外什么都没被写）在每次运行上都做，" +
      "与任务自己的检查分开报告；Ctrl-C 之后已经完成的运行照样进报告。",
    en:
      "Every run gets exactly one verdict (passed, task failure, protocol failure, infrastructure failure, interrupted) with " +
      "its phase and reason; the protocol checks (one result per tool call, the session file replays to the run's " +
      "messages, nothing written outside the workspace) run on every run and are reported apart from the task's own " +
      "check; after Ctrl-C, what finished is still reported.",
  },
  adds: {
    zh:
      "到现在为止，判断智能体“变好了没有”只能靠手试。本章把整个智能体当成被测对象：一个**用例（case）**是一个文件夹——" +
      "`task.md`（提示词）、`files/`（起始工作区）、`check`（智能体停下后在工作区里运行的可执行文件，退出码 0 即通过，输出留作证据）、" +
      "可选的 `case.json`（时间上限、回合上限、模型设置、标签、`minPassRate`），离线用例还带一个 `script.json`（脚本模型，只有评测工具会读）；" +
      "一组用例的文件夹就是一个**套件（suite）**。格式借鉴了现成的做法：SWE-bench 的 fail-to-pass 测试、Harbor/Terminal-Bench 的任务文件夹、" +
      "Inspect 的 样本+求解器+评分器、promptfoo 的非零退出码。\n\n" +
      "`runCase`（`src/eval/run-case.ts`）为每次运行准备一个全新的临时文件夹（`workspace/`、给命令用的 `home/` 与 `tmp/`、`sessions/`），" +
      "然后**通过与 CLI 相同的运行时**（第 13 章的 `Runtime.start`：`Agent`、编码工具、会话文件、配对检查）跑这个任务——" +
      "评测工具自己不组装智能体，而是接收一个 `Wire`，所以 `eval/` 在分层里仍然低于 `cli/`。跑完之后分三步判：" +
      "协议检查（`protocol.ts`）、用例自己的 check（`run-check.ts`）、最后由 `classifyRun` 给出唯一的结论。" +
      "三类失败要分开：任务失败找写提示词或模型的人，协议失败找写智能体的人，基础设施失败（准备不了、模型服务器没应答、工作进程崩了）找运维。\n\n" +
      "`pi-course eval SUITE`（根目录下 `npm run eval -- SUITE`）每次运行开一个独立的进程（`--concurrency N` 个同时跑，互不干扰），" +
      "`--repeat K` 给出通过率，Ctrl-C 干净地停下并照样报告已完成的部分；报告写进 `--out DIR`：`report.json`、一个自包含的 `report.html`" +
      "（不联网；汇总表、通过率、每次运行点开可看的对话记录）和每次运行的会话文件。仓库自带一个离线套件 `evals/offline/`。",
    en:
      "A case is a folder (task.md, files/, an executable check, optional case.json and script.json); a suite is a folder " +
      "of cases. runCase prepares a fresh run folder, runs the task through the CLI's own runtime (passed in as a Wire, so " +
      "eval/ stays below cli/), then judges: the protocol checks, the case's check, and classifyRun's one verdict. " +
      "`pi-course eval SUITE` runs each run in its own process, N at once, K times each, stops cleanly on Ctrl-C, and writes " +
      "report.json, a self-contained report.html and the session files. The repository ships an offline suite in evals/offline/.",
  },
  files: [
    "src/base/dollars.ts",
    "src/cli/features/eval.ts",
    "src/cli/features/eval-engine.ts",
    "src/eval/case-format.ts",
    "src/eval/case-script.ts",
    "src/eval/protocol.ts",
    "src/eval/run-check.ts",
    "src/eval/run-record.ts",
    "src/eval/run-case.ts",
    "src/eval/run-pool.ts",
    "src/eval/suite-report.ts",
    "src/eval/html-report.ts",
    "src/cli/eval-wiring.ts",
    "src/cli/eval-worker.ts",
    "src/cli/eval-command.ts",
  ],
  labs: [
    {
      id: "14.1",
      title: { zh: "读用例的设置（parseCaseSettings）", en: "reading a case's settings" },
      hint: {
        zh:
          "`case.json` 里每个键都是可选的，没写的取 `DEFAULT_CASE_SETTINGS`（注意每次给新的 `model` 对象和 `tags` 数组，别共享默认值里的）。" +
          "其余一律拒绝：文件上方的 `CaseSettingsSchema` 已经写明每个键的形状和期望（`expected`），你用 `parseJson(text, CaseSettingsSchema, casePlace(where))` 读它" +
          "（`src/base/read-json.ts`，第 12 章给出），它抛 `CaseFormatError`，消息统一为 `<where>: <键> must be <期望>, got <实际>.`，" +
          '例如 `/s/c/case.json: maxTurns must be a whole number above 0, got 2.5.`、`/s/c/case.json has an unknown key "timeout"; the keys are …`、' +
          "`/s/c/case.json is not JSON (…).`。然后把读到的值放到默认值上。每条消息的原文写在函数上方的文档注释里，测试按原文比较。",
        en:
          "Every key is optional; defaults from DEFAULT_CASE_SETTINGS (fresh model and tags each time). Read the text with " +
          "parseJson(text, CaseSettingsSchema, casePlace(where)): anything else is a CaseFormatError in read-json's one wording " +
          "(`<where>: <key> must be <expected>, got <what>.`); the exact messages are in the doc comment above the function.",
      },
    },
    {
      id: "14.2",
      title: {
        zh: "协议检查（checkToolPairing、checkSessionReplay、diffSnapshots）",
        en: "the protocol checks",
      },
      hint: {
        zh: [
          "三个函数都返回“问题列表”，空列表即通过。",
          "1. `checkToolPairing`：按顺序读消息，记下每个工具调用的 id，数它的结果；重复的 id、没有对应调用的结果、没有结果或多于一个结果的调用，各是一条问题。",
          "2. `checkSessionReplay`：用 `SessionFile.open(file, { readOnly: true })` 重新打开文件（只读：检查者不是写者，不拿写锁；打不开就只报这一条）",
          "3. 有撕裂的行要报",
          "4. 再把 `messagesOf(pathToLeaf(leaf))` 与运行的消息逐条深比较（`isDeepStrictEqual`），报第一处不同，或条数不同（文件里还没有条目时 `leaf` 是 undefined，路径上就是 0 条消息）",
          "5. 最后记得 `close()`。",
          "6. `diffSnapshots`：比较前后两份快照，新建、改变、删除的路径各一条。",
          "7. 各条消息的原文都在对应函数的文档注释里。",
        ].join("\n"),
        en: [
          "Each returns a list of problems (empty passes).",
          "1. Pairing: count results per call id, in order.",
          "2. Replay: reopen the file read-only (a checker is no writer: no lock), report torn lines, compare its path's messages deeply with the run's (no leaf yet: no messages), close it.",
          "3. Snapshots: created, changed, removed.",
          "4. Exact messages in each doc comment.",
        ].join("\n"),
      },
    },
    {
      id: "14.3",
      title: { zh: "给一次运行下结论（classifyRun）", en: "judging one run" },
      hint: {
        zh:
          "`runCase` 已经收集好事实：是否被中断、协议问题、是否超时、运行是否抛错、最后一条助手消息、check 的结果。" +
          "`classifyRun` 按固定顺序取第一个成立的：中断 → 协议问题（不管 check 说什么：破坏了约定的运行不可信）→ 超时（任务失败：太慢）→ " +
          "运行出错 / 模型没回答 / 模型调用失败（基础设施）→ check 没跑或起不来（基础设施）→ check 超时或非零退出（任务失败）→ 通过。" +
          "每一步的 status、phase、reason 原文见函数上方的文档注释。这一节的测试从头到尾真的跑用例：通过与 CLI 相同的运行时、真的 bash、真的会话文件。",
        en:
          "The first that applies: interrupted, protocol, time limit, infrastructure (run error, no answer, failed model " +
          "call, check missing or not startable), check timed out or non-zero, else passed. Exact reasons in the doc comment; " +
          "the tests run real cases through the CLI's runtime.",
      },
      says: ["the model call failed: no message"],
      // Its end-to-end tests read case.json (14.1) and run the protocol checks (14.2) before the verdict.
      uses: ["14.1", "14.2"],
    },
    {
      id: "14.4",
      title: { zh: "报告：通过率、结论与退出码（buildSuiteReport、suiteExitCode）", en: "the report" },
      hint: {
        zh: [
          "1. 每个用例：它的运行按 `repeat` 排序",
          "2. 按状态计数（五种状态都要有，包括 0）",
          "3. 通过率 = 通过数 / 被评判的运行数（被中断的不算评判；一个都没有时为 null）。",
          "4. 结论：没有被评判的运行是 `incomplete`；通过率 ≥ `minPassRate` 且没有协议失败是 `passed`；否则 `failed`。",
          "5. `totals` 数用例、通过的用例、运行以及各状态的运行。",
          "6. `suiteExitCode`：被 Ctrl-C 停下是 130（即使有用例失败），每个用例都通过是 0，否则 1。",
        ].join("\n"),
        en: [
          "1. Runs sorted by repeat",
          "2. counts of all five statuses",
          "3. pass rate over judged (not interrupted) runs or null",
          "4. verdict incomplete / passed (rate ≥ minPassRate and no protocol failure) / failed",
          "5. exit code 130 after Ctrl-C (even with a failed case), 0 all passed, else 1.",
        ].join("\n"),
      },
    },
  ],
  wrong: [
    {
      lab: "14.1",
      what: "the defaults win: a case's own limits ignored",
      file: "src/eval/case-format.ts",
      find: "    if (given[key] !== undefined) settings[key] = given[key];\n",
      replace: "",
      failsWith: "to deeply equal",
    },
    {
      lab: "14.1",
      what: "the case's model id dropped",
      file: "src/eval/case-format.ts",
      find: "  if (given.model?.id !== undefined) settings.model = { id: given.model.id };\n",
      replace: "",
      failsWith: "to deeply equal",
    },
    {
      lab: "14.1",
      what: "minPassRate left out of the fields copied from case.json: the default always wins",
      file: "src/eval/case-format.ts",
      find: '  for (const key of ["timeLimitSeconds", "checkTimeLimitSeconds", "maxTurns", "minPassRate"] as const) {',
      replace: '  for (const key of ["timeLimitSeconds", "checkTimeLimitSeconds", "maxTurns"] as const) {',
      failsWith: "to deeply equal",
    },
    {
      lab: "14.2",
      what: "a call with two results passes the pairing check",
      file: "src/eval/protocol.ts",
      find: "    else if (call.results > 1)\n      problems.push(",
      replace: "    else if (call.results > 2)\n      problems.push(",
      failsWith: "it must have exactly one",
    },
    {
      lab: "14.2",
      what: "a result that answers no earlier call is not reported",
      file: "src/eval/protocol.ts",
      find: "      if (call === undefined)\n        problems.push(`the result for ${message.toolCallId} (${message.toolName}) answers no earlier tool call.`);\n      else call.results++;",
      replace: "      if (call !== undefined) call.results++;",
      failsWith: "answers no earlier tool call",
    },
    {
      lab: "14.2",
      what: "a removed file outside the workspace not reported",
      file: "src/eval/protocol.ts",
      find: "  for (const at of before.keys())\n    if (!after.has(at)) problems.push(`written outside the workspace: ${at} was removed.`);\n",
      replace: "",
      failsWith: "was removed",
    },
    {
      lab: "14.2",
      what: "replay compares only the messages both have: a shorter session file passes",
      file: "src/eval/protocol.ts",
      find: "    else if (stored.length !== messages.length) {",
      replace: "    else if (stored.length > messages.length) {",
      failsWith: "messages on its path",
    },
    {
      lab: "14.3",
      what: "a protocol failure judged after the time limit: a run that timed out and wrote outside is only a task failure",
      file: "src/eval/run-case.ts",
      find: '  if (facts.protocolProblems.length > 0)\n    return { status: "protocol", phase: "protocol", reason: facts.protocolProblems[0]! };\n  if (facts.timedOut)\n    return { status: "failed", phase: "agent", reason: `the time limit of ${settings.timeLimitSeconds} s was reached` };',
      replace:
        '  if (facts.timedOut)\n    return { status: "failed", phase: "agent", reason: `the time limit of ${settings.timeLimitSeconds} s was reached` };\n  if (facts.protocolProblems.length > 0)\n    return { status: "protocol", phase: "protocol", reason: facts.protocolProblems[0]! };',
      failsWith: "protocol",
    },
    {
      lab: "14.3",
      what: "a model call that failed counted as a task failure, not infrastructure",
      file: "src/eval/run-case.ts",
      find: '      status: "infrastructure",\n      phase: "agent",\n      reason: `the model call failed:',
      replace: '      status: "failed",\n      phase: "agent",\n      reason: `the model call failed:',
      failsWith: "infrastructure",
    },
    {
      lab: "14.3",
      what: "a check killed by a signal passes (only a non-zero exit code fails)",
      file: "src/eval/run-case.ts",
      find: "  if (check.exitCode !== 0) {",
      replace: "  if (check.exitCode !== 0 && check.exitCode !== null) {",
      failsWith: "killed by",
    },
    {
      lab: "14.4",
      what: "interrupted runs counted in the pass rate",
      file: "src/eval/suite-report.ts",
      find: "    const judged = mine.length - counts.interrupted;",
      replace: "    const judged = mine.length;",
      failsWith: "passRate",
    },
    {
      lab: "14.4",
      what: "a case with a protocol failure passes on its pass rate",
      file: "src/eval/suite-report.ts",
      find: 'passRate >= c.minPassRate && counts.protocol === 0 ? "passed" : "failed";',
      replace: 'passRate >= c.minPassRate ? "passed" : "failed";',
      failsWith: "verdict",
    },
    {
      lab: "14.4",
      what: "the exit code 1 after Ctrl-C when a case failed: the interrupt not checked first",
      file: "src/eval/suite-report.ts",
      find: '  if (report.interrupted) return 130;\n  return report.cases.every((c) => c.verdict === "passed") ? 0 : 1;',
      replace:
        '  if (!report.cases.every((c) => c.verdict === "passed")) return 1;\n  if (report.interrupted) return 130;\n  return 0;',
      failsWith: "an interrupted suite with a failed case",
    },
    {
      lab: "14.4",
      what: "runs kept in the order they finished, not by repeat",
      file: "src/eval/suite-report.ts",
      find: "    const mine = runs.filter((r) => r.case === c.name).sort((a, b) => a.repeat - b.repeat);",
      replace: "    const mine = runs.filter((r) => r.case === c.name);",
      failsWith: "to deeply equal",
    },
    {
      lab: "14.3",
      what: "break it, step 1: runCase never compares the folder around the workspace before and after",
      file: "src/eval/run-case.ts",
      find: "  problems.push(...diffSnapshots(before, await snapshotAround()));\n",
      replace: "",
      failsWith: "a run that wrote outside its workspace is a protocol failure",
    },
  ],
  breakIt: {
    zh:
      '在 `runCase` 里把 `diffSnapshots(...)` 那一行删掉，再跑 `npx vitest run test/14- -t "Lab 14\\.3\\b"`：哪个测试失败了？' +
      "一个往 `../escaped.txt` 写东西的模型现在被算成“通过”——这正是为什么协议检查要独立于任务自己的 check。" +
      "然后在仓库根目录跑 `npm run eval -- evals/offline --repeat 4`，打开它打印的 `report.html`，找到 flaky-model 的两次失败，点开看对话记录：模型哪一步做错了？",
    en:
      "Delete the diffSnapshots line in runCase and run the Lab 14.3 tests: a model that writes ../escaped.txt now passes. " +
      "Then run `npm run eval -- evals/offline --repeat 4` at the repository root and read flaky-model's failed runs in report.html.",
  },
});
