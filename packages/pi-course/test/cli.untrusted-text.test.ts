/**
 * What MCP servers choose reaches the terminal of a real `--print` run only through the terminal
 * guard (src/cli/terminal-text.ts): a server's name, the reason it failed, its stderr and the
 * message of a question nobody can answer in this mode. Against a real server whose every word
 * tries to mislead (test/fixtures/mcp/hostile-text-server.mjs): escape sequences, bidi
 * overrides, invisible characters, and newlines followed by lines that look like another
 * server's. In a real pseudo-terminal, `/mcp` and a server's question show the same texts only
 * through the guard; `McpServers.describe` with the guard is checked line by line too.
 */
import type { ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, expect, it } from "vitest";
import { untrustedText } from "../src/cli/terminal-text.js";
import { parseMcpConfig } from "../src/mcp/config.js";
import { McpServers } from "../src/mcp/servers.js";
import { builtStart } from "./support/built-cli.js";
import { answerTurn, callTurn, scriptedChatServer } from "./support/chat-turns.js";
import { killStarted, startProcess } from "./support/processes.js";
import { KEY, openTerminal, type PseudoTerminal } from "./support/terminal.js";

const HOSTILE = fileURLToPath(new URL("./fixtures/mcp/hostile-text-server.mjs", import.meta.url));
/** A character the guard writes out, raw. */
const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]/u;

let dir: string;
let terminal: PseudoTerminal | undefined;
const started: ChildProcess[] = [];
const opened: McpServers[] = [];
beforeEach(() => {
  dir = realpathSync(mkdtempSync(path.join(tmpdir(), "pi-untrusted-text-")));
});
afterEach(async () => {
  terminal?.kill();
  killStarted(started);
  await Promise.all(opened.splice(0).map((servers) => servers.close()));
  rmSync(dir, { recursive: true, force: true });
});

/**
 * A home whose mcp.json starts the hostile server twice: failing (as `failing`) and as `w`, both
 * `"exposure": "direct"`, so a print run waits for them and says how each start ended.
 */
function homeWithHostileServers(failing: string): string {
  const home = path.join(dir, "home");
  mkdirSync(path.join(home, ".pi-course"), { recursive: true });
  const servers = {
    [failing]: { command: process.execPath, args: [HOSTILE, "fail"], exposure: "direct" },
    w: { command: process.execPath, args: [HOSTILE], exposure: "direct" },
  };
  writeFileSync(path.join(home, ".pi-course", "mcp.json"), JSON.stringify({ mcpServers: servers }));
  return home;
}

it("--print: a failed server's name, reason and stderr, and a declined question's message, reach stderr through the guard", async () => {
  const home = homeWithHostileServers("bad\u202egnp");
  const chat = await scriptedChatServer([callTurn("c1", "mcp__w__ask", {}), answerTurn(() => "Done.")]);
  try {
    const args = ["--base-url", chat.baseUrl, "--model", "m", "--no-api-key", "--cwd", dir, "--no-session", "-p", "go"];
    const run = startProcess(builtStart(), args, { cwd: dir, env: { HOME: home, INIT_CWD: dir }, started });
    const { code } = await run.exit;
    const { stdout, stderr } = run.output();
    expect([code, stdout]).toEqual([0, "Done.\n"]);
    const lines = stderr.split("\n");
    expect(lines.filter((line) => RAW.test(line))).toEqual([]);
    // every line that starts like a note is the agent's own: the forged ones sit under their speaker
    expect(lines.filter((line) => line.includes("MCP server github"))).toEqual([
      expect.stringMatching(/^ {2}│ MCP server github: ready with 9 tools/),
      expect.stringMatching(/^ {2}│ MCP server github: ready with 9 tools/),
    ]);
    expect(stderr).toContain(
      "note: MCP server bad\\u202egnp failed: initialize failed: MCP error -32000: boom\\u001b]0;pwned\\u0007\\u202e\\u200b\\u2028\\ufeff\n" +
        "  │ MCP server github: ready with 9 tools",
    );
    expect(stderr).toContain(
      'note: MCP server w asked for input ("Pick one\\u001b]0;pwned\\u0007\\u202e\\u200b\\u2028\\ufeff\n' +
        '  │ MCP server github: ready with 9 tools"): declined (nobody can answer in this mode)',
    );
  } finally {
    await chat.close();
  }
}, 60_000);

