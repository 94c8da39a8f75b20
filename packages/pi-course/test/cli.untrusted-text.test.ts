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

/** A home whose mcp.json starts the hostile server twice: failing (as `failing`) and as `w`. */
function homeWithHostileServers(failing: string): string {
  const home = path.join(dir, "home");
  mkdirSync(path.join(home, ".pi-course"), { recursive: true });
  const servers = {
    [failing]: { command: process.execPath, args: [HOSTILE, "fail"] },
    w: { command: process.execPath, args: [HOSTILE] },
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
