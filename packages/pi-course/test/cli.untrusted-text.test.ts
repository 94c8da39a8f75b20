/**
 * What MCP servers choose reaches the terminal of a real `--print` run only through the terminal
 * guard (src/cli/terminal-text.ts): a server's name, the reason it failed, its stderr and the
 * message of a question nobody can answer in this mode. Against a real server whose every word
 * tries to mislead (test/fixtures/mcp/hostile-text-server.mjs): escape sequences, bidi
 * overrides, invisible characters, and newlines followed by lines that look like another
 * server's. `/mcp` prints `McpServers.describe` with the same guard: tested on the same server.
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

const HOSTILE = fileURLToPath(new URL("./fixtures/mcp/hostile-text-server.mjs", import.meta.url));
/** A character the guard writes out, raw. */
const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]/u;

let dir: string;
const started: ChildProcess[] = [];
const opened: McpServers[] = [];
beforeEach(() => {
  dir = realpathSync(mkdtempSync(path.join(tmpdir(), "pi-untrusted-text-")));
});
afterEach(async () => {
  killStarted(started);
  await Promise.all(opened.splice(0).map((servers) => servers.close()));
  rmSync(dir, { recursive: true, force: true });
});

it("--print: a failed server's name, reason and stderr, and a declined question's message, reach stderr through the guard", async () => {
  const home = path.join(dir, "home");
  mkdirSync(path.join(home, ".pi-course"), { recursive: true });
  writeFileSync(
    path.join(home, ".pi-course", "mcp.json"),
    JSON.stringify({
      mcpServers: {
        "bad\u202egnp": { command: process.execPath, args: [HOSTILE, "fail"] },
        w: { command: process.execPath, args: [HOSTILE] },
      },
    }),
  );
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