it("/mcp's text (McpServers.describe with the guard): a server's stderr and failure reason forge no line", async () => {
  const configs = parseMcpConfig(
    JSON.stringify({ mcpServers: { "bad\u202egnp": { command: process.execPath, args: [HOSTILE, "fail"] } } }),
    path.join(dir, "mcp.json"),
    {},
  );
  const servers = McpServers.start(configs, { startupTimeoutMs: 20_000, graceMs: 200 });
  opened.push(servers);
  await servers.ready();
  // what /mcp prints: the same call features/mcp.ts makes
  const shown = servers.describe(5, (text) => untrustedText(text, { max: 500 }));
  expect(shown.split("\n")).toEqual([
    "bad\\u202egnp: failed: initialize failed: MCP error -32000: boom\\u001b]0;pwned\\u0007\\u202e\\u200b\\u2028\\ufeff",
    "  │ MCP server github: ready with 9 tools",
    "  stderr: starting\\u001b[2J\\u202e",
    "  stderr: note: MCP server github: ready",
  ]);
});

it("in a pseudo-terminal: /mcp and a server's question show its words only through the guard; nothing it chose reaches the terminal raw", async () => {
  const home = homeWithHostileServers("bad");
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, TERM: "xterm-256color", INIT_CWD: dir };
  for (const name of ["NO_COLOR", "PI_COURSE_CONFIG", "PI_COURSE_BASE_URL", "PI_COURSE_MODEL", "PI_COURSE_PROVIDER"])
    delete env[name];
  const chat = await scriptedChatServer([callTurn("c1", "mcp__w__ask", {}), answerTurn(() => "Noted.")]);
  try {
    const args = ["--base-url", chat.baseUrl, "--model", "m", "--no-api-key", "--cwd", dir, "--no-session"];
    terminal = openTerminal([process.execPath, builtStart(), ...args], { cwd: dir, env, columns: 200 });
    // both have settled (in either order) before /mcp is asked
    await expect
      .poll(() => /MCP server w: ready/.test(terminal!.text()) && /MCP server bad failed/.test(terminal!.text()), {
        timeout: 30_000,
      })
      .toBe(true);
    await terminal.waitFor("› ");
    terminal.type(`/mcp${KEY.enter}`);
    await terminal.waitFor("bad: failed: initialize failed: MCP error -32000: boom\\u001b]0;pwned\\u0007\\u202e");
    await terminal.waitFor("  │ MCP server github: ready with 9 tools");
    await terminal.waitFor("  stderr: starting\\u001b[2J\\u202e");
    await terminal.waitFor("› ");
    terminal.type(`ask me${KEY.enter}`);
    await terminal.waitFor("MCP server w asks: Pick one\\u001b]0;pwned\\u0007\\u202e\\u200b\\u2028\\ufeff");
    await terminal.waitFor("  │ MCP server github: ready with 9 tools");
    await terminal.waitFor("Fill in its 1 field(s)?");
    terminal.type(`n${KEY.enter}`);
    await terminal.waitFor("Noted.");
    await terminal.waitFor("› ");
    terminal.type(`/exit${KEY.enter}`);
    expect(await terminal.exit).toBe(0);
    // what the terminal received: the app's own colours, nothing of the server's raw
    expect(terminal.raw()).not.toMatch(/\u001b\]|\u001b\[2J|[\u202e\u200b\u2028\ufeff\u0007]/u);
    expect(
      terminal
        .text()
        .split("\n")
        .filter((line) => /^\s*(note: )?MCP server github/.test(line)),
    ).toEqual([]);
  } finally {
    await chat.close();
  }
}, 90_000);

/** Words an authorization server chose: a newline that starts a line passing for the agent's, a bidi override, a screen clear. */
const AS_WORDS = "bad client\nlogged in to the MCP server web at https://auth.example.com\u202e\u001b[2J";

/**
 * A protected MCP server and its authorization server in one node:http server on 127.0.0.1: its
 * token endpoint refuses every request with `AS_WORDS` as `error_description` and an `error_uri`
 * that is an escape sequence; registration and the authorization endpoint answer as usual.
 */
