/**
 * A person's limit on a server's tool calls: `"toolTimeoutMs"` of its entry bounds one call in
 * all, progress or not. Against a real server (test/fixtures/mcp/progress-only-server.mjs) whose
 * tool never answers and reports progress every 100 ms, which restarts a request's timeout each
 * time: without the entry's limit such a call holds a run for 10 minutes.
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { parseMcpConfig } from "../src/mcp/config.js";
import { McpServers } from "../src/mcp/servers.js";
import { builtStart } from "./support/built-cli.js";

const PROGRESS_ONLY = path.join(
  path.dirname(fileURLToPath(import.meta.url)),
  "fixtures",
  "mcp",
  "progress-only-server.mjs",
);
const entry = (extra: Record<string, unknown> = {}) => ({ command: process.execPath, args: [PROGRESS_ONLY], ...extra });

const opened: McpServers[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((servers) => servers.close()));
});

let dir: string;
let model: Server;
let baseUrl: string;
beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "pi-mcp-tool-timeout-"));
  // an OpenAI-compatible model: it calls the slow tool, then quotes what the call came back with
  model = createServer((request, response) => {
    let text = "";
    request.on("data", (chunk) => (text += chunk));
    request.on("end", () => {
      const last = JSON.parse(text).messages.at(-1);
      const chunk = (delta: unknown, finish: string | null = null) =>
        `data: ${JSON.stringify({ choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
      response.writeHead(200, { "content-type": "text/event-stream" });
      if (last.role === "tool")
        return response.end(
          `${chunk({ role: "assistant", content: `tool said: ${last.content}` })}${chunk({}, "stop")}data: [DONE]\n\n`,
        );
      const call = { index: 0, id: "call_1", type: "function", function: { name: "mcp__slow__work", arguments: "{}" } };
      response.end(`${chunk({ role: "assistant", tool_calls: [call] })}${chunk({}, "tool_calls")}data: [DONE]\n\n`);
    });
  });
  await new Promise<void>((resolve) => model.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(model.address() as AddressInfo).port}/v1`;
});
afterAll(async () => {
  model?.closeAllConnections();
  await new Promise((resolve) => model?.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

it('"toolTimeoutMs" of an entry ends a call that only sends progress, in all, and the server is told to stop', async () => {
  const configs = parseMcpConfig(
    JSON.stringify({ mcpServers: { slow: entry({ toolTimeoutMs: 800 }) } }),
    "/x/mcp.json",
    {},
  );
  expect(configs[0]?.toolTimeoutMs).toBe(800);
  const servers = McpServers.start(configs, { startupTimeoutMs: 20_000, graceMs: 200 });
  opened.push(servers);
  await servers.ready();
  const [work] = servers.tools;
  const updates: string[] = [];
  const ended = await work!
    .execute("call", {}, undefined, (update) => updates.push(JSON.stringify(update.content)))
    .then(
      () => "answered",
      (error: Error) => error.message,
    );
  expect(ended).toBe("tools/call timed out: no answer within 800 ms in all, though progress kept coming");
  // progress did come (each one restarting the silence timeout), so only the total limit ended it
  expect(updates.length).toBeGreaterThan(2);
  await expect.poll(() => servers.entries()[0]!.stderrTail.join("\n"), { timeout: 10_000 }).toMatch(/^cancelled \d+$/m);
}, 30_000);

it('a wrong "toolTimeoutMs" fails its server alone, saying what it must be', () => {
  const [config] = parseMcpConfig(
    JSON.stringify({ mcpServers: { slow: entry({ toolTimeoutMs: "1m" }) } }),
    "/x/mcp.json",
    {},
  );
  expect(config?.problem).toBe(
    'server "slow" in /x/mcp.json: "toolTimeoutMs" must be a whole number of milliseconds above 0, got "1m"',
  );
});

it("a --print run whose model calls a progress-only tool ends at the entry's limit with the timeout as the tool's result", async () => {
  const home = path.join(dir, "home");
  mkdirSync(path.join(home, ".pi-course"), { recursive: true });
  writeFileSync(
    path.join(home, ".pi-course", "mcp.json"),
    JSON.stringify({ mcpServers: { slow: entry({ toolTimeoutMs: 1500 }) } }),
  );
  const child = spawn(
    process.execPath,
    [builtStart(), "--base-url", baseUrl, "--model", "m", "--no-api-key", "--cwd", dir, "-p", "go"],
    { env: { PATH: process.env.PATH, HOME: home, INIT_CWD: dir }, stdio: ["ignore", "pipe", "pipe"] },
  );
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (data: Buffer) => (stdout += data.toString("utf8")));
  child.stderr.on("data", (data: Buffer) => (stderr += data.toString("utf8")));
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  expect({ code, stderr }).toEqual({ code: 0, stderr: expect.stringContaining("MCP server slow: ready with 1 tool") });
  expect(stdout).toBe(
    "tool said: tools/call timed out: no answer within 1500 ms in all, though progress kept coming\n",
  );
}, 60_000);
