/**
 * `pi-course mcp login NAME` as a person runs it: the built CLI as a real process, `$BROWSER` a
 * small script (it records the URL it was asked to open), the consent page submitted in headless
 * Chromium at the URL the CLI printed; the CLI waits for the loopback redirect and keeps the
 * tokens. Then print-mode runs call the protected server's tool with them. Against the official
 * SDK's authorization server and protected MCP server on 127.0.0.1 (support/oauth-servers.ts).
 * No token may be printed, logged or written anywhere but its 0600 file.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { runMain } from "../src/cli/main.js";
import { browserCommand } from "../src/cli/open-browser.js";
import { McpTokenStore } from "../src/mcp/auth/token-store.js";
import { launchBrowser, type TestBrowser } from "./support/browser.js";
import { builtStart } from "./support/built-cli.js";
import { killStarted, startProcess } from "./support/processes.js";
import { type OAuthServers, startOAuthServers, TOOLS_SCOPE } from "./support/oauth-servers.js";

let browser: TestBrowser;
let servers: OAuthServers;
let model: Server;
let baseUrl: string;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "pi-mcp-oauth-cli-"));
  browser = await launchBrowser();
  servers = await startOAuthServers();
  // an OpenAI-compatible model: it calls the protected tool when it has it, then quotes its result
  model = createServer((request, response) => {
    let text = "";
    request.on("data", (chunk) => (text += chunk));
    request.on("end", () => {
      const body = JSON.parse(text);
      const chunk = (delta: unknown, finish: string | null = null) =>
        `data: ${JSON.stringify({ choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
      response.writeHead(200, { "content-type": "text/event-stream" });
      const last = body.messages.at(-1);
      const names = (body.tools ?? []).map((tool: { function: { name: string } }) => tool.function.name);
      if (last.role === "tool") {
        response.end(
          `${chunk({ role: "assistant", content: `The server says: ${last.content}` })}${chunk({}, "stop")}data: [DONE]\n\n`,
        );
      } else if (names.includes("mcp__web__whoami")) {
        const call = {
          index: 0,
          id: "call_1",
          type: "function",
          function: { name: "mcp__web__whoami", arguments: "{}" },
        };
        response.end(`${chunk({ role: "assistant", tool_calls: [call] })}${chunk({}, "tool_calls")}data: [DONE]\n\n`);
      } else response.end(`${chunk({ role: "assistant", content: "no tool" })}${chunk({}, "stop")}data: [DONE]\n\n`);
    });
  });
  await new Promise<void>((resolve) => model.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(model.address() as AddressInfo).port}/v1`;
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await servers?.close();
  model?.closeAllConnections();
  await new Promise((resolve) => model?.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

/** A print-mode run in process (the user's mcp.json names the server). */
async function printRun(home: string, project: string, prompt: string) {
  let stdout = "";
  let stderr = "";
  const code = await runMain(["--base-url", baseUrl, "--model", "m", "--no-api-key", "--cwd", project, "-p", prompt], {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    env: { HOME: home, INIT_CWD: project },
  });
  return { code, stdout, stderr };
}

/** Every file under `folder`, but `except`. */
function filesUnder(folder: string, except: string): string[] {
  return readdirSync(folder, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.join(entry.parentPath, entry.name))
    .filter((file) => file !== except);
}

