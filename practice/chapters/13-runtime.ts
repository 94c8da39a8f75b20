import { defineChapter } from "../catalogue.js";

export default defineChapter({
  id: "13",
  slug: "runtime",
  title: {
    zh: "运行时与命令行：把已有的部件接成一个能对话的智能体",
    en: "The runtime and the CLI: wiring the parts into an agent you can talk to",
  },
  invariant: {
    zh:
      "每个设置只有一个来源，按 参数 → 环境变量 → 配置文件 → 默认值 的顺序取第一个；会话文件里的消息正是智能体说过的消息，" +
      "按顺序、一条接一条地挂在上一条后面，恢复会话得到的对话与离开时相同（撕裂的最后一行被报告、跳过并保留），写不进去就停下运行，绝不悄悄丢掉。",
    en:
      "Each setting has exactly one source, the first of flag → environment → config file → default; the session file holds " +
      "exactly the messages the agent said, in order, each a child of the one before; resuming gives back the conversation " +
      "as it was left (a torn last line reported, skipped and kept); a message that cannot be written stops the run instead " +
      "of being lost.",
  },
  adds: {
    zh:
      "前面各章造好了零件：模型（第 04、05 章）、工具（第 06、08 章）、有状态的 `Agent`（第 09 章）、会话文件（第 10 章）、" +
      "上下文与压缩（第 11 章）。本章不再发明新机制，只做“接线”：`src/cli/runtime.ts` 是唯一的组装点（composition root），" +
      "交互、打印、JSON 三种模式都从它拿到同一个 `Runtime`。`npm start` 在终端上没有给任务时进入对话模式（`cli/interactive.ts`）：" +
      "回答边到边显示，工具调用一行一个并带上结果的前几行；运行中按 Enter 发出的文字走 `steer()`，Alt-Enter 或 `/later` 走 `followUp()`；" +
      "Ctrl-C 中止当前运行，再按一次退出。会话按工作目录放在 `~/.pi-course/sessions/<目录哈希>/` 下（`cli/sessions.ts`），" +
      "`--continue` 接着最新的一个，`--resume ID` 接着指定的一个。配置（`cli/settings.ts`）按 参数 → 环境变量（`PI_COURSE_BASE_URL`、" +
      "`PI_COURSE_MODEL` 等）→ 配置文件 的顺序取值，`--help` 打印的正是同一张表。`--provider anthropic` 用第 05 章的 Anthropic 适配器，" +
      "key 来自 `ANTHROPIC_API_KEY`，和 OpenAI 的 key 一样经由启动器的 Unix 套接字交给智能体，永远不进智能体的环境变量。" +
      "你要写的是三处接线：设置的优先级与配置文件、会话目录的列举与查找、把会话文件接到智能体上（第 11 章的 `setSession` 负责恢复与记录）。" +
      "这些接线看似简单，却最容易出错：上游 pi 就有过 `/resume` 选错会话（#12106）、从第一条用户消息起才落盘（#10000）这样的问题。",
    en:
      "No new mechanism: the wiring. runtime.ts is the one composition root for the interactive, print and json modes; " +
      "interactive.ts is the conversation on a terminal (streaming, compact tool lines, steer on Enter, followUp on " +
      "Alt-Enter or /later, Ctrl-C stops then exits); sessions.ts keeps one session file per conversation under " +
      "~/.pi-course/sessions/<cwd-hash>/ (--continue, --resume ID); settings.ts takes each setting from a flag, the " +
      "environment or the config file, and --help prints that table. --provider anthropic uses chapter 05's adapter, the " +
      "key handed over the launcher's socket as for OpenAI. You write three joints: the precedence of settings, listing and " +
      "finding sessions, and attaching a session file to the agent (chapter 11's setSession restores and records).",
  },
  files: [
    "src/cli/features/feature.ts",
    "src/cli/features/index.ts",
    "src/cli/options.ts",
    "src/cli/run-options.ts",
    "src/cli/usage-error.ts",
    "src/cli/args.ts",
    "src/cli/commands.ts",
    "src/cli/chat-commands.ts",
    "src/cli/settings.ts",
    "src/cli/demo.ts",
    "src/cli/export.ts",
    "src/cli/help.ts",
    "src/cli/interactive.ts",
    "src/cli/io.ts",
    "src/cli/launch.ts",
    "src/cli/main.ts",
    "src/cli/pairing.ts",
    "src/cli/render.ts",
    "src/cli/project-resources.ts",
    "src/cli/runtime.ts",
    "src/cli/runtime-model.ts",
    "src/cli/session-tree.ts",
    "src/cli/sessions.ts",
    "src/cli/start.ts",
    "src/cli/terminal-text.ts",
    "src/cli/trace.ts",
    "src/cli/transcript.ts",
    // The session's tree in the conversation (/tree, /fork, /label) and the session page
    // (/export, `export`): given whole, no lab.
    "src/session-page/entry-html.ts",
    "src/session-page/escape.ts",
    "src/session-page/headline.ts",
    "src/session-page/page-assets.ts",
    "src/session-page/page-parts.ts",
    "src/session-page/page.ts",
    "src/session-page/tree.ts",
  ],
  labs: [
    {
      id: "13.1",
      says: [
        'unknown provider "${name}" (from $PI_COURSE_PROVIDER); the providers are openai and anthropic.   (the value came from the environment)',
        "the config file ${file} does not exist (${by}).   (by: --config or $PI_COURSE_CONFIG; read-json.ts words it, the error function adds the source)",
        'unknown provider "${name}"${blame}; the providers are openai and anthropic.   (blame: " (from $PI_COURSE_PROVIDER)" for the environment, " (from \\"provider\\" in ${file})" for the config file, "" for a flag)',
        'the config file ${file} has an unknown key "${key}"; the keys are ${Object.keys(SETTINGS).join(", ")}.   (in this chapter: provider, baseUrl, model, apiKeyEnv, sessionDir, contextTokens; a later chapter\'s settings join the list)',
        'the config file ${file} holds "${key}": keep API keys out of files others may read; name the variable that holds it with "apiKeyEnv", or use --api-key-file.   (any key ending in "key", any case, that is not a known key)',
        'the config file ${file}: ${key} must be a non-empty string, got ${describeJson(value, true)}.   (read-json.ts\'s one wording; hideValues: true never shows the value itself, which may be a misplaced secret; for {"model": 3}: model must be a non-empty string, got a number.)',
        'the config file ${file} must be one JSON object, e.g. {"model": "gpt-4o-mini"}, got ${describeJson(value, true)}.',
        "the config file ${file} is not JSON (${the parser's message}); fix it or move it away.",
        "the config file ${file} cannot be read (${error.code}) (${by}).",
        'a wrong value from a variable is blamed on it too, e.g. --base-url must be http:// or https://, got "ftp://x" (from $PI_COURSE_BASE_URL).   /   ' +
          '--context-tokens must be a whole number of tokens, at least 1000, got "lots" (from $PI_COURSE_CONTEXT_TOKENS).',
      ],
      title: { zh: "设置从哪里来（resolveSettings、readConfigFile）", en: "where each setting comes from" },
      hint: {
        zh: [
          "1. `resolveSettings`：对 `SETTINGS` 里的每个设置，按顺序看：参数、环境变量（空字符串算没设）、配置文件、默认值，取第一个有值的，并记下来源（`flag` / `env` / `config` / `default`）——出错时 `parseArgs` 要靠来源告诉用户“这个值是从哪儿来的”。",
          "2. `readConfigFile`：读文件已经写好（`readTextFile`，缺文件、读不了的措辞由 `src/base/read-json.ts` 统一给出）。",
          "3. 你来写检查：先 `parseJson(text, Type.Unknown(), place)`",
          "4. 像 `apiKey` 这样以 key 结尾的未知键要特别拒绝，并告诉用户改用 `apiKeyEnv`——key 不该躺在文件里",
          "5. 其余交给 `checkJson(value, SettingsSchema, place)`：必须是一个 JSON 对象，键只能是 `SETTINGS` 里的那些，值是非空字符串，消息统一为 `<文件>: <键> must be <期望>, got <实际>.`。",
          "6. 每条错误都带上文件路径。",
          "7. 类型不对的值绝不原样回显（它可能就是密钥）：`place` 设了 `hideValues: true`，只说类型和长度，例如 `got a number.`。",
        ].join("\n"),
        en: [
          "1. resolveSettings: for each setting take the first of flag, environment (an empty variable is unset), config file, default, and record its source: error messages name it.",
          "2. readConfigFile: parseJson",
          "3. then a key such as apiKey is refused with a pointer to apiKeyEnv",
          "4. then checkJson with SettingsSchema (one JSON object, known keys, non-empty string values) in read-json's wording",
          "5. every error names the file.",
          "6. A wrong value is never echoed (it may be a key): hideValues gives its type and size, e.g. `got a number.`",
        ].join("\n"),
      },
    },
    {
      id: "13.2",
      says: [
        'no session "${id}" for ${cwd} in ${dir} (the newest: ${first five ids, 8 characters each, newest first}; /sessions lists them all).   (or " (there is none yet)." when the folder has none)',
        '"${id}" starts ${n} session ids (${ids, 12 characters each}); give more of it.',
        "the session file ${file} cannot be resumed: ${problem}",
        '这里的 "the newest" 就是 list() 的前几个（list()[0] 最新），不是 --continue 会选的那个（--continue 跳过读不了的和空的会话）。"the newest" here is list() from the start (list()[0] first), not what --continue picks (it skips unreadable and empty sessions).',
      ],
      title: { zh: "会话目录（SessionFolder.list、SessionFolder.find）", en: "the sessions folder" },
      hint: {
        zh: [
          "1. `list()`：目录不存在（ENOENT）就是空列表，别的读取错误（比如那个路径是个文件）照样抛出",
          "2. 只有 `.jsonl` 才是会话（打开着的会话旁边还有它的 `.lock` 文件），每个用 `describe()` 读成摘要（读不了的文件也列出来，带上 `problem`，绝不删除）",
          "3. 按最后写入时间从新到旧排，写入时间相同的按创建时间（`created`）从新到旧。",
          "4. `find(id)`：先找完全相同的 id（哪怕它也是别的更长 id 的开头），再找以它开头的",
          "5. 空 id 什么也不匹配。",
          "6. 一个都没有、有好几个、或者文件读不了，都抛出一条说清楚下一步怎么做的错误。",
        ].join("\n"),
        en: [
          "1. list(): a missing folder (ENOENT) is empty, any other error (the path is a file) is thrown",
          "2. describe each .jsonl and nothing else (an open session has its .lock beside it; an unreadable one is listed with its problem, never deleted)",
          "3. newest write first, a tie newest created first.",
          "4. find(id): an exact id (even one that starts a longer id), else a unique prefix",
          "5. an empty id matches none",
          "6. none, several or unreadable is an error that says what to do.",
        ].join("\n"),
      },
    },
    {
      id: "13.3",
      says: [
        "恢复的对话以最新压缩的摘要开头：一条用户消息，文本里是 <summary>\\n${summary}\\n</summary>（由第 11 章的 summaryMessage 生成）。The restored transcript starts with the newest compaction's summary, a user message holding <summary>\\n${summary}\\n</summary> (chapter 11's summaryMessage).",
      ],
      title: { zh: "把会话接到智能体上（Runtime.attach）", en: "attaching a session to the agent" },
      hint: {
        zh:
          "第 11 章的 `agent.setSession(session)` 会先读完整条路径（最新的压缩摘要排在最前）再替换对话，之后每个 `message_end` 都在运行继续之前落盘；" +
          "它拒绝时（路径坏了）什么都没变。所以顺序是：先 `setSession` 新的；失败就关掉新文件、把错误抛出去，旧会话原样不动；" +
          "成功了再记下新会话、关掉旧的（`close()` 会等它排队的写入）。`/new`、`/resume`、`--continue` 都走这一个函数。",
        en:
          "setSession(session) reads the whole path before it replaces the transcript, and refuses without changing " +
          "anything. So: attach the new one first; on a refusal close the new file and rethrow (the old session stays); " +
          "then remember the new one and close the old (close() waits for its queued writes). /new, /resume and " +
          "--continue all come through here.",
      },
      // Its tests read their options with parseArgs, which resolves the settings (13.1).
      uses: ["13.1"],
    },
  ],
  scripts: { start: "tsx src/cli/start.ts" },
  devDependencies: ["tsx"],
  wrong: [
    {
      lab: "13.1",
      what: "an empty variable counts as set: it wins over the file and the default",
      file: "src/cli/settings.ts",
      find: '      [fromEnv === "" ? undefined : fromEnv, "env"],',
      replace: '      [fromEnv, "env"],',
      failsWith: "to deeply equal",
    },
    {
      lab: "13.1",
      what: "the config file wins over the variable",
      file: "src/cli/settings.ts",
      find: '      [fromEnv === "" ? undefined : fromEnv, "env"],\n      [file[name], "config"],',
      replace: '      [file[name], "config"],\n      [fromEnv === "" ? undefined : fromEnv, "env"],',
      failsWith: "to deeply equal",
    },
    {
      lab: "13.1",
      what: "a config file that holds an API key accepted",
      file: "src/cli/settings.ts",
      find: "    if (/key$/i.test(key) && !known.includes(key)) {",
      replace: "    if (/key$/i.test(key) && known.includes(key)) {",
      failsWith: "keep API keys out of files",
    },
    {
      lab: "13.2",
      what: "sessions listed oldest first",
      file: "src/cli/sessions.ts",
      find: "    return summaries.sort((a, b) => b.modified - a.modified || b.created.localeCompare(a.created));",
      replace: "    return summaries.sort((a, b) => a.modified - b.modified || a.created.localeCompare(b.created));",
      failsWith: "to deeply equal",
    },
    {
      lab: "13.2",
      what: "an id start that several sessions share resolves to the first of them",
      file: "src/cli/sessions.ts",
      find: "    if (matches.length > 1) {\n      throw new Error(",
      replace: '    if (matches.length > 1 && id === "") {\n      throw new Error(',
      failsWith: "instead of rejecting",
    },
    {
      lab: "13.2",
      what: "an exact id does not win over a longer id it starts",
      file: "src/cli/sessions.ts",
      find: '    const matches = exact !== undefined ? [exact] : all.filter((s) => id !== "" && s.id.startsWith(id));',
      replace: '    const matches = all.filter((s) => id !== "" && s.id.startsWith(id));',
      failsWith: "give more of it",
    },
    {
      lab: "13.2",
      what: "every file of the folder listed, not only .jsonl ones",
      file: "src/cli/sessions.ts",
      find: '      names = (await readdir(this.dir)).filter((name) => name.endsWith(".jsonl"));',
      replace: "      names = await readdir(this.dir);",
      failsWith: "to deeply equal",
    },
    {
      lab: "13.3",
      what: "the session left is never closed (its lock kept)",
      file: "src/cli/runtime.ts",
      find: "    if (previous !== undefined) await this.closeSession(previous);\n",
      replace: "",
      failsWith: "expected true to be false",
    },
    {
      lab: "13.3",
      what: "a session the agent refuses is left open",
      file: "src/cli/runtime.ts",
      find: "    } catch (error) {\n      await this.closeSession(session);\n      throw error;",
      replace: "    } catch (error) {\n      throw error;",
      failsWith: "expected true to be false",
    },
    {
      lab: "13.3",
      what: "the session left closed before the new one is accepted: a refusal leaves none",
      file: "src/cli/runtime.ts",
      find: "      this.agent.setSession(session);\n    } catch (error) {",
      replace:
        "      if (this.session !== undefined) await this.closeSession(this.session);\n      this.agent.setSession(session);\n    } catch (error) {",
      failsWith: "session",
    },
    {
      lab: "13.3",
      what: "break it, step 1: Runtime.attach keeps the session but never gives it to the agent",
      file: "src/cli/runtime.ts",
      find: "      // It reads the whole path first: a refusal changes nothing.\n      this.agent.setSession(session);\n",
      replace: "      // It reads the whole path first: a refusal changes nothing.\n",
      failsWith: "a compaction entry in the session file",
    },
  ],
  breakIt: {
    zh:
      '在 `Runtime.attach` 里把 `this.agent.setSession(session)` 删掉（只记下 `this.session`），跑 `npx vitest run test/13- -t "Lab 13\\.3\\b"`：' +
      "哪些测试失败？会话文件要么根本没写出来，要么没有一条消息——智能体说过的话去哪了？再在终端里试：`npm start`，说两句话，Ctrl-D 离开，" +
      "然后 `npm start -- --continue`，看到的对话和离开时一样吗？用 `truncate -s -5` 剪掉会话文件的最后几个字节再试一次。",
    en:
      "Delete the setSession call in Runtime.attach and run the Lab 13.3 tests: which fail, and where did the messages go? " +
      "Then talk to npm start, leave with Ctrl-D, come back with --continue; cut the file's last bytes and try again.",
  },
});
