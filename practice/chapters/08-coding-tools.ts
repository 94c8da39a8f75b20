import { defineChapter } from "../catalogue.js";

export default defineChapter({
  id: "08",
  slug: "coding-tools",
  title: { zh: "编码工具：read / write / edit / ls / bash", en: "Coding tools" },
  invariant: {
    zh:
      "每条路径都留在同一个工作区根目录里（先做字面检查和 realpath 检查，真正使用时从根目录起逐级持有目录描述符、不跟随任何符号链接，打开之后再核对一次）；" +
      "写入是原子的，同一路径的写入排队执行；" +
      "bash 受时间和输出上限约束，超时或中止时整个进程组都会被杀掉。",
    en:
      "Every path stays inside one workspace root (lexical and realpath checks; the use walks from the root with held folder " +
      "descriptors that follow no symlink, and is verified again after the open); writes are atomic and serialised per path; " +
      "bash is bounded by time and output and its whole process group is killed.",
  },
  adds: {
    zh:
      "五个真正的 `AgentTool`：`read`（带行号、offset/limit、行数与字节上限、截断时给出继续读取的提示）、" +
      "`write`（临时文件 + rename 的原子写入）、`edit`（精确文本替换：零处或多处匹配都拒绝，多处编辑先在内存里全部检查再一次写入）、" +
      "`ls` 和 `bash`（超时、stdout/stderr 共用一个输出上限、杀掉整个进程组、响应中止）。它们共用一个 `Workspace`：" +
      "模型给出的任何路径都要先过字面检查（`..`、绝对路径），再过磁盘检查（realpath，新文件检查最近的已存在祖先目录），" +
      "检查和使用之间，另一个进程可能把路径上的文件或目录换成指向工作区外的符号链接，所以使用时不再按路径走：" +
      "`HeldFolder`（已给出）从根目录起一级一级地用 O_DIRECTORY|O_NOFOLLOW 打开目录并持有描述符，" +
      "在 Linux 上通过 `/proc/self/fd/N/名字` 在持有的目录里打开、创建、改名（缺的目录也这样一级一级地建），" +
      "打开后再核对描述符的真实路径。" +
      "`createCodingTools(root)` 把五个工具交给 `agentLoop`，这就是 `npm start` 里那个智能体的双手。",
    en:
      "Five real AgentTools over one Workspace: read (numbered, windowed, capped, with a continuation hint), write (atomic " +
      "temp + rename, serialised per path), edit (exact unique replacements, all checked before one write), ls, and bash " +
      "(timeout, one shared output cap, process-group kill, abort). Every path is checked lexically and on disk, then used " +
      "through held folder descriptors (HeldFolder, given) that follow no symlink, and verified again after the open.",
  },
  files: [
    "src/coding-tools/workspace.ts",
    "src/coding-tools/held-folder.ts",
    "src/coding-tools/repairs.ts",
    "src/coding-tools/read.ts",
    "src/coding-tools/write.ts",
    "src/coding-tools/edit.ts",
    "src/coding-tools/ls.ts",
    "src/coding-tools/bash.ts",
    "src/coding-tools/processes.ts",
    "src/coding-tools/index.ts",
  ],
  labs: [
    {
      id: "8.1",
      title: { zh: "把路径关在工作区里（resolve 与 verifyOpened）", en: "containment: resolve and verifyOpened" },
      hint: {
        zh: [
          "1. 先做字面检查（已给出 `lexicalRelative`），再从目标往上找最近的已存在祖先，对它 realpath，结果必须仍在 `this.root` 之内；目标不存在的部分原样接回去。",
          "2. 悬空的符号链接（lstat 能看到、realpath 失败）直接拒绝。",
          "3. realpath 的错误里只有 ENOENT 和 ENOTDIR（路径上有一段是文件）表示“还不存在”，其他错误（例如名字太长的 ENAMETOOLONG）原样抛出。",
          "4. 空路径（或不是字符串）和含 NUL 的路径先用普通 Error 拒绝。",
          "5. `verifyOpened`：Linux 上读 `/proc/self/fd/<fd>` 得到描述符的真实路径；读不到时（其他平台）对 `expected` 做 realpath 再 lstat，inode 和 dev 都与描述符相同才算同一个文件。",
          "6. 路径不在根目录里、或者对不上，都抛 WorkspaceEscapeError。",
        ].join("\n"),
        en: [
          "1. Lexical check first (lexicalRelative is given), then realpath the nearest existing ancestor and require it inside the root; refuse dangling links.",
          "2. Only ENOENT and ENOTDIR mean not there yet; rethrow any other error (ENAMETOOLONG).",
          "3. An empty path and a NUL are plain Errors.",
          "4. verifyOpened: /proc/self/fd/<fd> on Linux; when that cannot be read, realpath then lstat expected and require the same inode and dev as the descriptor.",
        ].join("\n"),
      },
      says: [
        "The path is empty. Give a path relative to the workspace root.   (also for a path that is not a string)",
        "The path contains a NUL character.",
        "The path ${JSON.stringify(input)} is outside the workspace ${this.root}. Use a path inside it (relative paths are relative to the workspace root).",
        "The path ${JSON.stringify(input)} goes through a symbolic link whose target does not exist; it is refused.",
        "The path ${JSON.stringify(input)} leads outside the workspace through a symbolic link (to ${real}); it is refused.",
        '${path.relative(this.root, expected) || "."} was moved outside the workspace while it was being opened; it is refused.   (verifyOpened; the root itself is ". was moved outside the workspace …")',
      ],
    },
    {
      id: "8.2",
      title: {
        zh: "原子写入与按路径排队（writeFileAtomic、PathLocks.run）",
        en: "atomic writes and per-path serialisation",
      },
      hint: {
        zh: [
          "1. 临时文件要和目标在同一个目录（rename 只在同一文件系统内是原子的），用 O_CREAT|O_EXCL|O_NOFOLLOW 打开，写完 sync 再 rename；任何失败都删掉临时文件。",
          "2. 工具传进来的 target 可能是 `/proc/self/fd/N/名字`（持有的目录里的名字），直接用 path.dirname(target) 拼临时文件名，不要先 realpath，否则又回到了按路径走。",
          "3. 权限：没给 mode 时沿用旧文件的权限，新文件用 0o644（umask 之前）。",
          "4. 临时文件的描述符无论成败都要关掉。",
          "5. PathLocks：每个 key 记住队尾的 promise，新任务接在它后面；失败的任务不能卡住后面的任务，空闲的 key 要从 Map 里删掉——只有 Map 里的队尾仍是这一个时才删，否则后来排队的任务会和正在跑的并行。",
        ].join("\n"),
        en: [
          "1. Temp file in the same folder, O_CREAT|O_EXCL|O_NOFOLLOW, sync, rename; remove it on failure.",
          "2. The target may be /proc/self/fd/N/name (a name in a held folder): join the temp name to path.dirname(target), never realpath it.",
          "3. Mode: the old file's, or 0o644 for a new one.",
          "4. Close the descriptor on success and failure.",
          "5. PathLocks chains tasks per key, survives failures, and forgets an idle key only while its tail is still the one it set.",
        ].join("\n"),
      },
      // The write and edit tool tests resolve their path first.
      uses: ["8.1"],
    },
    {
      id: "8.3",
      title: { zh: "read 的窗口：行号、上限与继续提示（formatReadOutput）", en: "the read window" },
      hint: {
        zh: [
          "1. 行号从 1 开始，右对齐到窗口里最大行号的宽度，后接制表符。",
          "2. 调用者给的 `limit` 也不能超过 `maxLines`。",
          "3. 行数上限和字节上限谁先到就停在谁那里，并在末尾写明 `Use offset=N to continue.`",
          "4. 单独一行就超过字节上限时，截断这一行而不是什么都不显示。",
          "5. 每行按 UTF-8 字节计入上限：编号、制表符、内容再加一个换行；正好用满上限的一行仍然放得下。",
          "6. 截断按字节切，切在一个字符中间时，解码出的末尾 U+FFFD（半个字符）要去掉。",
          "7. 提示里的上限用 `formatSize(maxBytes)` 写（`1 KB`、`100 bytes`）。",
        ].join("\n"),
        en: [
          "1. 1-based numbers padded to the widest shown, a tab, the line.",
          "2. A caller's limit never exceeds maxLines.",
          "3. Stop at whichever cap comes first and say how to continue",
          "4. cut a single oversized line rather than show nothing.",
          "5. A line costs its UTF-8 bytes plus a newline; one that fills the cap exactly fits.",
          "6. Cut by bytes and drop the trailing U+FFFD of a split character.",
          "7. Write the cap with formatSize(maxBytes) (1 KB, 100 bytes).",
        ].join("\n"),
      },
      uses: ["8.1"],
    },
    {
      id: "8.4",
      title: { zh: "精确编辑（applyEdits）", en: "exact edits" },
      hint: {
        zh:
          "每个 oldText 都对照原始内容匹配，必须恰好出现一次；按位置排序后检查是否重叠，再从头到尾拼出新内容。" +
          "错误信息要告诉模型下一步怎么做（重新读取文件、多带几行上下文、合并重叠的编辑）。" +
          "只有一处编辑时消息里称它 `oldText`，多处时称 `edits[i].oldText`；匹配多处时数出一共几处。",
        en:
          "Match every oldText against the original, exactly once; sort by position, refuse overlaps, then splice once. " +
          "Error messages tell the model what to do next; a single edit is named oldText, one of several edits[i].oldText, " +
          "and several matches are counted.",
      },
      says: [
        "${name} was not found in the file. Read the file again and copy the text exactly, including whitespace.   (name: oldText, or edits[i].oldText)",
        "${name} matches ${count} places in the file. Include more surrounding lines so it matches exactly one.",
      ],
      uses: ["8.1"],
    },
    {
      id: "8.5",
      title: { zh: "有界的 bash（runCommand）", en: "bounded bash" },
      hint: {
        zh: [
          "`runCommand`：",
          '1. `spawn(shell, ["-c", command], { detached: true })` 让命令自成一个进程组，`process.kill(-pid, sig)` 就能杀掉它启动的所有进程。',
          "2. 超时或中止：先 SIGTERM，宽限期后 SIGKILL。",
          "3. stdout 和 stderr 写进同一个缓冲区，只保留最后 cap 个字节，但要数清总字节数。" +
            "`truncated` 表示有字节被丢掉（totalBytes > cap），留下的块可能正好凑满 cap；从头部截断可能切开 UTF-8 字符，只在截断时去掉开头的 U+FFFD。",
          "4. shell 退出后也要杀掉留在后台的进程，否则它们占着管道，调用永远不返回。",
          "5. spawn 之后调用 `trackProcessGroup(pid, marker)`，结束时调用 `untrackProcessGroup(pid)`：本进程退出时还活着的进程组会收到 SIGKILL。",
          "6. 有的进程会离开进程组甚至会话（`setsid`、两次 fork），`kill(-pid)` 够不着：给每次调用一个 `newCallMarker()`，" +
            "放进命令的环境变量 `CALL_MARKER_VARIABLE`，shell 退出时用 `killLeftovers(pid, marker)` 连它们一起杀掉。",
          "7. 时间上限先过 `checkTimeBound`：Node 的定时器超过 2³¹−1 毫秒会在 1 毫秒后就触发。",
          "8. stdin 用 `ignore`（读到的是 /dev/null），否则读标准输入的命令会一直等到超时。",
          "9. shell 启动失败（`error` 事件，例如找不到 shell）也要 resolve：exitCode 127，output 是 Node 的错误信息加一个换行。",
          "10. shell 退出后等 `close`（管道读完）再结束；够不着的进程仍占着管道时，200 毫秒后销毁管道照样结束。结束时移除 abort 监听器。",
        ].join("\n"),
        en: [
          "runCommand:",
          "1. a detached spawn gives the command its own process group; kill(-pid) reaches all of it.",
          "2. on a timeout or an abort: SIGTERM, then SIGKILL after the grace period.",
          "3. one shared tail buffer, total bytes counted; truncated means bytes were dropped (totalBytes > cap; the kept chunks may fill the cap exactly); when cut, drop the leading U+FFFD of a split character.",
          "4. kill leftovers on exit so the pipes close.",
          "5. trackProcessGroup(pid, marker) after the spawn, untrackProcessGroup(pid) at the end.",
          "6. processes that leave the group (setsid, double fork) carry the call's marker variable: killLeftovers(pid, marker) reaches them.",
          "7. checkTimeBound the timeouts first (a Node timer above 2^31-1 ms fires after 1 ms).",
          "8. stdin is ignore (/dev/null), or a command reading it waits for the timeout.",
          "9. a shell that cannot start (the error event) resolves with exit code 127 and Node's message plus a newline.",
          "10. after the exit wait for close; if a process out of reach holds the pipes, destroy them after 200 ms and finish; remove the abort listener at the end.",
        ].join("\n"),
      },
      says: [
        "${error.message}\\n   (the output when the shell cannot start, with exit code 127: spawn /no/such/shell ENOENT)",
      ],
    },
  ],
  // A Lab 8.5 test runs bash.ts in a child process (through tsx) that exits mid-command.
  devDependencies: ["tsx"],
  wrong: [
    {
      lab: "8.1",
      what: "break it, step 1: Workspace.openIn opens without O_NOFOLLOW",
      file: "src/coding-tools/workspace.ts",
      find: "flags | constants.O_NOFOLLOW | constants.O_NONBLOCK",
      replace: "flags | constants.O_NONBLOCK",
      failsWith: "the open itself refuses the swapped-in symlink (O_NOFOLLOW)",
    },
    {
      lab: "8.4",
      what: "break it, step 2: held folders are opened without O_NOFOLLOW",
      file: "src/coding-tools/held-folder.ts",
      find: "const FOLDER_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;",
      replace: "const FOLDER_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY;",
      failsWith: "the temporary file's open refuses the swapped-in folder (O_NOFOLLOW)",
    },
    {
      lab: "8.5",
      what: "break it, step 3: bash's command is spawned without detached: true",
      file: "src/coding-tools/bash.ts",
      find: "      detached: true,\n",
      replace: "",
      failsWith: "the timeout did not kill its process group",
    },
    {
      lab: "8.1",
      what: "resolve checks the path lexically only: a symlink that points out is followed",
      file: "src/coding-tools/workspace.ts",
      find: "    if (!this.contains(real)) {\n      throw new WorkspaceEscapeError(\n        `The path ${JSON.stringify(input)} leads outside",
      replace:
        '    if (real === "") {\n      throw new WorkspaceEscapeError(\n        `The path ${JSON.stringify(input)} leads outside',
      failsWith: "outside",
    },
    {
      lab: "8.1",
      what: "a path under a file (ENOTDIR) taken for an error, not for a missing file",
      file: "src/coding-tools/workspace.ts",
      find: '        if (!isCode(error, "ENOENT") && !isCode(error, "ENOTDIR")) throw error;',
      replace: '        if (!isCode(error, "ENOENT")) throw error;',
      failsWith: "ENOTDIR",
    },
    {
      lab: "8.1",
      what: "a blank path (spaces only) let through: only the empty string is refused",
      file: "src/coding-tools/workspace.ts",
      find: '    if (typeof input !== "string" || input.trim() === "") {',
      replace: '    if (typeof input !== "string" || input === "") {',
      failsWith: "The path is empty",
    },
    {
      lab: "8.1",
      what: "without /proc/self/fd, the descriptor compared by inode only (not device)",
      file: "src/coding-tools/workspace.ts",
      find: "      if (onDisk !== undefined && onDisk.ino === opened.ino && onDisk.dev === opened.dev) {",
      replace: "      if (onDisk !== undefined && onDisk.ino === opened.ino) {",
      failsWith: "expected a WorkspaceEscapeError, but the call succeeded",
    },
    {
      lab: "8.2",
      what: "a lock's finished tail never deleted: the map of keys grows for ever",
      file: "src/coding-tools/workspace.ts",
      find: "      if (this.tails.get(key) === tail) this.tails.delete(key);\n",
      replace: "",
      failsWith: "expected 2 to be +0",
    },
    {
      lab: "8.2",
      what: "a failed task breaks the chain: the next task of the key gets its rejection",
      file: "src/coding-tools/workspace.ts",
      find:
        "    const tail = result.then(\n      () => undefined,\n      () => undefined,\n    );\n    this.tails.set(key, tail);\n" +
        "    void tail.then(() => {\n      if (this.tails.get(key) === tail) this.tails.delete(key);\n    });",
      // The bookkeeping handles both outcomes (so nothing escapes unhandled); the chain does not.
      replace:
        "    const tail = result;\n    this.tails.set(key, tail);\n" +
        "    const forget = () => {\n      if (this.tails.get(key) === tail) this.tails.delete(key);\n    };\n" +
        "    void tail.then(forget, forget);",
      failsWith: "a2 was rejected with a1",
    },
    {
      lab: "8.2",
      what: "writeFileAtomic always writes mode 0644, dropping the file's own mode",
      file: "src/coding-tools/write.ts",
      find: "    options.mode ??\n    (await stat(target).then(\n      (s) => s.mode & 0o7777,\n      () => 0o644,\n    ));",
      replace: "    options.mode ?? 0o644;",
      failsWith: "expected 420 to be 493",
    },
    {
      lab: "8.2",
      what: "a failed write leaves its temporary file behind",
      file: "src/coding-tools/write.ts",
      find: "    if (!renamed) await unlink(temp).catch(() => {});\n",
      replace: "    void renamed;\n",
      failsWith: ".tmp",
    },
    {
      lab: "8.2",
      what: "the temporary file's descriptor closed only when the write succeeds",
      file: "src/coding-tools/write.ts",
      find: "    try {\n      await options.verify?.(handle, temp);\n      await handle.writeFile(content);\n      await handle.sync();\n    } finally {\n      await handle.close();\n    }",
      replace:
        "    await options.verify?.(handle, temp);\n    await handle.writeFile(content);\n    await handle.sync();\n    await handle.close();",
      failsWith: "(deleted)",
    },
    {
      lab: "8.3",
      what: "the continue hint points at the last line shown, not the next one",
      file: "src/coding-tools/read.ts",
      find: "Use offset=${endLine + 1} to continue.]`);",
      replace: "Use offset=${endLine} to continue.]`);",
      failsWith: "to continue",
    },
    {
      lab: "8.3",
      what: "a single line over the byte cap shows nothing instead of its beginning",
      file: "src/coding-tools/read.ts",
      find: "      if (out.length === 0) {\n        // One line longer",
      replace: "      if (out.length < 0) {\n        // One line longer",
      failsWith: '"endLine": 0',
    },
    {
      lab: "8.3",
      what: "a caller's limit above the line cap obeyed: the cap missing",
      file: "src/coding-tools/read.ts",
      find: "  const limit = Math.min(options.limit ?? maxLines, maxLines);",
      replace: "  const limit = options.limit ?? maxLines;",
      failsWith: "a caller's limit above maxLines",
    },
    {
      lab: "8.3",
      what: "the byte budget counts UTF-16 units, not UTF-8 bytes",
      file: "src/coding-tools/read.ts",
      find: '    const size = Buffer.byteLength(line, "utf8") + 1;',
      replace: "    const size = line.length + 1;",
      failsWith: "lines counted in UTF-8 bytes",
    },
    {
      lab: "8.4",
      what: "several matches accepted: the first one is replaced",
      file: "src/coding-tools/edit.ts",
      find: "    if (again !== -1) {\n      let count = 2;",
      replace: "    if (again !== -1 && again < 0) {\n      let count = 2;",
      failsWith: "matches 2 places",
    },
    {
      lab: "8.4",
      what: "overlapping edits not refused",
      file: "src/coding-tools/edit.ts",
      find: "    if (after.start < before.end) {",
      replace: "    if (after.start < before.start) {",
      failsWith: "overlap",
    },
    {
      lab: "8.4",
      what: "an edit that changes nothing accepted",
      file: "src/coding-tools/edit.ts",
      find: '  if (result === content) throw new Error("The edits change nothing: every newText equals its oldText.");\n',
      replace: "",
      failsWith: "change nothing",
    },
    {
      lab: "8.4",
      what: "the spans applied in the order given, not sorted by position",
      file: "src/coding-tools/edit.ts",
      find: "  spans.sort((a, b) => a.start - b.start);\n",
      replace: "",
      failsWith: "overlap. Merge them into one edit.",
    },
    {
      lab: "8.5",
      what: "only stdout collected: stderr dropped",
      file: "src/coding-tools/bash.ts",
      find: '    child.stderr!.on("data", collect);\n',
      replace: "    child.stderr!.resume();\n",
      failsWith: "err",
    },
    {
      lab: "8.5",
      what: "the cap counted as reached at exactly cap bytes: output of the cap's size reported as cut",
      file: "src/coding-tools/bash.ts",
      find: "    const truncated = this.totalBytes > this.cap;",
      replace: "    const truncated = this.totalBytes >= this.cap;",
      failsWith: "expected [ '1234567890', true, 10 ]",
    },
    {
      lab: "8.5",
      what: "a pre-aborted signal still starts the command",
      file: "src/coding-tools/bash.ts",
      find: '    if (signal?.aborted) {\n      resolve({ ...base, output: "", exitCode: null, signal: null, aborted: true, durationMs: 0 });\n      return;\n    }\n',
      replace: "",
      failsWith: "aborted",
    },
    {
      lab: "8.5",
      what: "the broken first character dropped from every output, not only a cut one",
      file: "src/coding-tools/bash.ts",
      find: '    if (truncated) output = output.replace(/^\\uFFFD+/, "");',
      replace: '    output = output.replace(/^\\uFFFD+/, "");',
      failsWith: "�",
    },
    {
      lab: "8.5",
      what: "the abort listener never removed when the command ends",
      file: "src/coding-tools/bash.ts",
      find: '      signal?.removeEventListener("abort", onAbort);\n',
      replace: "",
      failsWith: "[Function onAbort]",
    },
  ],
  breakIt: {
    zh:
      '把 `Workspace.openIn` 里的 `constants.O_NOFOLLOW` 去掉，再跑 `npx vitest run test/08- -t "Lab 8\\.1\\b"`：哪个测试先失败？它模拟的是哪一种攻击' +
      "（检查通过之后、打开之前，文件被换成了指向工作区外的符号链接）？打开之后的检查还是拒绝了它，为什么测试仍然要求打开本身就拒绝？" +
      '再把 held-folder.ts 里 `FOLDER_FLAGS` 的 O_NOFOLLOW 去掉，跑 `npx vitest run test/08- -t "Lab 8\\.4\\b"`：' +
      "edit 在打开临时文件之前，它的父目录被换成了指向工作区外的符号链接——这次是哪一道检查拒绝的，拒绝的理由变成了什么？" +
      '最后把 bash 的 `detached: true` 去掉，跑 `npx vitest run test/08- -t "Lab 8\\.5\\b"`：超时之后命令为什么还在运行，孙进程又怎样了？',
    en:
      "Drop O_NOFOLLOW from Workspace.openIn and run the Lab 8.1 tests: which one fails, and which race does it play? The " +
      "check after the open still refuses; why does the test want the open itself to? Drop it from FOLDER_FLAGS in " +
      "held-folder.ts and run the Lab 8.4 tests: a parent folder becomes an outside symlink before edit opens its temporary " +
      "file; which check refuses now, and with what reason? Then drop detached: true from bash and run the Lab 8.5 tests: " +
      "why does the command outlive its timeout, and what happens to the grandchild?",
  },
});