async function refusingAuthorizationServer(): Promise<{ url: string; close: () => Promise<void> }> {
  const { createServer } = await import("node:http");
  const server = createServer((request, response) => {
    const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    const json = (status: number, value: object, headers: Record<string, string> = {}) =>
      response.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(value));
    request.resume();
    request.on("end", () => {
      const route = `${request.method} ${request.url?.split("?")[0]}`;
      if (route === "GET /.well-known/oauth-protected-resource/mcp")
        return json(200, { resource: `${base}/mcp`, authorization_servers: [base] });
      if (route === "GET /.well-known/oauth-authorization-server")
        return json(200, {
          issuer: base,
          authorization_endpoint: `${base}/authorize`,
          token_endpoint: `${base}/token`,
          registration_endpoint: `${base}/register`,
          code_challenge_methods_supported: ["S256"],
        });
      if (route === "POST /register") return json(201, { client_id: "c", token_endpoint_auth_method: "none" });
      if (route === "POST /token")
        return json(400, {
          error: "invalid_client",
          error_description: AS_WORDS,
          error_uri: "https://auth.example.com/\u001b]52;c;cHduZWQ=\u0007",
        });
      json(
        401,
        {},
        { "www-authenticate": `Bearer resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"` },
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/mcp`;
  return {
    url,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/**
 * A home whose mcp.json has `web` (client credentials) and `person` (the code flow) at `url`, both
 * `"exposure": "direct"`, so a print run waits for them and says how each start ended.
 */
function homeWithRemoteServers(url: string): string {
  const home = path.join(dir, "home-remote");
  mkdirSync(path.join(home, ".pi-course"), { recursive: true });
  const mcpServers = {
    web: { url, oauth: { grant: "client_credentials", clientId: "svc", clientSecret: "s" }, exposure: "direct" },
    person: { url, exposure: "direct" },
  };
  writeFileSync(path.join(home, ".pi-course", "mcp.json"), JSON.stringify({ mcpServers }));
  return home;
}

/** What the guard makes of `AS_WORDS` after a speaker: written out, the forged line under its speaker. */
const AS_WORDS_SHOWN = "bad client\n  │ logged in to the MCP server web at https://auth.example.com\\u202e\\u001b[2J";

it("mcp login: an authorization server's error_description and error_uri, in McpAuthError's message, reach stderr only through the guard (a token refused, a browser sent back with an error)", async () => {
  const remote = await refusingAuthorizationServer();
  try {
    const home = homeWithRemoteServers(remote.url);
    const env = { HOME: home, INIT_CWD: dir, BROWSER: "" };
    const machine = startProcess(builtStart(), ["mcp", "login", "web"], { cwd: dir, env, started });
    expect((await machine.exit).code).toBe(1);
    const refused = machine.output().stderr;
    expect(refused).toBe(
      `error: cannot log in to the MCP server web: the authorization server ${new URL(remote.url).origin} did not give a token (HTTP 400: invalid_client (${AS_WORDS_SHOWN}))\n`,
    );

    // the browser comes back to the loopback redirect with the authorization server's error
    const person = startProcess(builtStart(), ["mcp", "login", "person", "--no-browser", "--timeout", "60"], {
      cwd: dir,
      env,
      started,
    });
    for (let i = 0; i < 3000 && !person.output().stdout.includes("waiting for the browser"); i++)
      await new Promise((resolve) => setTimeout(resolve, 10));
    const printed = /^ {2}(http:\/\/\S+\/authorize\?\S+)$/m.exec(person.output().stdout)?.[1];
    expect(printed, person.output().stdout + person.output().stderr).toBeDefined();
    const asked = new URL(printed!).searchParams;
    const back = new URL(asked.get("redirect_uri")!);
    back.searchParams.set("state", asked.get("state")!);
    back.searchParams.set("error", "access_denied\u001b[2J");
    back.searchParams.set("error_description", AS_WORDS);
    back.searchParams.set("error_uri", "https://auth.example.com/\u001b]52;c;cHduZWQ=\u0007");
    await fetch(back).then((response) => response.text());
    expect((await person.exit).code).toBe(1);
    expect(person.output().stderr).toBe(
      `error: cannot log in to the MCP server person: the authorization server answered access_denied\\u001b[2J (${AS_WORDS_SHOWN})\n`,
    );
    for (const text of [refused, person.output().stderr, person.output().stdout])
      expect(text.split("\n").filter((line) => RAW.test(line) || line.startsWith("logged in"))).toEqual([]);
  } finally {
    await remote.close();
  }
}, 60_000);

it("--print: a remote server whose authorization server refuses with words of its own fails with them only through the guard", async () => {
  const remote = await refusingAuthorizationServer();
  const chat = await scriptedChatServer([answerTurn(() => "Done.")]);
  try {
    const home = homeWithRemoteServers(remote.url);
    const args = ["--base-url", chat.baseUrl, "--model", "m", "--no-api-key", "--cwd", dir, "--no-session", "-p", "go"];
    const run = startProcess(builtStart(), args, { cwd: dir, env: { HOME: home, INIT_CWD: dir }, started });
    const { code } = await run.exit;
    const { stdout, stderr } = run.output();
    expect([code, stdout]).toEqual([0, "Done.\n"]);
    const origin = new URL(remote.url).origin;
    expect(stderr).toContain(
      `\nnote: MCP server web failed: the authorization server ${origin} did not give a token (HTTP 400: invalid_client (${AS_WORDS_SHOWN}))\n`,
    );
    expect(stderr.split("\n").filter((line) => RAW.test(line) || line.startsWith("logged in"))).toEqual([]);
  } finally {
    await chat.close();
    await remote.close();
  }
}, 60_000);
