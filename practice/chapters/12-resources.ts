import { defineChapter } from "../catalogue.js";

export default defineChapter({
  id: "12",
  slug: "resources",
  title: {
    zh: "智能体周围的项目：AGENTS.md、Agent Skills、提示模板，以及信任门后面的扩展",
    en: "The project around the agent: AGENTS.md, Agent Skills, prompt templates, extensions behind a trust gate",
  },
  invariant: {
    zh:
      "知识按需进入上下文：上下文文件从根目录往下、最近的最后读，超过上限就带着可见的提示截断；技能一开始只露出名字、描述和位置，" +
      "正文和文件在激活时才读。代码先过信任门：不受信任的文件夹里的技能、模板和扩展一个都不加载，它的扩展一行都不导入；" +
      "扩展要么整体注册、要么什么都不注册；调用前的检查失败即拦截（fail closed），调用后的钩子失败只报告、从不改写也不重跑结果。",
    en:
      "Knowledge enters the context on demand: context files from the root down (the closest last), cut with a visible note " +
      "past the cap; a skill shows only its name, description and location until it is activated. Code passes a trust gate " +
      "first: nothing of an untrusted folder's skills, templates or extensions loads, and none of its extensions is imported; " +
      "an extension registers all or nothing; a failing before-check blocks the call (fail closed), a failing after-hook is " +
      "reported and never replaces or re-runs the result.",
  },
  adds: {
    zh:
      "到第 11 章为止，智能体对它所在的项目一无所知。本章加上 `src/resources/`，一个概念一个文件：" +
      "`context-files.ts` 读 `AGENTS.md`（某个文件夹没有时读 `CLAUDE.md`）——先是 `~/.pi-course/AGENTS.md`，再从文件系统根目录一路往下到工作目录，" +
      "每个文件连同路径放进系统提示的 `<project_context>`；超过 64 KB 的文件在完整字符处截断并附上提示。它们只是文字，不需要信任。" +
      "`skills.ts` 按公开的 Agent Skills 规范读技能：一个带 `SKILL.md` 的文件夹，YAML frontmatter（用 `yaml` 库解析，不手写）里有 `name` 和 `description`；" +
      "项目的 `.pi-course/skills/`、`.agents/skills/`（从工作目录往上到 git 根目录）在前，用户的 `~/.pi-course/skills/`、`~/.agents/skills/` 在后，同名的第一个胜出、冲突要报告。" +
      "校验是宽松的：名字不合规、描述太长只警告；只有缺描述或 YAML 解析失败才跳过，并说明原因。" +
      "渐进式披露：系统提示里只列名字、描述、位置；`skill-tool.ts` 的只读 `skill` 工具在激活时才读正文，并且只能读已激活技能文件夹里的文件——" +
      "这样用户级技能虽然在工作区外面，`write`、`edit`、`bash` 能碰到的范围一点也没有变大。" +
      "`prompt-templates.ts`：`/NAME 参数` 把模板展开（`$1`、`$@`、`$ARGUMENTS`、`${1:-默认值}`、`${@:2}`），参数像 shell 那样分词，替换进去的文字不会被再次展开。" +
      "`extension-host.ts`：扩展是默认导出工厂函数 `(api) => void` 的 ES 模块（TypeScript 或 JavaScript，用 `jiti` 加载，构建出来的 bin 也能直接加载 .ts），" +
      "可以注册工具、调用前/后钩子、斜杠命令和系统提示段落；先暂存、工厂正常返回后才提交。" +
      "`trust.ts`：项目的技能、模板、扩展只在受信任的文件夹里加载；决定记在 `~/.pi-course/trust.json`，最近的文件夹的决定生效；" +
      "交互模式问一次并记住，`--approve` / `--no-approve` 只管这一次，print 和 json 模式跳过未受信任的项目资源并说明。" +
      "`resources.ts` 把它们按顺序组合起来（先决定信任，再读项目资源），命令行（第 13 章）只是调用它。",
    en:
      "src/resources/: AGENTS.md/CLAUDE.md from ~/.pi-course and from the root down to the working folder (capped with a " +
      "visible note, no trust needed); Agent Skills per the public specification (YAML frontmatter by the yaml library, " +
      "project folders up to the git root before the user's, first name wins, lenient validation, progressive disclosure, " +
      "a read-only skill tool that reads only active skills' folders); prompt templates with shell-like arguments and " +
      "one-pass expansion; an extension host (jiti, stage then commit, fail-closed before-hooks, after-hooks that only " +
      "report); and a trust gate (trust.json, closest folder wins, asked once, flags for one run) decided before anything " +
      "of the project is loaded.",
  },
  files: [
    "src/resources/types.ts",
    "src/resources/folders.ts",
    "src/resources/frontmatter.ts",
    "src/resources/resource-file.ts",
    "src/resources/context-files.ts",
    "src/resources/skills.ts",
    "src/resources/skill-tool.ts",
    "src/resources/prompt-templates.ts",
    "src/resources/extension-api.ts",
    "src/resources/extension-flags.ts",
    "src/resources/extension-host.ts",
    "src/base/read-json.ts",
    "src/resources/trust.ts",
    "src/resources/resources.ts",
  ],
  labs: [
    {
      id: "12.1",
      title: { zh: "上下文文件：从根目录往下走（findContextFiles）", en: "context files: the walk from the root down" },
      hint: {
        zh: [
          "1. 先放 `piHome` 里的（scope `user`）",
          "2. 再用 `foldersFromRoot(cwd)` 从根目录往下，每个文件夹取 `CONTEXT_FILE_NAMES` 里第一个是普通文件的（scope `project`）。",
          "3. 用 `realpathSync` 去重：两个路径到达同一个文件只读一次，保留先到达的那个路径（从根往下走时先遇到的；不要换成真实路径）",
          "4. 真实路径不在它所在文件夹之内的（指向外面的符号链接）不读，给警告 `linksOutside(real, folder)` 的文本（判断用 `outside`）。",
          "5. 用 `readCapped` 读（最多读 `maxBytes` 字节，在完整的 UTF-8 字符处截断，末尾接上 `truncationNote`）",
          "6. 读不了的文件变成警告 `cannot read it (错误码); it is left out`",
          "7. 被截断的文件也给一条警告：`it is <bytes> bytes, over the cap of <maxBytes>: the model sees the first <maxBytes> bytes`。",
          "8. 永远不抛异常。",
        ].join("\n"),
        en: [
          "1. The piHome file first (user)",
          "2. then foldersFromRoot(cwd), the first regular file of CONTEXT_FILE_NAMES per folder (project)",
          "3. dedupe by realpath (a file reached twice keeps the path it was first reached by)",
          "4. a file whose real path is outside its folder is left out with the warning linksOutside(real, folder)",
          "5. read with readCapped",
          "6. warn on unreadable files and on cut ones with the exact texts above.",
        ].join("\n"),
      },
    },
    {
      id: "12.2",
      says: [
        'the name "${name}" breaks the specification: ${skillNameProblem(name)}   (e.g. for "Bad_Name": the name "Bad_Name" breaks the specification: it may hold only lowercase letters a-z, digits and hyphens)',
      ],
      title: {
        zh: "技能：按规范宽松校验，按优先级发现（readSkill、discoverSkills）",
        en: "skills: lenient validation, discovery by precedence",
      },
      hint: {
        zh: [
          "1. `readSkill`：`parseFrontmatter` 失败 → 警告 `skipped: <原因>` 并返回 undefined；没有（或空的）`description` → `skipped: it has no \\`description\\` in its frontmatter (the model needs it to know when to use the skill)`。",
          '2. 名字不合规（`skillNameProblem`）→ `the name "X" breaks the specification: <问题>`；和文件夹名不一致 → `the name "X" should match its folder\'s name "Y"`；没有名字 → 用文件夹名，并警告 `it has no \\`name\\` in its frontmatter; it is named after its folder, "Y"`；描述超过 1024 → `its description is N characters long (the specification allows 1024)`；未知字段 → `unknown field \\`K\\` is ignored`。',
          "3. `name` 和 `description` 先 trim，空白的就算没有；正好 1024（`compatibility` 正好 500）不警告，超过才警告：`its compatibility is N characters long (the specification allows 500)`。",
          "4. 这些只是警告，技能照常加载。",
          "5. `metadata` 只留字符串值，`allowed-tools` 按空白切开（不留空词）。",
          "6. 可选字段类型不对就忽略它并警告：`\\`license\\` should be a string; it is ignored`、`\\`compatibility\\` should be a string; it is ignored`、`\\`metadata\\` should be a mapping of keys to strings; it is ignored`（字符串、null、列表都算）、`\\`metadata.KEY\\` should be a string; it is ignored`、`\\`allowed-tools\\` should be a space-separated string; it is ignored`、`\\`disable-model-invocation\\` should be true or false; the model may invoke it`（按这个顺序）。",
          "7. `discoverSkills`：按 roots 的顺序，用 `skillFolders` 找技能文件夹（带 `SKILL.md` 的文件夹就是一个技能，不再往里找；跳过点开头的文件夹和 `node_modules`）",
          '8. 同名的后来者警告 `skipped: the skill "N" of <先来者的位置> comes first and wins the name`。',
          "9. root 自己直接放着 `SKILL.md` 时它不是技能（技能是 root 下面的文件夹）",
          "10. 同一个 `SKILL.md`（同一个位置）被两个 root 找到（比如在家目录里运行，项目的文件夹就是用户的）只算一次、不警告",
          "11. 不存在的 root 或空字符串的 root 什么都没有，也不警告。",
        ].join("\n"),
        en: [
          "1. readSkill: skip (with the reason) only on a frontmatter error or a missing description",
          "2. warn on a bad name, a name unlike its folder, a missing name (use the folder's), a long description, unknown fields.",
          "3. Name and description are trimmed (blank is missing)",
          "4. the limits themselves are fine",
          "5. an optional field of the wrong type is ignored with the warnings above.",
          "6. discoverSkills: roots in order",
          "7. first name wins, later ones warned about",
          "8. a root is never a skill itself",
          "9. the same SKILL.md reached through two roots is one skill, no warning.",
        ].join("\n"),
      },
    },
    {
      id: "12.3",
      title: {
        zh: "提示模板：像 shell 一样分词，一遍替换（splitArguments、expandTemplate）",
        en: "templates: shell-like words, one-pass expansion",
      },
      hint: {
        zh: [
          "1. `splitArguments`：空白（空格、制表符、`\\n`、`\\r`）分词",
          "2. 单引号里原样保留",
          '3. 双引号里只有 `\\"`、`\\\\`、`\\$`、`` \\` `` 的反斜杠起转义作用',
          "4. 引号外反斜杠转义下一个字符（结尾落单的反斜杠没有可转义的，原样保留）",
          '5. `""` 是一个空词',
          "6. 没闭合的引号（单引号或双引号）一直到结尾。",
          "7. `expandTemplate`：用一个正则 `PLACEHOLDER` 做一次 `replace`——这样替换进去的文字不会再被扫描（参数里的 `$2` 还是 `$2`）。",
          "8. `${N:-默认}` 在第 N 个参数缺失或为空时用默认值",
          "9. `${@:N}`、`${@:N:L}` 是从第 N 个起（L 个）用空格连接",
          "10. `$@` 和 `$ARGUMENTS` 是全部参数用空格连接",
          "11. 缺的参数是空字符串。",
        ].join("\n"),
        en: [
          "1. splitArguments as a POSIX shell splits words (no expansion; line breaks are blanks, a lone trailing backslash stays).",
          "2. expandTemplate: one replace() over PLACEHOLDER, so substituted text is never expanded again",
          "3. missing arguments are empty",
          "4. defaults when missing or empty.",
        ].join("\n"),
      },
      says: [
        "例 (worked example)：`Review $1 for ${2:-bugs}. All: $@. Again: $ARGUMENTS. Rest: ${@:2}. One: ${@:2:1}. Tenth: ${10}. Missing: [$3]` with main.ts speed x → `Review main.ts for speed. All: main.ts speed x. Again: main.ts speed x. Rest: speed x. One: speed. Tenth: . Missing: [x]`",
      ],
    },
    {
      id: "12.4",
      says: [
        "${method}: register while the extension's factory runs, not later   (e.g. addSystemPrompt: register while the extension's factory runs, not later; registerFlag: register while the extension's factory runs, not later)",
        "registerTool needs a tool with a name, a description, parameters and an execute function   (a TypeError: not an object, null, no execute function, no description string)",
        'tool name "${tool.name}": use 1-64 of A-Z a-z 0-9 _ -   /   tool "${tool.name}" needs parameters (a JSON Schema object)   (parameters missing or null)',
        'command name "${commandName}": use a-z, 0-9 and -, a letter or digit first   /   command "/${commandName}" needs a run function   (also when the command itself is missing)',
        "beforeToolCall needs a function   /   afterToolCall needs a function   /   addSystemPrompt needs a string",
        "a hook's timeoutMs must be a positive number of milliseconds, got ${ms}   (finite and > 0; e.g. got 0, got NaN)",
        "the run was aborted before the call's checks finished   (beforeToolCall's block reason when the signal fires while a check runs)",
        'its afterToolCall hook did not answer within ${timeoutMs} ms for "${name}"; the result is kept as it was   /   its afterToolCall hook failed (${message}) for "${name}"; …   (given code, afterToolCall: a diagnostic whose path is the extension, shown as `policy: its afterToolCall hook …`)',

        "the tool call was not run: a check of the extension ${extension} gave an answer that cannot be read (${message}) (extension checks fail closed).   (reading the answer threw, e.g. a getter; an answer that is not an object: (a ${typeof answer}, not an object); a block that is neither true nor false: (its block is a ${typeof block}, not true or false))",
      ],
      title: {
        zh: "扩展宿主：先暂存再提交，调用前的检查失败即拦截（loadFactory、beforeToolCall）",
        en: "the extension host: stage then commit, fail closed",
      },
      hint: {
        zh: [
          "1. `loadFactory`：给工厂一个只往暂存区写的 API，用第 07 章的 `settle` 等它（带 `factoryTimeoutMs`）；抛错、拒绝或超时 → `not loaded (nothing of it is registered): its factory threw: <消息>` 或 `…: its factory did not finish within N ms`，什么都不提交。",
          '2. 工厂结束后关掉 API（之后的注册抛 `<方法>: register while the extension\'s factory runs, not later`），再提交（提交后把这个扩展记进 `host.extensions`：`{ path, scope, tools, commands, flags, beforeHooks, afterHooks, promptSections }`（`LoadedExtension`），列出真正登记上的名字）：名字被占用的工具/命令留下警告 `its tool "X" is left out: another tool has that name` / `its command /X is left out: another command has that name`，其余照常。',
          "3. `registerFlag`（命令行选项 `--NAME`）：用给定的 `checkedFlag(名字, flag, 扩展名)` 检查后暂存，提交时交给 `this.flags.commit(暂存的, this.warnings)`，它返回登记上的名字（记进 `LoadedExtension.flags`；被占用 → `its flag --X is left out: another option has that name`）",
          "4. `getFlag(名字)` 不受关闭影响，随时读 `this.flags.get(名字)`（提交前为 undefined）。",
          '5. `beforeToolCall`：按加载顺序跑每个钩子（各自的 `timeoutMs`）；抛错 → `{ block: true, reason: "the tool call was not run: a check of the extension E failed (消息) (extension checks fail closed)." }`，超时 → `… did not answer within N ms (extension checks fail closed).`，`{ block: true }` → `blocked by the extension E: <理由或 no reason given>`（空字符串的理由也算没有）',
          '6. 只有 `block === true` 才拦截：`undefined`、`null`、`{ block: false }` 都放行；读答案时抛错（比如 getter）→ `… gave an answer that cannot be read (消息) …` 拦截；答案不是对象（比如字符串）、或 `block` 既不是 true 也不是 false（比如 `"yes"`）也读不懂，同样拦截，消息是 `(a string, not an object)` / `(its block is a string, not true or false)`',
          '7. 信号在检查中途触发 → `{ block: true, reason: "the run was aborted before the call\'s checks finished" }`。',
          "8. 绝不抛给智能体循环。",
          "9. 注册时就检查（抛 TypeError，工厂因此失败，上面 says 里的文字）：工具要是对象、有 execute 函数、description 字符串、合规的名字和非 null 的 parameters，没有 label 的用 name 作 label；命令要合规的名字和 run 函数；钩子要函数，`timeoutMs`（默认 `DEFAULT_HOOK_TIMEOUT_MS`）要是有限的正数；addSystemPrompt 要字符串。",
          "10. 占用的名字包括前面扩展登记的工具。",
        ].join("\n"),
        en: [
          "1. loadFactory: stage through the API, settle the factory with a time limit, commit only on success (and record the extension in host.extensions with the names that were registered), then close the API (registerFlag: checkedFlag, then this.flags.commit; getFlag reads this.flags.get at any time)",
          "2. taken names are left out with a warning.",
          "3. beforeToolCall: every hook in order; a throw, a timeout or a block blocks the call with the exact reasons above (only block === true blocks; null and { block: false } let it through; an empty reason is no reason; an unreadable answer, an answer that is not an object, a block that is neither true nor false, and an abort block too)",
          "4. never throw into the loop.",
          "5. Registrations are checked as they are made (the says texts; a tool without a label is labelled by its name; an earlier extension's tool name is taken).",
        ].join("\n"),
      },
    },
    {
      id: "12.5",
      title: {
        zh: "信任门：最近的决定生效，问一次（TrustStore.lookup、decideTrust）",
        en: "the trust gate: closest decision wins, asked once",
      },
      hint: {
        zh: [
          "1. `lookup`：把文件夹 `canonicalFolder`（解析符号链接），在所有决定里找覆盖它的（它自己或它的祖先——用 `path.relative`，不要用字符串前缀：`/a/code` 不是 `/a/codex` 的父目录），取路径最长的那个（和决定保存的先后无关）。",
          '2. `decideTrust`：有 `override` → `{ trusted: override, source: "flag" }`，什么都不保存',
          '3. 有保存的决定 → `source: "saved"`',
          '4. 能问（`ask`）→ 问，答案保存（`store.remember`），`source: "asked"`，答 `undefined`（取消）就这次不信任、什么都不保存，结果是 `{ trusted: false, source: "default" }`（不是 `"asked"`：没有得到回答）',
          '5. 否则也是 `{ trusted: false, source: "default" }`。',
        ].join("\n"),
        en: [
          "1. lookup: canonical folder, the longest saved folder that covers it, whatever the order saved (path.relative, not a string prefix).",
          '2. decideTrust: flag (nothing saved), else saved, else ask (saved; a dismissal saves nothing and is source "default", not "asked"), else untrusted by default.',
        ].join("\n"),
      },
      // The loader's test reads the context files (12.1) before it decides trust.
      uses: ["12.1"],
    },
  ],
  wrong: [
    {
      lab: "12.1",
      what: "a file reached twice read twice (no seen set)",
      file: "src/resources/context-files.ts",
      find: "    if (seen.has(real)) continue;\n",
      replace: "",
      failsWith: "to deeply equal",
    },
    {
      lab: "12.1",
      what: "a file that links outside its folder included",
      file: "src/resources/context-files.ts",
      find: "    if (outside(folder, real)) {\n      warnings.push({ path: file, message: linksOutside(real, folder) });\n      continue;\n    }\n",
      replace: "",
      failsWith: "to deeply equal",
    },
    {
      lab: "12.1",
      what: "the user's own AGENTS.md left out (piHome ignored)",
      file: "src/resources/context-files.ts",
      find: '  if (options.piHome !== undefined) candidates.push({ folder: options.piHome, scope: "user" });\n',
      replace: "",
      failsWith: "to deeply equal",
    },
    {
      lab: "12.1",
      what: "a file over the cap cut without a warning",
      file: "src/resources/context-files.ts",
      find: "    const last = files.at(-1)!;\n    if (last.truncated) {\n      warnings.push({\n        path: file,\n        message: `it is ${last.bytes} bytes, over the cap of ${maxBytes}: the model sees the first ${maxBytes} bytes`,\n      });\n    }\n",
      replace: "",
      failsWith: "to deeply equal",
    },
    {
      lab: "12.2",
      what: "the roots read in reverse: the user's skill wins a name over the project's",
      file: "src/resources/skills.ts",
      find: "  for (const root of roots) {\n    // a root that itself",
      replace: "  for (const root of [...roots].reverse()) {\n    // a root that itself",
      failsWith: "to deeply equal",
    },
    {
      lab: "12.2",
      what: "names and descriptions kept untrimmed",
      file: "src/resources/skills.ts",
      find: '  const description = typeof data.description === "string" ? data.description.trim() : "";',
      replace: '  const description = typeof data.description === "string" ? data.description : "";',
      failsWith: "to deeply equal",
    },
    {
      lab: "12.2",
      what: "a skill without a description loaded anyway",
      file: "src/resources/skills.ts",
      find: '  if (description === "") {\n    warn("skipped: it has no `description` in its frontmatter (the model needs it to know when to use the skill)");\n    return undefined;\n  }\n',
      replace: "",
      failsWith: "to deeply equal",
    },
    {
      lab: "12.2",
      what: "an optional field of the wrong type taken as it is, without a warning",
      file: "src/resources/skills.ts",
      find: '    if (typeof data.license === "string") skill.license = data.license;\n    else warn("`license` should be a string; it is ignored");',
      replace: "    skill.license = data.license as string;",
      failsWith: "license",
    },
    {
      lab: "12.3",
      what: "quotes not understood: arguments split at every space",
      file: "src/resources/prompt-templates.ts",
      find: '  const words: string[] = [];\n  let word = "";',
      replace: '  return text.split(/\\s+/).filter((w) => w !== "");\n  const words: string[] = [];\n  let word = "";',
      failsWith: "to deeply equal",
    },
    {
      lab: "12.3",
      what: "substituted text expanded again (a second pass over the result)",
      file: "src/resources/prompt-templates.ts",
      find: '    return match === "$@" || match === "$ARGUMENTS" ? args.join(" ") : match;\n  });',
      replace:
        '    return match === "$@" || match === "$ARGUMENTS" ? args.join(" ") : match;\n  }).replace(PLACEHOLDER, (m, d, f, from, count, braced, digit) => (digit ?? braced ?? d) !== undefined ? at(Number(digit ?? braced ?? d)) : m);',
      failsWith: "// Object.is equality",
    },
    {
      lab: "12.3",
      what: "a ${N:-default} whose argument is given still takes the default",
      file: "src/resources/prompt-templates.ts",
      find: '    if (withDefault !== undefined) return at(Number(withDefault)) === "" ? fallback : at(Number(withDefault));',
      replace: "    if (withDefault !== undefined) return fallback;",
      failsWith: "// Object.is equality",
    },
    {
      lab: "12.3",
      what: "${@:N:L} counted from 0, not 1",
      file: "src/resources/prompt-templates.ts",
      find: "      const start = Math.max(Number(from), 1) - 1;",
      replace: "      const start = Number(from);",
      failsWith: "// Object.is equality",
    },
    {
      lab: "12.4",
      what: "a factory that throws still registers what it staged",
      file: "src/resources/extension-host.ts",
      find: "      this.warnings.push({ path: name, message: `not loaded (nothing of it is registered): ${why}` });\n      return false;",
      replace:
        "      this.warnings.push({ path: name, message: `not loaded (nothing of it is registered): ${why}` });\n      this.commit(staged, name, scope);\n      return false;",
      failsWith: "to deeply equal",
    },
    {
      lab: "12.4",
      what: "registration still open after the factory returned",
      file: "src/resources/extension-host.ts",
      find: '    open = false;\n    if (outcome.kind !== "value") {',
      replace: '    if (outcome.kind !== "value") {',
      failsWith: "expected [Function] to throw an error",
    },
    {
      lab: "12.4",
      what: "a tool name an earlier extension took replaces it",
      file: "src/resources/extension-host.ts",
      find: '      if (takenTools.has(tool.name)) {\n        this.warnings.push({ path: name, message: `its tool "${tool.name}" is left out: another tool has that name` });\n        continue;\n      }\n',
      replace: "",
      failsWith: "expected [ { name: 'read', \u2026(4) } ] to deeply equal []",
    },
    {
      lab: "12.4",
      what: "a before-hook that throws is skipped (fails open) instead of blocking",
      file: "src/resources/extension-host.ts",
      find: '      if (outcome.kind === "threw") return failed(`failed (${firstLine(outcome.error)})`);',
      replace: '      if (outcome.kind === "threw") continue;',
      failsWith: "fail closed",
    },
    {
      lab: "12.5",
      what: "the first saved decision that covers the folder wins, not the closest",
      file: "src/resources/trust.ts",
      find: "(best === undefined || decision.folder.length > best.folder.length)",
      replace: "best === undefined",
      failsWith: "the decision of the closest folder wins",
    },
    {
      lab: "12.5",
      what: "the user's answer not saved: asked again every run",
      file: "src/resources/trust.ts",
      find: '    const decision = options.store.remember(folder, answer);\n    return { folder, trusted: answer, source: "asked", decision };',
      replace: '    return { folder, trusted: answer, source: "asked" };',
      failsWith: "asked",
    },
    {
      lab: "12.5",
      what: "the saved decision wins over the --trust flag",
      file: "src/resources/trust.ts",
      find: '  if (options.override !== undefined) return { folder, trusted: options.override, source: "flag" };\n  const saved = options.store.lookup(folder);\n  if (saved !== undefined) return { folder, trusted: saved.trusted, source: "saved", decision: saved };',
      replace:
        '  const saved = options.store.lookup(folder);\n  if (saved !== undefined) return { folder, trusted: saved.trusted, source: "saved", decision: saved };\n  if (options.override !== undefined) return { folder, trusted: options.override, source: "flag" };',
      failsWith: "flag",
    },
    {
      lab: "12.5",
      what: "break it, step 1: the project's extensions loaded whether or not the folder is trusted",
      file: "src/resources/resources.ts",
      find: '  if (trusted) for (const file of extensionFiles(projectExtensionFolder(locations))) await host.load(file, "project");',
      replace:
        '  for (const file of extensionFiles(projectExtensionFolder(locations))) await host.load(file, "project");',
      failsWith: "the untrusted project's extension ran",
    },
  ],
  breakIt: {
    zh:
      '在 `loadResources` 里去掉加载项目扩展那一行前面的 `if (trusted)`（不管信不信任都 `host.load`），跑 `npx vitest run test/12- -t "Lab 12\\.5\\b"`：' +
      "哪个断言失败？用户明明回答了“不信任”，副作用文件还是出现了——这正是“信任门必须在导入之前”的原因：模块的顶层代码在 import 时就执行了，事后不用它也来不及。" +
      "再把 `expandTemplate` 改成两遍替换（先换 `$1`，再换 `$@`），用参数 `'$@'` 试试会发生什么。",
    en:
      "In loadResources, drop the `if (trusted)` before the project-extension load and run the Lab 12.5 tests: the user said " +
      "no, and the side-effect file appears anyway. A module's top level runs at import. Then make expandTemplate two passes and try the argument '$@'.",
  },
});