it("mcp login NAME prints the URL, opens $BROWSER, waits for the redirect and keeps the tokens 0600; a print run then calls the server's tool; no token anywhere else; logout forgets them", async () => {
  const home = path.join(dir, "home");
  const project = path.join(dir, "project");
  mkdirSync(path.join(home, ".pi-course"), { recursive: true });
  mkdirSync(project);
  // "direct": a print run waits for its start, so the first request has its tools (or it failed)
  writeFileSync(
    path.join(home, ".pi-course", "mcp.json"),
    JSON.stringify({ mcpServers: { web: { url: servers.mcpUrl, exposure: "direct" } } }),
  );
  const outputs: string[] = [];

  // before the login: the run goes on, and says what to do
  const before = await printRun(home, project, "hi");
  outputs.push(before.stdout, before.stderr);
  expect(before.code).toBe(0);
  expect(before.stdout).toBe("no tool\n");
  expect(before.stderr).toMatch(/^note: MCP server web failed: .*needs authorization: run "pi-course mcp login web"$/m);

  // the login, as a real process; $BROWSER records the URL it is given
  const opened = path.join(dir, "opened-url");
  const script = path.join(dir, "browser.sh");
  writeFileSync(script, `#!/bin/sh\nprintf '%s' "$1" > '${opened}'\n`);
  chmodSync(script, 0o755);
  const child = spawn(process.execPath, [builtStart(), "mcp", "login", "web", "--timeout", "30"], {
    cwd: project,
    env: { PATH: process.env.PATH, HOME: home, INIT_CWD: project, BROWSER: script },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stderr.on("data", (data: Buffer) => (stderr += data.toString("utf8")));
  const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
  const printed = await new Promise<string>((resolve, reject) => {
    child.stdout.on("data", (data: Buffer) => {
      stdout += data.toString("utf8");
      const url = /^ {2}(http:\/\/\S+\/authorize\?\S+)$/m.exec(stdout)?.[1];
      if (url !== undefined && stdout.includes("waiting for the browser")) resolve(url);
    });
    child.on("close", (code) =>
      reject(new Error(`mcp login exited (${code}) before printing a URL: ${stdout}${stderr}`)),
    );
  });
  // the browser is started, not waited for: its script may write a moment after the line is printed
  const written = () => existsSync(opened) && readFileSync(opened, "utf8") !== "";
  for (let i = 0; i < 500 && !written(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  expect(readFileSync(opened, "utf8")).toBe(printed);
  expect(stdout).toContain(`(opened with ${script}); waiting for the browser to come back…`);
  const { page } = await browser.page();
  await page.goto(printed, { waitUntil: "load" });
  await Promise.all([page.waitForNavigation({ waitUntil: "load" }), page.click("#allow")]);
  expect(String(await page.evaluate("document.body.innerText"))).toContain("Authorization received");
  await page.close();
  expect(await exited).toBe(0);
  const store = new McpTokenStore(path.join(home, ".pi-course", "mcp-auth"));
  const file = store.fileOf(servers.mcpUrl);
  expect(stdout).toContain(
    `logged in to the MCP server web at ${servers.issuer} with the scope "${TOOLS_SCOPE}"; the tokens are kept in ${file} (only you can read it)\n`,
  );
  expect(stderr).toBe("");
  outputs.push(stdout, stderr);
  expect(statSync(file).mode & 0o777).toBe(0o600);
  const { access_token: token, refresh_token: refresh } = store.read(servers.mcpUrl)!.tokens;

  // a print run (with its session file) calls the protected tool with the kept token
  const after = await printRun(home, project, "who am I?");
  outputs.push(after.stdout, after.stderr);
  expect(after.code).toBe(0);
  expect(after.stdout).toBe(`The server says: hello from the protected server (scopes: ${TOOLS_SCOPE})\n`);
  expect(after.stderr).toMatch(/^note: MCP server web: ready with 2 tools$/m);

  // the tokens are in their file only: not in a session, a log, or anything printed
  const others = [...filesUnder(home, file), ...filesUnder(project, file)];
  expect(others.some((other) => other.includes(`${path.sep}sessions${path.sep}`))).toBe(true);
  for (const secret of [token, refresh!]) {
    for (const other of others) expect(readFileSync(other, "utf8"), other).not.toContain(secret);
    for (const output of outputs) expect(output).not.toContain(secret);
  }

  // logout forgets them
  let out = "";
  const code = await runMain(["mcp", "logout", "web"], {
    stdout: { write: (text: string) => (out += text) },
    stderr: { write: () => true },
    env: { HOME: home, INIT_CWD: project },
  });
  expect({ code, out }).toEqual({ code: 0, out: "logged out of the MCP server web: its tokens are deleted\n" });
  expect(store.read(servers.mcpUrl)).toBeUndefined();
}, 60_000);

it("a machine: an entry with the client credentials grant needs no login; a print run gets its token on the first 401 (the secret from the environment) and calls the tool", async () => {
  const home = path.join(dir, "home-machine");
  const project = path.join(dir, "project-machine");
  mkdirSync(path.join(home, ".pi-course"), { recursive: true });
  mkdirSync(project);
  servers.addClient("ci-runner", "ci-secret-789");
  writeFileSync(
    path.join(home, ".pi-course", "mcp.json"),
    JSON.stringify({
      mcpServers: {
        web: {
          url: servers.mcpUrl,
          oauth: { grant: "client_credentials", clientId: "ci-runner", clientSecret: "${CI_SECRET}" },
          exposure: "direct", // a print run waits for its start: the first request has its tools
        },
      },
    }),
  );
  let stdout = "";
  let stderr = "";
  const code = await runMain(
    ["--base-url", baseUrl, "--model", "m", "--no-api-key", "--cwd", project, "--no-session", "-p", "who am I?"],
    {
      stdout: { write: (text: string) => (stdout += text) },
      stderr: { write: (text: string) => (stderr += text) },
      env: { HOME: home, INIT_CWD: project, CI_SECRET: "ci-secret-789" },
    },
  );
  expect({ code, stdout }).toEqual({
    code: 0,
    stdout: `The server says: hello from the protected server (scopes: ${TOOLS_SCOPE})\n`,
  });
  expect(servers.log).toContain(`token client_credentials resource=${servers.mcpUrl}`);
  expect(stderr).not.toContain("ci-secret-789");
  const kept = new McpTokenStore(path.join(home, ".pi-course", "mcp-auth")).read(servers.mcpUrl)!;
  expect(
    statSync(new McpTokenStore(path.join(home, ".pi-course", "mcp-auth")).fileOf(servers.mcpUrl)).mode & 0o777,
  ).toBe(0o600);
  expect(stdout + stderr).not.toContain(kept.tokens.access_token);
  // the secret stays where the configuration put it (the environment), not in the token file
  expect(
    readFileSync(new McpTokenStore(path.join(home, ".pi-course", "mcp-auth")).fileOf(servers.mcpUrl), "utf8"),
  ).not.toContain("ci-secret-789");
});

it("mcp login says clearly what is wrong: no such server, a stdio server, a server with its own Authorization header, a missing variable of its secret", async () => {
  const home = path.join(dir, "home-errors");
  mkdirSync(path.join(home, ".pi-course"), { recursive: true });
  writeFileSync(
    path.join(home, ".pi-course", "mcp.json"),
    JSON.stringify({
      mcpServers: {
        local: { command: "some-server" },
        keyed: { url: servers.mcpUrl, headers: { Authorization: "Bearer k" } },
        machine: {
          url: servers.mcpUrl,
          oauth: { grant: "client_credentials", clientId: "m", clientSecret: "${NO_SUCH_SECRET}" },
        },
      },
    }),
  );
  const login = async (...argv: string[]) => {
    let stderr = "";
    const code = await runMain(["mcp", ...argv], {
      stdout: { write: () => true },
      stderr: { write: (text: string) => (stderr += text) },
      env: { HOME: home, INIT_CWD: dir },
    });
    return { code, stderr };
  };
  const file = path.join(home, ".pi-course", "mcp.json");
  expect((await login("login", "nope")).stderr).toBe(
    `error: no MCP server is named "nope" in ${file} or ${path.join(dir, ".pi-course", "mcp.json")}\n`,
  );
  expect((await login("login", "local")).stderr).toBe(
    'error: the MCP server "local" is started as a program; it takes its keys in "env", not a login\n',
  );
  expect((await login("logout", "keyed")).stderr).toBe(
    'error: the MCP server "keyed" sends its own Authorization header or has "oauth": false; remove that to log in\n',
  );
  expect(await login("login", "machine")).toEqual({
    code: 1,
    stderr: `error: server "machine" in ${file}: "oauth.clientSecret": \${NO_SUCH_SECRET} is not set in the environment\n`,
  });
  expect((await login("login")).code).toBe(2);
});

it("the browser to open: $BROWSER (its first entry; %s is the URL, else the URL comes last), else xdg-open when it is on PATH, else none", () => {
  const url = "http://127.0.0.1:1/authorize?x=1";
  expect(browserCommand(url, { BROWSER: "firefox --new-window:chromium" })).toEqual(["firefox", "--new-window", url]);
  expect(browserCommand(url, { BROWSER: "w3m %s -dump" })).toEqual(["w3m", url, "-dump"]);
  const bin = path.join(dir, "bin");
  mkdirSync(bin, { recursive: true });
  expect(browserCommand(url, { PATH: bin })).toBeUndefined();
  writeFileSync(path.join(bin, "xdg-open"), "#!/bin/sh\n");
  expect(browserCommand(url, { PATH: bin })).toEqual(["xdg-open", url]);
});

it("the browser gets the URL as it is: $& and & in it are not replacement patterns nor cmd syntax; only http(s) URLs are opened", () => {
  const url = "https://as.example/authorize?a=$&&b=$1|x^<y>";
  expect(browserCommand(url, { BROWSER: "w3m %s -dump" })).toEqual(["w3m", url, "-dump"]);
  expect(browserCommand("file:///etc/passwd", { BROWSER: "w3m" })).toBeUndefined();
  expect(browserCommand("calc.exe", { BROWSER: "w3m" })).toBeUndefined();
  const platform = Object.getOwnPropertyDescriptor(process, "platform")!;
  Object.defineProperty(process, "platform", { value: "win32" });
  try {
    expect(browserCommand(url, {})).toEqual(["rundll32", "url.dll,FileProtocolHandler", url]);
  } finally {
    Object.defineProperty(process, "platform", platform);
  }
});

const started: ChildProcess[] = [];
afterAll(() => killStarted(started));

/** `pi-course mcp ARGV…` as a real process in `project` (HOME `home`, `env` added); resolves when it exits. */
async function mcpProcess(home: string, project: string, argv: string[], env: NodeJS.ProcessEnv = {}) {
  const run = startProcess(builtStart(), ["mcp", ...argv], {
    cwd: project,
    started,
    env: { HOME: home, INIT_CWD: project, BROWSER: "", ...env },
  });
  const { code } = await run.exit;
  return { code, ...run.output() };
}

it("mcp login in an untrusted clone never uses the clone's entry: its ${VAR} secret is not filled in nor sent; the user's own entry is used; trusted, the clone's is", async () => {
  const home = path.join(dir, "home-clone");
  const clone = realpathSync(mkdtempSync(path.join(dir, "clone-")));
  mkdirSync(path.join(home, ".pi-course"), { recursive: true });
  mkdirSync(path.join(clone, ".pi-course"));
  const cloneFile = path.join(clone, ".pi-course", "mcp.json");
  const userFile = path.join(home, ".pi-course", "mcp.json");
  // the clone's token endpoint would accept the secret if it were sent: a login there would succeed
  servers.addClient("clone-client", "ghp_from_the_environment");
  writeFileSync(
    cloneFile,
    JSON.stringify({
      mcpServers: {
        srv: {
          url: servers.mcpUrl,
          oauth: { grant: "client_credentials", clientId: "clone-client", clientSecret: "${GITHUB_TOKEN}" },
        },
      },
    }),
  );
  const env = { GITHUB_TOKEN: "ghp_from_the_environment" };
  const tokenRequests = () => servers.log.filter((line) => line.startsWith("token client_credentials")).length;
  const before = tokenRequests();

  // only the clone names srv: refused, saying why and what to do
  const only = await mcpProcess(home, clone, ["login", "srv"], env);
  expect(only).toEqual({
    code: 1,
    stdout: "",
    stderr:
      `error: the MCP server "srv" is only in ${cloneFile}, and this folder is not trusted: its entry is not used ` +
      `(trust the folder: start pi-course in it and answer yes; or add the server to ${userFile})\n`,
  });
  // both name it: the user's entry is the one used (a stdio server here, which takes no login)
  writeFileSync(userFile, JSON.stringify({ mcpServers: { srv: { command: "my-own-server" } } }));
  const both = await mcpProcess(home, clone, ["login", "srv"], env);
  expect([both.code, both.stderr]).toEqual([
    1,
    'error: the MCP server "srv" is started as a program; it takes its keys in "env", not a login\n',
  ]);
  expect(tokenRequests()).toBe(before);

  // mcp get says which entry a run takes, and from which file
  const got = await mcpProcess(home, clone, ["get", "srv"]);
  expect(got.stdout.split("\n")[0]).toBe(`srv (user: ${userFile})`);

  // trusted, the clone's entry is used (so the refusal above is the trust gate's)
  writeFileSync(
    path.join(home, ".pi-course", "trust.json"),
    JSON.stringify({ version: 1, folders: { [clone]: { trusted: true, decidedAt: "2026-12-06T00:00:00.000Z" } } }),
  );
  const trusted = await mcpProcess(home, clone, ["login", "srv"], env);
  expect([trusted.code, trusted.stderr]).toEqual([0, ""]);
  expect(trusted.stdout).toContain(`logged in to the MCP server srv at ${servers.issuer}`);
  expect(tokenRequests()).toBe(before + 1);
}, 60_000);

it("mcp login --timeout 2147483 (the most a timer holds) waits for the browser; 99999999999 is refused saying the most it takes (no timer that fires at once); --timeout that is no number is a usage error", async () => {
  const home = path.join(dir, "home-timeout");
  const project = path.join(dir, "project-timeout");
  mkdirSync(path.join(home, ".pi-course"), { recursive: true });
  mkdirSync(project);
  writeFileSync(
    path.join(home, ".pi-course", "mcp.json"),
    JSON.stringify({ mcpServers: { web: { url: servers.mcpUrl } } }),
  );
  const run = startProcess(builtStart(), ["mcp", "login", "web", "--no-browser", "--timeout", "2147483"], {
    cwd: project,
    started,
    env: { HOME: home, INIT_CWD: project },
  });
  let exited: number | null | undefined;
  void run.exit.then(({ code }) => (exited = code));
  // a timer past 2^31-1 ms fires after 1 ms: the login would fail before anyone could answer
  for (let i = 0; i < 3000 && !run.output().stdout.includes("waiting for the browser"); i++)
    await new Promise((resolve) => setTimeout(resolve, 10));
  const printed = /^ {2}(http:\/\/\S+\/authorize\?\S+)$/m.exec(run.output().stdout)?.[1];
  expect(printed, run.output().stdout + run.output().stderr).toBeDefined();
  const { page } = await browser.page();
  await page.goto(printed!, { waitUntil: "load" });
  await Promise.all([page.waitForNavigation({ waitUntil: "load" }), page.click("#allow")]);
  await page.close();
  expect((await run.exit).code).toBe(0);
  expect(exited).toBe(0);
  expect(run.output().stdout).toContain("logged in to the MCP server web at");

  for (const wrong of ["abc", "0", "-5"]) {
    const refused = await mcpProcess(home, project, ["login", "web", "--timeout", wrong]);
    expect([refused.code, refused.stderr.split("\n")[0]]).toEqual([
      2,
      `error: --timeout takes a number of seconds above 0, got ${wrong}.`,
    ]);
  }
  const tiny = await mcpProcess(home, project, ["login", "web", "--no-browser", "--timeout", "0.0001"]);
  expect([tiny.code, tiny.stderr.split("\n")[0], tiny.stdout]).toEqual([
    2,
    "error: --timeout must be at least 0.001 seconds (a wait of less ends before anyone can answer), got 0.0001.",
    "",
  ]);
  const tokens = servers.log.length;
  const tooLong = await mcpProcess(home, project, ["login", "web", "--no-browser", "--timeout", "99999999999"]);
  expect([tooLong.code, tooLong.stderr.split("\n")[0], tooLong.stdout]).toEqual([
    2,
    "error: --timeout must be at most 2147483 seconds (about 24.8 days, the longest a timer holds), got 99999999999.",
    "",
  ]);
  expect(servers.log.length).toBe(tokens);
}, 60_000);

it("a token file replaced by a FIFO reads as no tokens, at once: logout and a print run do not block", async () => {
  const home = path.join(dir, "home-fifo");
  const project = path.join(dir, "project-fifo");
  mkdirSync(path.join(home, ".pi-course"), { recursive: true });
  mkdirSync(project);
  writeFileSync(
    path.join(home, ".pi-course", "mcp.json"),
    JSON.stringify({ mcpServers: { web: { url: servers.mcpUrl } } }),
  );
  const store = new McpTokenStore(path.join(home, ".pi-course", "mcp-auth"));
  mkdirSync(store.folder, { recursive: true, mode: 0o700 });
  execFileSync("mkfifo", [store.fileOf(servers.mcpUrl)]);
  // real processes: a read that blocks on the FIFO would hang them (the test's timeout says so), not this worker
  const logout = await mcpProcess(home, project, ["logout", "web"]);
  expect(logout).toEqual({ code: 0, stdout: "no tokens were kept for the MCP server web\n", stderr: "" });
  const run = startProcess(
    builtStart(),
    ["--base-url", baseUrl, "--model", "m", "--no-api-key", "--cwd", project, "-p", "hi"],
    {
      cwd: project,
      started,
      env: { HOME: home, INIT_CWD: project },
    },
  );
  expect((await run.exit).code).toBe(0);
  expect(run.output().stderr).toMatch(
    /^note: MCP server web failed: .*needs authorization: run "pi-course mcp login web"$/m,
  );
}, 60_000);
