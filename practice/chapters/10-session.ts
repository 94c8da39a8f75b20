import { defineChapter } from "../catalogue.js";

export default defineChapter({
  id: "10",
  slug: "session",
  title: { zh: "会话树：磁盘上只追加的 JSONL", en: "The session tree: an append-only JSONL file" },
  invariant: {
    zh:
      "文件里写过的东西永远不改写、不丢失：只有以换行结尾的行才算数，崩溃留下的残行（torn tail）带着字节偏移被报告并原样保留，" +
      "下一次追加先另起一行给它做标记；中间坏掉的行、未知类型、悬空的 parentId、重复 id、环都以点名行号的错误拒绝打开；" +
      "同一进程里并发的追加按调用顺序串行写入，一行不丢、不交错。",
    en:
      "Nothing the file held is ever rewritten or lost: only newline-terminated lines count, a torn tail is reported with its " +
      "byte offset and kept (the next append marks it on a line of its own), a damaged middle line, an unknown type, a " +
      "dangling parentId, a duplicate id or a cycle is refused naming the line, and concurrent appends are written one by one.",
  },
  adds: {
    zh:
      "会话是一个只追加的 JSONL 文件：第一行是 header（格式版本、会话 id、创建时间、工作目录），之后每行一个条目，" +
      "带 `id`、`parentId`、`timestamp` 和 `type`（`message` 或 `label`；第 11 章再加 `compaction`）。" +
      "id 由追加它的文件生成（8 个十六进制字符，文件内唯一，永不改变）；调用方决定新条目接在谁后面，" +
      "所以分叉就是给一个旧条目追加子节点，什么都不用改写。`leaf` 只是文件顺序里的最后一个条目，是默认的续写点。" +
      "`SessionFile.append` 把写入排成队：每次追加是一次完整一行的 `write`，`durable: true` 时紧跟一次 `fsync`；" +
      "行写完之后条目才在内存里可见，写失败则整个会话不再接受追加（内存里显示的永远等于文件里有的）。" +
      "`SessionFile.open` 逐行读回并检查：最后一行若没有换行，就是崩溃时写了一半的残行——报告它的字节偏移，不解析、不丢弃；" +
      "下一次追加先写一个换行和一条 `torn` 标记，让这些字节留在自己的一行上，以后每个读者都报告并跳过它。" +
      "pi 1.6 读到坏行会跳过；本课程反其道而行：除了残行，任何坏行都拒绝打开，并说清是哪一行、该怎么办。" +
      "测试里有一个崩溃实验（Lab 10.2）：子进程不停追加，在随机时刻被 SIGKILL 杀掉，每次之后都要找回每个写完的条目。" +
      "仓库自己的测试杀满 200 次（2 核上约 2 分钟）；练习文件夹里最多 200 次，约 8 秒后停下（至少 24 次），" +
      "所以后面每一章的 `npm test` 都不会被它拖上几分钟。",
    en:
      "A session is an append-only JSONL file: a header, then one entry per line with id, parentId, timestamp and a type. " +
      "The file makes the ids; the caller picks the parent, so branching is appending to an older entry. Appends are " +
      "queued, one whole-line write each (fsync with durable: true). open reads back complete lines only: a torn tail is " +
      "reported and kept, marked by the next append; any other damage is refused naming the line (pi 1.6 skips bad lines). " +
      "A crash test (Lab 10.2) SIGKILLs an appending child at random moments and recovers every written entry each time: " +
      "200 kills in the repository (about 2 minutes on 2 cores); in a practice folder up to 200, stopping after about " +
      "8 s (at least 24), so every later chapter's npm test stays fast.",
  },
  files: [
    "src/session/types.ts",
    "src/session/session.ts",
    "src/session/session-entry.ts",
    "src/session/session-reader.ts",
    "src/session/session-lock.ts",
    "test/support/session-crash-child.ts",
  ],
  labs: [
    {
      id: "10.1",
      says: [
        '${path}: parentId "${parentId}" is not a written entry of this session (await the append that made it)',
        '${path}: label target "${targetId}" is not a written entry of this session',
        '${path}: unknown entry type "${type}" (known: message, label)',
        "${path}: the session is closed; open it again to append",
        "${path}: the session was opened read-only; open it without readOnly to append",
        "${path}: the entry is nested deeper than ${MAX_NESTING} levels",
        "${path}: the entry is not JSON-serialisable (${errorText(error)})   (a BigInt inside: the entry is not JSON-serialisable (Do not know how to serialize a BigInt))",
        "误用是一个被拒绝的 promise（append 返回 Promise.reject），不是同步 throw。Misuse is a rejected promise, never a synchronous throw.",
      ],
      title: { zh: "追加与 id（SessionFile.append、write、newId）", en: "append and ids" },
      hint: {
        zh: [
          "`append`、`write`、`newId`：",
          "1. `append` 先拒绝误用（会话已关闭、只读或已坏、parentId 不是已写入的条目、label 指向未知条目、未知类型），再生成 id，拼出 `{type, id, parentId, timestamp, …}`。",
          "2. 嵌套超过 `MAX_NESTING` 层（`nestedDeeperThan`）或 `JSON.stringify` 失败的条目也拒绝（读者会拒绝这样的行，所以绝不写出）。",
          "3. 把这一整行挂到写队列 `this.queue` 的尾巴上——队列本身要吞掉失败（`.catch`），否则一次失败会让后面所有追加带着别人的错误失败。",
          "4. `write`：若 `this.torn.tail` 不为空，先写 `\\n` 加一条 torn 标记；再一次写完整行，`durable` 时 `sync()`。",
          "5. 出错就记下 `broken`，这次和排在它后面的追加都以 `a write failed (…)` 拒绝，一个都不再写（即使磁盘又好了）。",
          "6. 写成功后把这一行 `JSON.parse` 回来放进内存——内存里的就是文件里的。",
          "7. `newId`：`randomUUID()` 的前 8 位，和已写入、正在排队的 id 都不能重复；试 100 次都撞上，就返回一个完整的 `randomUUID()`。",
        ].join("\n"),
        en: [
          "append, write, newId:",
          "1. append: refuse misuse (closed, read-only, broken, unknown parent, label target or type), make the id, build one whole line.",
          "2. refuse an entry nested deeper than MAX_NESTING or not JSON-serialisable.",
          "3. chain the write on this.queue (swallow failures in the chain itself).",
          "4. write: a torn mark first if this.torn.tail is set, then one write of the line, sync when durable.",
          "5. on failure remember it (broken): this append and every one queued behind it reject with a write failed (…), and none of them is written.",
          "6. index the parsed line: memory holds what the file holds.",
          "7. newId: 8 hex chars unused so far (written or queued); after 100 colliding tries a full randomUUID().",
        ].join("\n"),
      },
    },
    {
      id: "10.2",
      says: [
        "${path}:${line}: not valid JSON (byte offset ${offset}: ${error.message}). Only the last line can be cut by a crash, so this line was damaged: restore the file from a copy (nothing was changed)",
        'unknown entry type "${type}" (this reader knows message, label); if a newer @pi/course wrote it, open the file with that version',
        'the ${type} entry needs a non-empty string "id"',
        'message entry ${id}: a ${role} message needs a "content" array and a numeric "timestamp"',
        'label entry ${id} names "${targetId}", which is not an earlier entry',
        'entry ${id} has parentId "${parent}", which names no entry in the file (dangling): lines are missing; restore the file from a copy',
        'entry ${id} is its own ancestor: a cycle through lines ${lines.join(" → ")}',
        'entry ${id} comes before its parent "${parent}" (line ${line}): an append-only file has every parent first, so the lines were reordered; restore the file from a copy',
        "the file is empty, so it is not a session file (SessionFile.create writes a header line first)",
        "the header line is incomplete (the file was cut while it was being created); it holds no entries: delete it and create the session again",
        "${path}:1: not a session header: ${why}",
        "this torn mark names ${mark.length} bytes at offset ${mark.offset}, but line ${held.line} is ${held.length} bytes at offset ${held.offset}: the file was edited by hand; restore it from a copy",
        "this torn mark names ${mark.length} bytes at offset ${mark.offset}, but the line before it is not an entry line: the file was edited by hand; restore it from a copy",
        "（每条都以 `${path}:${line}: ` 开头：SessionFileError 会加上。Each starts with ${path}:${line}: , added by SessionFileError.）",
      ],
      title: { zh: "读回与恢复（LineScan.push、line、end）", en: "reading and recovery" },
      hint: {
        zh: [
          "1. `push` 收到的是任意大小的字节块：按 `\\n`（0x0a）切行，一行可能跨越几个块（`partial` 里存副本，读者会复用缓冲区），工作量必须和字节数成线性：没结束的行只把新来的那一块存起来，换行到了再拼一次；每来一块就把已收到的半行重新拼成一个缓冲区是平方级的（测试把一行 16 MiB 按 512 字节一块推进来，10 秒内必须推完；平方级的做法要拷贝 256 GiB）。",
          "2. 要记住每行在文件里的字节偏移。",
          '3. `line`：第 1 行是 header；以 `{"type":"torn"` 开头的行是标记，它必须正好指向上一行（偏移和长度都对），那一行就算保留的残行；其他行先"扣住"（`held`），等看到下一行再交给 `entry()`，因为下一行可能就是它的 torn 标记。',
          "4. `end`：最后一个换行之后的字节是残行 `tail`，别忘了处理还扣着的那一行，以及 `forward`（父节点不在前面的条目）的报错。",
          "5. 恢复本身也可能被截断：不是 JSON 的完整行开启一段“残行”，直到一条 torn 标记点名整段为止；文件末尾的这种残行段（后面只跟着 torn 标记的片段）整段算作 `tail`，下次追加整段标记；后面跟着别的字节就是坏行，报错。",
          "6. 同一残行被标记两次（空行加重复标记），或被截断的标记后又写了一条覆盖它的标记，都要接受：库自己写出的文件的每个前缀都必须能打开。",
          "7. 这个实验里最慢的测试是崩溃测试：它先把一个追加子进程编译成 JS，然后反复启动它、在随机时刻 SIGKILL、用你的 `open` 读回文件；练习文件夹里约 8 秒（最多 200 次、至少 24 次）。",
        ].join("\n"),
        en: [
          "1. push: split bytes at 0x0a, lines may span chunks, track byte offsets.",
          "2. Work linear in the bytes: keep each new piece of an unfinished line and join once at its newline; joining the line so far at every piece is quadratic (the test pushes a 16 MiB line in 512-byte pieces within 10 s).",
          "3. line: line 1 is the header; a torn mark must name the held line exactly; other lines are held until the next one is seen.",
          "4. end: bytes after the last newline are the tail; flush the held line; report a forward parent.",
          "5. Recovery can be cut too: a complete line that is not JSON starts a torn run that only a mark naming the whole run ends; such a run at the end of the file, followed by nothing but part of a torn mark, becomes the tail (anything else after it is damage)",
          "6. a mark repeated after an empty line, or a wider mark after a cut one, is accepted: every prefix of a file the library wrote must open.",
          "7. The slowest test is the crash test: it compiles an appending child, starts it again and again, SIGKILLs it at a random moment and reads the file back with your open (in a practice folder about 8 s: up to 200 kills, at least 24).",
        ].join("\n"),
      },
      // The crash test's child appends with lab 10.1's code.
      uses: ["10.1"],
    },
    {
      id: "10.3",
      says: [
        '${path}: no entry "${id}" in this session',
        "pathToLeaf 和 children 遇到未知 id 都同步抛出这个错误（children(null) 返回所有根）。pathToLeaf and children both throw it for an unknown id (children(null) gives the roots).",
      ],
      title: { zh: "树（pathToLeaf、children、messagesOf）", en: "the tree: pathToLeaf, children, messagesOf" },
      hint: {
        zh:
          "`pathToLeaf(id)`：沿着 `parentId` 一路走到根，再反转；未知 id 直接抛错（这是调用方的误用）。" +
          "`children(id)`：`childrenOf` 里已经按文件顺序存好了，返回一个副本；`null` 表示所有根。" +
          "`messagesOf(path)`：只取 `message` 条目里的消息，原样返回，自定义消息和工具调用细节一个字段都不能少。",
        en:
          "pathToLeaf: follow parentId to the root, then reverse; unknown ids throw. children: a copy of childrenOf's list " +
          "(null: the roots). messagesOf: the messages of message entries, as written.",
      },
      uses: ["10.1"],
    },
  ],
  wrong: [
    {
      lab: "10.1",
      what: "the caller's id and timestamp win over the ones the file makes",
      file: "src/session/session.ts",
      find: "    record.id = id;\n    record.timestamp = timestamp;\n",
      replace: "",
      failsWith: "id",
    },
    {
      lab: "10.1",
      what: "durable ignored for the entry line: no fsync after it",
      file: "src/session/session.ts",
      find: "      await writeAll(handle, Buffer.from(line));\n      if (this.durable) await handle.sync();\n",
      replace: "      await writeAll(handle, Buffer.from(line));\n",
      failsWith: "sync",
    },
    {
      lab: "10.1",
      what: "a new id checked against written entries only, not those still queued",
      file: "src/session/session.ts",
      find: "      if (!this.byId.has(id) && !this.pending.has(id)) return id;",
      replace: "      if (!this.byId.has(id)) return id;",
      failsWith: "id",
    },
    {
      lab: "10.1",
      what: "a failed write does not close the session for writing",
      file: "src/session/session.ts",
      find: "      this.broken = error as Error;\n      throw this.brokenError();",
      replace: "      throw error;",
      failsWith: "a write failed",
    },
    {
      lab: "10.2",
      what: "quadratic: the unfinished line joined into one buffer at every piece, so a long line is copied again with each",
      file: "src/session/session-reader.ts",
      find: "    if (start < chunk.length) this.partial.push(Buffer.from(chunk.subarray(start)));",
      replace:
        "    if (start < chunk.length) this.partial = [Buffer.concat([...this.partial, chunk.subarray(start)])];",
      failsWith: "a reader whose work per piece grows with the unfinished line falls behind",
    },
    {
      lab: "10.2",
      what: "the unfinished line kept as a view of the reader's buffer, which the reader reuses",
      file: "src/session/session-reader.ts",
      find: "    if (start < chunk.length) this.partial.push(Buffer.from(chunk.subarray(start)));",
      replace: "    if (start < chunk.length) this.partial.push(chunk.subarray(start));",
      failsWith: "Property failed",
    },
    {
      lab: "10.2",
      what: "the last entry held back and never delivered at the end of the file",
      file: "src/session/session-reader.ts",
      find: "    if (this.held !== null) this.entry(this.held);\n    this.held = null;\n    if (this.forward >= 0)",
      replace: "    this.held = null;\n    if (this.forward >= 0)",
      failsWith: "expected [ Array(3) ] to deeply equal [ Array(4) ]",
    },
    {
      lab: "10.2",
      what: "a line's offset counted from its newline, not from its first byte",
      file: "src/session/session-reader.ts",
      find: "      this.lineStart = this.position + start;",
      replace: "      this.lineStart = this.position + end;",
      failsWith: "offset",
    },
    {
      lab: "10.3",
      what: "pathToLeaf returns the path leaf first",
      file: "src/session/session.ts",
      find: "    return path.reverse();",
      replace: "    return path;",
      failsWith: "to deeply equal",
    },
    {
      lab: "10.3",
      what: "messagesOf keeps the canonical roles only, dropping custom messages",
      file: "src/session/session.ts",
      find: '  for (const entry of path) if (entry.type === "message") messages.push(entry.message);',
      replace:
        '  for (const entry of path)\n    if (entry.type === "message" && ["user", "assistant", "toolResult"].includes(entry.message.role))\n      messages.push(entry.message);',
      failsWith: "to deeply equal",
    },
    {
      lab: "10.3",
      what: "pathToLeaf of an unknown id stops quietly instead of refusing it",
      file: "src/session/session.ts",
      find: '      if (entry === undefined)\n        throw new Error(`${this.path}: no entry "${at}" in this session (use an id from entries() or append())`);',
      replace: "      if (entry === undefined) break;",
      failsWith: "expected [Function] to throw an error",
    },
    {
      lab: "10.3",
      what: "children hands out the session's own list",
      file: "src/session/session.ts",
      find: "    return (this.childrenOf.get(id) ?? []).slice();",
      replace: "    return this.childrenOf.get(id) ?? [];",
      failsWith: "to deeply equal",
    },
    {
      lab: "10.1",
      what: "break it, step 1: append writes at once instead of after this.queue",
      file: "src/session/session.ts",
      find: "    const written = this.queue.then(() => this.write(line));",
      replace: "    const written = this.write(line);",
      failsWith: "appends are written in call order",
    },
    {
      lab: "10.2",
      what: "break it, step 2: LineScan.end ignores the torn tail",
      file: "src/session/session-reader.ts",
      find: "recovery: { tail, kept: this.kept }",
      replace: "recovery: { tail: null as TornLine | null, kept: this.kept }",
      failsWith: "are the torn tail",
    },
  ],
  breakIt: {
    zh:
      "把 `SessionFile.append` 里的队列拿掉：`const written = this.write(line);`（不再接在 `this.queue` 后面），" +
      '跑 `npx vitest run test/10- -t "Lab 10\\.1\\b"`：哪个测试失败？内核并没有把两行的字节搅在一起，为什么文件里的顺序还是乱了？' +
      "然后让你写的 `LineScan.end` 忽略残行：返回的结果里用 `tail: null as TornLine | null` 代替算出来的残行" +
      "（直接写 `null` 的话，TypeScript 会把后面的分支收窄成 `never`，类型检查就不过了），" +
      '跑 `npx vitest run test/10- -t "Lab 10\\.2\\b"`：' +
      "性质测试把反例缩小到了哪个截断点？",
    en:
      "Drop the write queue in append (call this.write directly) and run the Lab 10.1 tests: which fails, and why is the " +
      "order wrong though no line is mixed? Then make your LineScan.end ignore the tail (return tail: null cast to its type, since a bare null narrows the code after it to never): what cut does the property shrink to?",
  },
});
