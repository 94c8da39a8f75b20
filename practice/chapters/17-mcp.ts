import { defineChapter } from "../catalogue.js";

export default defineChapter({
  id: "17",
  slug: "mcp",
  title: { zh: "MCP：亲手写一个 Model Context Protocol 客户端", en: "MCP: a Model Context Protocol client, by hand" },
  invariant: {
    zh:
      "每个发出的请求恰好结束一次——回答、对方的错误、超时、中止或连接结束——绝不永远挂起；" +
      "服务器的任何故障（启动失败、调用中崩溃、stdout 上的垃圾、超长的行、HTTP 错误）都以一条说明原因的错误结束挂起的调用，" +
      "而一个失败的服务器不会拖垮智能体或其他服务器。",
    en:
      "Every request ends exactly once (its answer, the peer's error, a timeout, an abort, or the end of the connection), never " +
      "hangs; every server fault (cannot start, crash mid-call, garbage on stdout, an over-long line, an HTTP error) ends the " +
      "pending calls with an error that says why, and one failed server stops neither the agent nor the other servers.",
  },
  adds: {
    zh:
      "MCP（Model Context Protocol）是今天工具接入智能体的通用方式：用户已经为别的智能体写好了 `mcpServers` 配置，希望这个智能体也能用上同样的服务器。" +
      "本章不用官方 SDK，而是亲手写客户端（`src/mcp/`）：JSON-RPC 2.0 的消息与按 id 配对（`json-rpc.ts`、`connection.ts`），" +
      "stdio 的逐行分帧（`line-decoder.ts`、`stdio-transport.ts`）与 Streamable HTTP（`streamable-http.ts`），" +
      "生命周期 `initialize` → `notifications/initialized`（`client.ts`），把 MCP 工具变成名为 `mcp__<服务器>__<工具>` 的 `AgentTool`（`mcp-tools.ts`），" +
      "以及 `mcp.json` 配置（`config.ts`）和并行启动、互不拖累的服务器组（`servers.ts`）。命令行用 `--mcp-config FILE` 加载服务器，" +
      "`/mcp` 显示每个服务器的状态。测试直接对着没人在这里写过的真实参考服务器跑：`@modelcontextprotocol/server-everything` 与 `server-filesystem`，" +
      "故障则来自一个用官方 SDK 的 `McpServer` 故意写坏的服务器。" +
      '给定的部分里还有两件用户会遇到的事：服务器在后台启动（对话不等它们；`--print` 只等条目写明 `"exposure": "direct"` 的服务器，最多 10 秒；还在启动的服务器，工具就绪后从模型的下一次请求起加入，`tool_search` 或对它的工具的调用会等它；每个服务器有自己的 `startupTimeoutMs`），' +
      "以及 Streamable HTTP 的断流续传——服务器在回答前关掉响应流时，客户端在它给的 `retry` 之后带着 `Last-Event-ID` 用 GET 接着读；GET 流断了会重新打开。" +
      "服务器还可以在工具调用进行中向人提问（`elicitation/create`）：CLI 在终端里逐项询问表单、按请求的 schema 校验每个回答（`mcp/elicitation-form.ts`），" +
      "需要打开的网页只显示完整地址、绝不替人打开；打印模式则拒绝并说明。" +
      "远程服务器多半要求授权（`src/mcp/auth/`，也是给定的）：401 的 `WWW-Authenticate` 指向受保护资源元数据（RFC 9728），再由它找到授权服务器的元数据（RFC 8414 / OpenID）；" +
      "客户端身份依次是配置里预先注册的 id、Client ID Metadata Document、动态注册（RFC 7591）；令牌来自带 PKCE S256 与回环重定向的授权码流程（`pi-course mcp login NAME`），" +
      "每个请求都带 `resource`（RFC 8707），令牌以 0600 存在 `~/.pi-course/mcp-auth/`，过期前刷新，遇到 `403 insufficient_scope` 再要更宽的 scope。" +
      "值得记住的是：令牌只进它自己的文件和请求头，从不进会话、日志或错误信息。",
    en:
      "MCP is how tools reach agents today. You write the client without the SDK: JSON-RPC messages and id correlation, stdio " +
      "line framing and Streamable HTTP, the initialize lifecycle, MCP tools as AgentTools named mcp__<server>__<tool>, the " +
      "mcp.json configuration and a group of servers started in parallel. The tests run against the real reference servers " +
      "and a server written with the SDK's McpServer that misbehaves on purpose. Given: servers start in the background " +
      '(startupTimeoutMs; --print waits only for servers of "exposure": "direct", and tool_search or a call waits for one still starting), ' +
      "and a closed stream is resumed with Last-Event-ID after the server's retry. A server may ask the " +
      "person for input mid-call (elicitation/create): the CLI asks a form field by field, checked against its schema. Also given: OAuth for " +
      "remote servers (src/mcp/auth/: discovery, PKCE, a loopback login with `pi-course mcp login NAME`, tokens kept 0600, never in a log or an error).",
  },
  files: [
    "src/cli/features/mcp.ts",
    "src/cli/waiting-tool-search.ts",
    "src/cli/elicitation.ts",
    "src/cli/mcp-command.ts",
    "src/mcp/json-rpc.ts",
    "src/mcp/line-decoder.ts",
    "src/mcp/transport.ts",
    "src/mcp/connection.ts",
    "src/mcp/stdio-transport.ts",
    "src/mcp/streamable-http.ts",
    "src/mcp/client.ts",
    "src/mcp/elicitation-form.ts",
    "src/mcp/mcp-tools.ts",
    "src/mcp/schema-patterns.ts",
    "src/mcp/config.ts",
    "src/mcp/servers.ts",
    "src/mcp/auth/auth-error.ts",
    "src/mcp/auth/www-authenticate.ts",
    "src/mcp/auth/secure-url.ts",
    "src/mcp/auth/auth-fetch.ts",
    "src/mcp/auth/client-assertion.ts",
    "src/mcp/auth/discovery.ts",
    "src/mcp/auth/pkce.ts",
    "src/mcp/auth/client-identity.ts",
    "src/mcp/auth/token-request.ts",
    "src/mcp/auth/token-store.ts",
    "src/mcp/auth/loopback.ts",
    "src/mcp/auth/http-auth.ts",
    "src/mcp/auth/oauth.ts",
    "src/mcp/auth/oauth-settings.ts",
    "src/mcp/auth/server-auth.ts",
    "src/cli/mcp-login.ts",
    "src/cli/open-browser.ts",
    "test/17-mcp.http.test.ts",
    "test/fixtures/mcp/fault-server.mjs",
    "test/fixtures/mcp/spawning-server.mjs",
  ],
  labs: [
    {
      id: "17.1",
      title: {
        zh: "分帧：一行一条 JSON-RPC 消息（readMessage、LineDecoder.push）",
        en: "framing: one JSON-RPC message per line",
      },
      hint: {
        zh: [
          '1. `readMessage`：先排除非对象与数组（数组返回 `"a batch (array); MCP sends one message per line"`），再要求 `jsonrpc` 为 `"2.0"`（否则 `\'no "jsonrpc": "2.0"\'`）。',
          '2. `id` 只能是数字或字符串（`0` 也是合法 id！），否则返回 `an id that is neither a number nor a string (…)`（括号里是 `JSON.stringify(id)`：`(null)`、`(true)`、`({"a":1})`），唯一的例外是错误响应里的 `id: null`。',
          '3. 有字符串 `method` 的是请求或通知；否则是响应，必须恰好有 `result` 与 `error` 之一（`\'a response needs exactly one of "result" and "error"\'`），`error` 要有数字 `code` 和字符串 `message`（`\'an "error" without a numeric code and a message\'`）',
          '4. `result` 必须是对象（`\'a "result" that is not an object\'`）；请求或通知的 `params` 若出现必须是对象（`"params that are not an object"`）',
          '5. 既没有 `method` 也没有 `id` 的返回 `\'neither a "method" nor an "id"\'`；不是对象的值返回 `"not a JSON object"`。',
          '6. 键的顺序无关紧要：服务器写的是 `{"result":…,"jsonrpc":"2.0","id":0}`。',
          "7. `LineDecoder.push`：在每个块里找 `\\n`；一行没结束就把块存起来，结束时才用 `Buffer.concat` 拼一次（这样无论怎么切块都是线性的，多字节 UTF-8 字符被切开也没关系，因为按字节拼完才解码）",
          "8. 去掉行尾的 `\\r`",
          "9. 正在读的行一旦超过 `maxLineBytes` 就抛 `LineTooLongError`，消息是 `the server sent a line longer than 8 bytes without a newline; the stream cannot be read any further (raise maxLineBytes if the server really sends messages that big)`（数字按上限写成 `8 bytes`、`1 MiB`）。",
        ].join("\n"),
        en: [
          "1. readMessage: refuse non-objects and batches",
          "2. require jsonrpc 2.0",
          "3. ids are numbers or strings (0 is an id; null only in an error)",
          "4. a method means request/notification (params, if any, an object)",
          "5. a response has exactly one of result and error (an error with a numeric code and a string message, a result that is an object).",
          "6. LineDecoder.push: keep the pieces of an unfinished line and join them once when its newline arrives",
          "7. drop a trailing CR",
          "8. throw LineTooLongError past the cap.",
        ].join("\n"),
      },
    },
    {
      id: "17.2",
      says: [
        "${setting} must be a finite number of ${unit} ≥ 0, got ${got}   (userDuration's RangeError, e.g. the timeout of x (timeoutMs) must be a finite number of milliseconds ≥ 0, got -1; the total time of y (maxTotalMs) must be a finite number of milliseconds ≥ 0, got NaN)",
      ],
      title: {
        zh: "配对：每个请求恰好结束一次（JsonRpcConnection.request、receive）",
        en: "correlation: every request ends exactly once",
      },
      hint: {
        zh: [
          "`request` 与 `receive`：",
          "1. `request`：id 从 0 开始递增；把 `{resolve, reject, 计时器, 中止监听}` 记在 `pending` 里。超时用请求自己的 `timeoutMs`，没给才用连接的默认值（构造时给的，缺省 `DEFAULT_REQUEST_TIMEOUT_MS` 即 60 秒）。",
          "2. 给了 `onProgress` 就在 `params._meta.progressToken` 放上这个 id，每次进度都重新开始计时。",
          '3. 超时用 `McpError("timeout", "tools/call timed out: no answer within 150 ms")`，中止用 `McpError("aborted", "tools/call was aborted: <原因>")`（原因：`signal.reason` 是字符串就用它，否则 `the caller aborted the request`；`notifications/cancelled` 的 `reason` 也是它）；' +
            "这两种情况都要先从 `pending` 删掉，再发 `notifications/cancelled {requestId, reason}`（超时的 reason 是 `Request timed out after 150 ms`）——之后到达的进度和迟到的回答都会因为找不到而被忽略。",
          '4. 连接已关闭时拒绝：`cannot send c: the connection is closed (<原因>)`；signal 在发出前就已中止时什么也不发，拒绝为 `McpError("aborted", "b was aborted before it was sent")`。',
          "5. `timeoutMs` 与 `maxTotalMs`（只在给了 `onProgress` 时才算）先交给 `userDuration`，设置名分别是 `the timeout of ${method} (timeoutMs)` 与 `the total time of ${method} (maxTotalMs)`；它抛出的 RangeError 就是请求的拒绝（不发送）。",
          "6. 给了 `onProgress` 时另有一个总计时器（`maxTotalMs`，默认 `timeoutMs` 的十倍），进度不会重启它：超时为 `tools/call timed out: no answer within 250 ms in all, though progress kept coming`，`notifications/cancelled` 的 reason 为 `Request timed out after 250 ms in all`；" +
            "`userDuration` 返回 `undefined`（超出计时器的上限）表示没有限制，`startTimer` 也就不返回计时器。",
          "7. 请求无论怎样结束，都要清掉它的计时器和 `abort` 监听。",
          '8. `transport.send` 本身被拒绝（比如 HTTP 传输的 POST 失败）时，请求要立刻结束：从 `pending` 删掉，拒绝为 `McpError("transport", "cannot send broken: HTTP 500 Internal Server Error")`（`cannot send ${method}: ${error.message}`；连接已经关闭的话，`closed` 早已结束了它：不在 `pending` 里就什么也不做），不要等到超时。',
          "9. `receive`：有 `method` 和 `id` 的是对方的请求（交给 `answer`），只有 `method` 的是通知（未知的静静忽略；处理函数抛错时记一条诊断 `the handler of notifications/message failed: boom`，即 `the handler of ${method} failed: ${errorText(error)}`），其余是响应：按 id 找到挂起的请求，" +
            '`error` 变成 `McpError("remote", "c failed: MCP error -32601: Method not found", code, data)`；找不到的（重复、迟到）直接忽略。',
        ].join("\n"),
        en: [
          "request and receive:",
          "1. request: ids from 0; the request's own timeoutMs, else the connection's default (DEFAULT_REQUEST_TIMEOUT_MS, 60 s).",
          "2. progressToken = the id when onProgress is given, and progress restarts the timer.",
          "3. timeout and abort remove the entry first, then send notifications/cancelled.",
          '4. an already aborted signal: nothing sent, "${method} was aborted before it was sent".',
          "5. timeoutMs and (with onProgress) maxTotalMs go through userDuration first.",
          "6. with onProgress a total timer (maxTotalMs) that progress does not restart.",
          "7. an ended request leaves no timer and no abort listener.",
          '8. a rejected transport.send ends the request at once: McpError("transport", "cannot send ${method}: ${error.message}") (a request no longer pending, ended by closed(), is left alone), never a wait for the timeout.',
          "9. receive: requests to answer, notifications to handlers (unknown ones ignored, a throwing handler reported as a diagnostic), responses matched by id (unknown ids ignored), an error becomes a remote McpError.",
        ].join("\n"),
      },
    },
    {
      id: "17.3",
      says: [
        "${method} failed: the server sent a line longer than ${n} MiB without a newline; the stream cannot be read any further (raise maxLineBytes if the server really sends messages that big)",
        "stderrTail keeps the server's last stderr lines as they came: the tests look for server-everything's own first line, Starting default (STDIO) server..., and for the test server's ignoring SIGTERM",
        "the server process exited with code ${code}   (no stderr line: nothing after it) / the server process was killed by ${signal}   (the close event's signal, e.g. SIGKILL)",
        'cannot start "${command}": no such program (is it installed and on PATH, or is the cwd ${cwd} missing?)   (ENOENT with a cwd given) / cannot start "${command}": ${error.message}   (any other spawn error, e.g. cannot start "/path": spawn /path EACCES)',
        "the tests' fault-server.mjs writes fault-server ready on stderr when it starts; its crash tool exits with code 3 (tools/call failed: the server process exited with code 3 (last stderr line: fault-server ready)); its garbage tool prints a stray line that is not JSON before it answers answered after the stray line",
        'initialize\'s capabilities: roots: {listChanged: true} with roots, sampling: {} with onSampling, elicitation: {form: {}} with onElicitation (one key per elicitationModes entry); clientInfo by default: {name: "pi-course", version: "0.1.0"}',
      ],
      title: {
        zh: "生命周期与 stdio 传输（McpClient.connect、StdioTransport.start / close）",
        en: "lifecycle and the stdio transport",
      },
      hint: {
        zh: [
          '1. `connect`：启动连接，发 `initialize {protocolVersion: "2025-11-25", capabilities, clientInfo}`（给了 roots 就声明 `roots: {listChanged: true}`）',
          '2. 服务器回的版本必须在 `SUPPORTED_PROTOCOL_VERSIONS` 里，否则关掉连接并抛出 `the server answered initialize with protocol version "2099-01-01", which this client does not support (supported: 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05, 2024-10-07); upgrade the server or the client`——服务器不会替你拒绝，它只会回它最新的版本。',
          "3. 然后记下版本、发 `notifications/initialized`（只有 `method`，没有 `params`）。",
          "4. `StdioTransport.start`：用已给出的 `spawnServer` 启动子进程（环境只继承 `INHERITED_ENV` 再加配置的 env；服务器自己启动的进程会随它结束），stdout 交给 `LineDecoder`，空行跳过，每行 `JSON.parse` + `readMessage`",
          "5. 不是 JSON（或不是 JSON-RPC 消息）的行已经替你处理好了（`line`，不是实验）：跳过它并记一条诊断，和官方 SDK、pi 一样——一行横幅不该毁掉整个服务器",
          "6. stderr 一定要读（管道满了服务器会卡住），留下最后几行",
          "7. 进程退出时以 `the server process exited with code 3 (last stderr line: …)` 结束",
          '8. 程序不存在（ENOENT）时是 `cannot start "x": no such program (is it installed and on PATH?)`。',
          "9. `close`：先关 stdin，等 `graceMs`，再 SIGTERM，再等，最后 SIGKILL——有的服务器永远不会自己退出。",
        ].join("\n"),
        en: [
          "1. connect: initialize offering 2025-11-25",
          "2. refuse an unsupported answer (the server will not)",
          "3. then notifications/initialized.",
          "4. start: spawnServer (given; what the server starts ends with it)",
          "5. lines from stdout through LineDecoder and readMessage",
          "6. a non-JSON line is skipped with a diagnostic (given)",
          "7. stderr drained and kept",
          "8. the exit ends it with the code.",
          "9. close: stdin end, wait, SIGTERM, wait, SIGKILL.",
        ].join("\n"),
      },
    },
    {
      id: "17.4",
      says: [
        "${info.name} (it requires task augmentation, which this client does not support)   (an entry of hidden; server-everything's simulate-research-query (it requires task augmentation, which this client does not support))",
        "server-everything's trigger-long-running-operation with duration 0.3 and steps 3 sends three progress notifications, then answers Long running operation completed. Duration: 0.3 seconds, Steps: 3.   (the text passes through as it is; also over HTTP in Lab 17.6)",
        "Resource ${uri} (${mimeType}):\\n${text}   (server-everything's dynamic text resource: Resource demo://resource/dynamic/text/1 (text/plain):\\nResource 1: This is a plaintext resource…)",
      ],
      title: { zh: "MCP 工具变成智能体工具（mcpToolName、mapCallResult）", en: "MCP tools as agent tools" },
      hint: {
        zh: [
          "1. `mcpToolName`：`mcp__<服务器>__<工具>`，`[A-Za-z0-9_-]` 以外的字符换成 `_`",
          "2. 超过 64 个字符或名字已被占用时，截到 57 个字符再加 `_` 和 6 位十六进制哈希（服务器名与工具名的 sha256），这样名字在两次运行之间不变。",
          "3. `mapCallResult`：`text` → 文本",
          "4. `image` → `ImageContent`",
          "5. `resource` → `Resource <uri> (<mime>):\\n<text>`（二进制的是 `Resource <uri> (<mime>), N bytes of binary data`）",
          "6. `resource_link` → `Resource link: <name>: <uri> (<mime>) — <description>`",
          "7. `structuredContent` 放进 `details`（和 `server`、`tool` 一起）",
          "8. `isError: true` 变成 `isError: true` 的结果，让模型读到原因。",
          "9. `content` 为空时也给模型一段文本：出错时是 `The tool failed and said nothing.`，否则是 `(no content)`",
          "10. 没有 `structuredContent` 时 `details` 里也没有这个键。",
          "11. 注意：未知工具和参数错误在 MCP 里是 `isError` 的结果，不是 JSON-RPC 错误。",
        ].join("\n"),
        en: [
          "1. mcpToolName: mcp__server__tool",
          "2. other characters to _",
          "3. at most 64 (cut and a 6-hex hash on length or collision).",
          "4. mapCallResult: text, image, resource and resource_link as text naming the URI",
          "5. structuredContent in details",
          "6. isError kept",
          "7. empty content becomes one text, The tool failed and said nothing. (isError) or (no content).",
        ].join("\n"),
      },
      // Its agent tests connect to the real server first (17.3).
      uses: ["17.3"],
    },
    {
      id: "17.5",
      says: [
        "the project's MCP servers (${file}) are not started: ${untrustedReason}   (the CLI, given in cli/main.ts, prints it as note: the project's MCP servers (${file}) are not started: the folder is not trusted (--approve trusts it for one run; the interactive mode asks))",
      ],
      title: {
        zh: "配置：用户已经在写的 mcpServers（expandVariables、parseMcpConfig）",
        en: "configuration: mcpServers as users write it",
      },
      hint: {
        zh: [
          "1. `expandVariables`：把 `${VAR}` 和 `${VAR:-默认值}` 换成环境变量的值（空字符串也算设置了）；没有设置也没有默认值时抛出 `${NOPE} is not set in the environment`。这样 key 留在环境里，不进文件。",
          "2. `parseMcpConfig`：用 `parseJson(text, McpFileSchema, mcpPlace(file))`（`src/base/read-json.ts`）读，文件不是 JSON 时抛 `McpConfigError`（`<file> is not JSON (…); fix it or remove it`）",
          '3. 不是 `{"mcpServers": {…}}` 时抛 `<file> must be a JSON object with an "mcpServers" object: {"mcpServers": {"NAME": {"command": …} | {"url": …}}}`。',
          '4. 每个服务器交给给定的 `serverEntry`，它返回 `{ transport, startupTimeoutMs? }`（`"disabled": true` 时是 undefined，不放进结果），把它展开进 `{ name, source, … }`。',
          "5. 它做的事：有 `command` 是 stdio（`args`、`env`，相对的 `cwd` 按文件所在目录解析），有 `url` 是 Streamable HTTP（`headers`）",
          '6. `"disabled": true` 跳过',
          "7. `env` 与 `headers` 的值要展开变量。",
          '8. 单个服务器写错了不抛异常，而是带着 `problem` 返回，例如 `server "broken" in <file>: needs "command" (a program to start) or "url" (a Streamable HTTP endpoint)`、`server "secret" in <file>: "headers.Authorization": ${MISSING} is not set in the environment`、`server "old" in <file>: the old HTTP+SSE transport ("type": "sse") is not supported; use the server\'s Streamable HTTP endpoint`——它单独失败，其他服务器照常启动。',
          "9. 项目里的 `.pi-course/mcp.json` 只在受信任的文件夹里读取（第 12 章的规则）：打开一个克隆下来的仓库不应该就此启动程序。",
        ].join("\n"),
        en: [
          "1. expandVariables: ${VAR} and ${VAR:-default} from the environment, a missing one named.",
          "2. parseMcpConfig: parseJson with McpFileSchema, so a file of the wrong shape throws McpConfigError in read-json's wording",
          "3. a wrong server entry is returned with its problem, so it fails alone.",
        ].join("\n"),
      },
    },
    {
      id: "17.6",
      says: [
        "cannot send ${method}: cannot reach the MCP server at ${url}: ${code}   (given in post; e.g. cannot send initialize: cannot reach the MCP server at http://127.0.0.1:PORT/mcp: ECONNREFUSED)",
        "cannot send ${method}: ${why}   (a transport that cannot deliver the request, e.g. cannot send tools/call: the response passed maxResponseBytes (1048576 bytes after decompression); the rest was not read)",
        "the server answered with a body that is not JSON: ${JSON.stringify(text.slice(0, 200))}   (readAll)",
        "dropped a message that is not JSON-RPC (${reason})   (readAll, a diagnostic; reason is what readMessage said)",
        "the server answered ${method} with HTTP ${status}: ${detail}   (failOnHttpError, given: call it first in deliverResponse)",
        "the connection was closed   (close: the error handed to onClose)",
      ],
      title: {
        zh: "Streamable HTTP 传输（HttpTransport 的 headers、deliverResponse、readAll、close）",
        en: "the Streamable HTTP transport",
      },
      hint: {
        zh: [
          "远程服务器说的是 Streamable HTTP：客户端发的每条消息都是对同一个 URL 的 POST，服务器用 JSON 或一个事件流（SSE）回答请求，用 202 回答通知；`initialize` 的回答在响应头 `mcp-session-id` 里给出会话。给定的部分值得读：`post`（授权、重试、响应体上限）、`readStream`（断流续传）、`openGetStream` / `listen`（服务器主动发来的消息走 GET 流）。由你写四段：",
          "1. `headers(post)`：在已有的头（配置的 `headers`、授权）上加 `accept`——POST 是 `application/json, text/event-stream`，GET 是 `text/event-stream`；有会话就带 `mcp-session-id`，有 `protocolVersion`（客户端在 initialize 之后设置）就带 `mcp-protocol-version`；返回这些头。",
          "2. `deliverResponse(message, response)`：先 `await this.failOnHttpError(message, response)`；响应头里有 `mcp-session-id` 就记进 `this.sessionId`；状态是 202，或者发出的不是请求（通知、对服务器请求的回答：`isRequest` 为假）时，丢掉响应体（`await response.body?.cancel()`）就返回；`content-type` 含 `text/event-stream` 时在后台读：`void this.readStream(response, message.id)`——`send` 在请求被接受时就返回，不等流读完；否则把 `readAll(response)` 的每条消息交给 `this.handlers?.onMessage`。",
          "3. `readAll(response)`：事件流就逐个事件 `this.parse(event.data)`（`readSse`），留下不是 undefined 的；否则读整个响应体，`JSON.parse` 失败时抛 `the server answered with a body that is not JSON: ${JSON.stringify(text.slice(0, 200))}`；一条消息或一个数组（batch）都行，每项过 `readMessage`，返回字符串（不是 JSON-RPC 消息）的项丢掉，并记诊断 `dropped a message that is not JSON-RPC (${原因})`。",
          '4. `close()`：只做一次（`this.ended` 已真就返回）；置 `ended`，`this.streams.abort()` 停掉所有流，有会话就 `DELETE` 同一个 URL（头用 `await this.headers(false, false)`：第二个参数 false 表示沿用上次发过的授权头，不等正在进行的登录或刷新；响应体丢掉；服务器已经不在也不算错），最后 `this.handlers?.onClose(new Error("the connection was closed"))`。',
        ].join("\n"),
        en: [
          "Every client message is a POST to one URL; a request is answered with JSON or an event stream, a notification with 202; initialize's answer names the session in mcp-session-id.",
          "1. headers: accept (POST: application/json, text/event-stream; GET: text/event-stream), mcp-session-id and mcp-protocol-version once known.",
          "2. deliverResponse: failOnHttpError first, keep a session id the server names, 202 or a non-request: cancel the body; an event stream: readStream in the background; else each message of readAll to onMessage.",
          "3. readAll: SSE events through parse, or a JSON body (one message or a batch, non-JSON-RPC items dropped with a diagnostic).",
          "4. close: once; abort the streams, DELETE the session (headers(false, false): the last Authorization sent, never waiting on a login), onClose.",
        ].join("\n"),
      },
      // its tests connect a client first: in practice(17) they meet lab 17.3's site before this one
      uses: ["17.3"],
    },
  ],
  devDependencies: [
    "@modelcontextprotocol/sdk",
    "@modelcontextprotocol/server-everything",
    "@modelcontextprotocol/server-filesystem",
  ],
  wrong: [
    {
      lab: "17.1",
      what: "the CR before LF kept in the line",
      file: "src/mcp/line-decoder.ts",
      find: "      const end = line.length > 0 && line[line.length - 1] === 13 ? line.length - 1 : line.length;",
      replace: "      const end = line.length;",
      failsWith: "to deeply equal",
    },
    {
      lab: "17.1",
      what: "an unfinished line's cap checked only once its newline comes",
      file: "src/mcp/line-decoder.ts",
      find: "      if (this.partBytes > this.maxLineBytes) throw new LineTooLongError(this.maxLineBytes);\n",
      replace: "",
      failsWith: "to throw",
    },
    {
      lab: "17.1",
      what: "any id accepted: an object or a boolean id passes",
      file: "src/mcp/json-rpc.ts",
      find: '  if (hasId && typeof id !== "number" && typeof id !== "string" && !(id === null && "error" in message)) {',
      replace: "  if (hasId && id === undefined) {",
      failsWith: "an id that is neither",
    },
    {
      lab: "17.1",
      what: "params that are not an object accepted",
      file: "src/mcp/json-rpc.ts",
      find: '    if (message.params !== undefined && (typeof message.params !== "object" || message.params === null)) {',
      replace: "    if (message.params === null) {",
      failsWith: "params that are not an object",
    },
    {
      lab: "17.2",
      what: "an abort does not tell the peer (no notifications/cancelled)",
      file: "src/mcp/connection.ts",
      find: '        this.notify("notifications/cancelled", { requestId: id, reason }).catch(() => {});\n',
      replace: "",
      failsWith: "cancelled",
    },
    {
      lab: "17.2",
      what: "an ended request's timers left running (cleanup forgets them)",
      file: "src/mcp/connection.ts",
      find: "          if (timer !== undefined) clearTimeout(timer);\n          if (totalTimer !== undefined) clearTimeout(totalTimer);\n          signal?.removeEventListener",
      replace: "          signal?.removeEventListener",
      failsWith: "expected 2 to be +0",
    },
    {
      lab: "17.2",
      what: "a notification handler's throw escapes instead of becoming a diagnostic",
      file: "src/mcp/connection.ts",
      find: "      try {\n        handler(message.params ?? {});\n      } catch (error) {\n        this.onDiagnostic(`the handler of ${message.method} failed: ${errorText(error)}`);\n      }",
      replace: "      handler(message.params ?? {});",
      failsWith: "boom",
    },
    {
      lab: "17.2",
      what: "the default timeout wins over the request's own",
      file: "src/mcp/connection.ts",
      find: "    const timeoutMs = options.timeoutMs ?? this.defaultTimeoutMs;",
      replace: "    const timeoutMs = this.defaultTimeoutMs;",
      failsWith: "the request's own timeoutMs ends it",
    },
    {
      lab: "17.3",
      what: "the client's declared capabilities left empty whatever handlers it has",
      file: "src/mcp/client.ts",
      find: "      if (this.options.roots !== undefined) capabilities.roots = { listChanged: true };\n",
      replace: "",
      failsWith: "roots",
    },
    {
      lab: "17.3",
      what: "an unsupported protocol version accepted",
      file: "src/mcp/client.ts",
      find: '      if (typeof version !== "string" || !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) {',
      replace: '      if (typeof version !== "string") {',
      failsWith: "does not support",
    },
    {
      lab: "17.3",
      what: "the server given the whole environment, not only the inherited variables",
      file: "src/mcp/stdio-transport.ts",
      find: "    for (const name of INHERITED_ENV) if (process.env[name] !== undefined) childEnv[name] = process.env[name]!;",
      replace: "    Object.assign(childEnv, process.env);",
      failsWith: "env",
    },
    {
      lab: "17.3",
      what: "close sends SIGKILL at once, without closing stdin and waiting first",
      file: "src/mcp/stdio-transport.ts",
      find: '    child.stdin?.end();\n    if (await within(grace)) return;\n    signalGroup(child, "SIGTERM");\n    if (await within(grace)) return;\n',
      replace: "",
      failsWith: "to be greater than or equal to 1000",
    },
    {
      lab: "17.4",
      what: "a long tool name not cut to 64 characters",
      file: "src/mcp/mcp-tools.ts",
      find: "  if (name.length <= MAX_TOOL_NAME && !taken.has(name)) return name;",
      replace: "  if (!taken.has(name)) return name;",
      failsWith: "64",
    },
    {
      lab: "17.4",
      what: "a name already taken not checked: two tools get the same name",
      file: "src/mcp/mcp-tools.ts",
      find: "  if (name.length <= MAX_TOOL_NAME && !taken.has(name)) return name;",
      replace: "  if (name.length <= MAX_TOOL_NAME) return name;",
      failsWith: "expected 'mcp__a_b__c' to match",
    },
    {
      lab: "17.4",
      what: "an empty result gives the model no text",
      file: "src/mcp/mcp-tools.ts",
      find: "  if (content.length === 0)\n    content.push({",
      replace: "  if (content.length < 0)\n    content.push({",
      failsWith: "no content",
    },
    {
      lab: "17.4",
      what: "structuredContent dropped from details",
      file: "src/mcp/mcp-tools.ts",
      find: "  if (result.structuredContent !== undefined) details.structuredContent = result.structuredContent;\n",
      replace: "",
      failsWith: "structuredContent",
    },
    {
      lab: "17.5",
      what: "a ${VAR:-default} ignores its default",
      file: "src/mcp/config.ts",
      find: "      if (fallback !== undefined) return fallback;\n",
      replace: "",
      failsWith: "is not set in the environment",
    },
    {
      lab: "17.5",
      what: "a missing variable becomes an empty string instead of an error",
      file: "src/mcp/config.ts",
      find: "      throw new Error(`\\${${name}} is not set in the environment`);",
      replace: '      return "";',
      failsWith: "is not set in the environment",
    },
    {
      lab: "17.5",
      what: "one wrong server entry fails the whole file",
      file: "src/mcp/config.ts",
      find: '    } catch (error) {\n      out.push({ ...at, problem: `server "${name}" in ${file}: ${errorText(error)}` });\n    }',
      replace: "    } catch (error) {\n      throw error;\n    }",
      failsWith: 'must be a whole number of milliseconds above 0, got "soon"',
    },
    {
      lab: "17.6",
      what: "the session id not sent on later requests",
      file: "src/mcp/streamable-http.ts",
      find: '    if (this.sessionId !== undefined) headers["mcp-session-id"] = this.sessionId;\n',
      replace: "",
      failsWith: "expected [ [ 'POST', undefined",
    },
    {
      lab: "17.6",
      what: "close never deletes the session at the server",
      file: "src/mcp/streamable-http.ts",
      find: "    if (this.sessionId !== undefined) {\n      // the last Authorization sent",
      replace: '    if (this.sessionId === "") {\n      // the last Authorization sent',
      failsWith: "DELETE",
    },
    {
      lab: "17.6",
      what: "a batch item that is no JSON-RPC message fails the whole answer",
      file: "src/mcp/streamable-http.ts",
      find: '      if (typeof message === "string")\n        this.handlers?.onDiagnostic?.(`dropped a message that is not JSON-RPC (${message})`);\n      else out.push(message);',
      replace: '      if (typeof message === "string") throw new Error(message);\n      out.push(message);',
      failsWith: 'no "jsonrpc": "2.0"',
    },
    {
      lab: "17.6",
      what: "a body that is not JSON quoted whole, not up to its first 200 characters",
      file: "src/mcp/streamable-http.ts",
      find: "${JSON.stringify(text.slice(0, 200))}`);",
      replace: "${JSON.stringify(text)}`);",
      failsWith: "the server answered with a body that",
    },
    {
      lab: "17.2",
      what: "request ignores a rejected transport.send (the request waits for its timeout)",
      file: "src/mcp/connection.ts",
      find: "this.transport.send(message).catch((error: Error) => {\n        if (!this.pending.delete(id)) return;",
      replace: "this.transport.send(message).catch((error: Error) => {\n        return;",
      failsWith: "cannot send broken: HTTP 500 Internal Server Error",
    },
    {
      lab: "17.2",
      what: "break it, step 1: a request that ends by timeout or abort stays in pending",
      file: "src/mcp/connection.ts",
      find: "        if (!this.pending.delete(id)) return;\n        entry.cleanup();\n        reject(error);",
      replace: "        if (!this.pending.has(id)) return;\n        entry.cleanup();\n        reject(error);",
      failsWith: "progress: 1, total: 2",
    },
  ],
  breakIt: {
    zh:
      "在 `JsonRpcConnection.request` 里超时和中止共用的 `end` 中，把 `this.pending.delete(id)` 换成 `this.pending.has(id)`（结束了却不从 pending 删掉），" +
      '跑 `npx vitest run test/17- -t "Lab 17\\.2\\b"`：哪个测试失败？中止之后到达的进度通知去了哪里？' +
      "再想一想：把 `mcpToolName` 的 64 字符上限去掉，哪个模型提供方会拒绝这个请求（不用真跑）。",
    en:
      "In the `end` that timeout and abort share in JsonRpcConnection.request, replace this.pending.delete(id) with " +
      "this.pending.has(id) (ended, never removed) and run the Lab 17.2 tests: which fails, and where does the progress that " +
      "arrives after the abort go? Then think (no run needed) which provider refuses a tool name once the 64-character cap is lifted.",
  },
});
