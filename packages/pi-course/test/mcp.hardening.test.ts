/**
 * Issue 41: hostile MCP servers. A server's bad tool list fails that server alone (at start and
 * in a re-list after `list_changed`), and a list is bounded over all its pages.
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, expect, it } from "vitest";
import { FAULT_SERVER } from "./support/mcp.js";
import { MAX_TOOL_LIST_CHARS, McpClient } from "../src/mcp/client.js";
import type { McpServerConfig } from "../src/mcp/config.js";
import { McpServers } from "../src/mcp/servers.js";
import { StdioTransport } from "../src/mcp/stdio-transport.js";

const HOSTILE = path.join(path.dirname(fileURLToPath(import.meta.url)), "fixtures", "mcp", "hostile-list-server.mjs");
const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((o) => o.close()));
});

const server = (name: string, mode: string): McpServerConfig => ({
  name,
  source: "test",
  transport: { kind: "stdio", command: process.execPath, args: [HOSTILE, mode] },
});

it("a tool without a string name fails its server alone; the others start", async () => {
  const servers = McpServers.start([server("bad", "bad-name"), server("good", "relist-bad")], { graceMs: 500 });
  opened.push(servers);
  await servers.ready();
  const [bad, good] = servers.entries();
  expect(bad!.state).toEqual({
    status: "failed",
    reason: expect.stringContaining("tools/list: tool 1 has no name (a non-empty string)"),
  });
  expect(good!.state.status).toBe("ready");
  expect(servers.tools.map((t) => t.name)).toEqual(["mcp__good__echo"]);
});

it("a bad tool in a re-list after list_changed is a diagnostic; the agent keeps the tools it had", async () => {
  const servers = McpServers.start([server("relist", "relist-bad")], { graceMs: 500 });
  opened.push(servers);
  await servers.ready();
  expect(servers.tools.map((t) => t.name)).toEqual(["mcp__relist__echo"]);
  const deadline = Date.now() + 10_000;
  while (servers.entries()[0]!.diagnostics.length === 0 && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 20));
  expect(servers.entries()[0]!.diagnostics).toEqual([
    "re-listing the tools failed: tools/list: tool 1 has no name (a non-empty string)",
  ]);
  expect(servers.tools.map((t) => t.name)).toEqual(["mcp__relist__echo"]);
});

it("a tool list past its budget over all pages ends in a protocol error, not gigabytes", async () => {
  const client = new McpClient(
    new StdioTransport({ command: process.execPath, args: [HOSTILE, "big-pages"], graceMs: 500 }),
  );
  opened.push(client);
  await client.connect({ timeoutMs: 20_000 });
  const error = await client.listTools({ timeoutMs: 20_000 }).catch((e: Error) => e);
  expect(error).toBeInstanceOf(Error);
  expect((error as Error).message).toMatch(
    new RegExp(`^tools/list gave more than ${MAX_TOOL_LIST_CHARS} characters of tools \\(over [45] pages\\)$`),
  );
}, 30_000);

it("progress restarts a call's timeout, but not past its total time (maxTotalMs)", async () => {
  const client = new McpClient(new StdioTransport({ command: process.execPath, args: [FAULT_SERVER], graceMs: 500 }));
  opened.push(client);
  await client.connect({ timeoutMs: 20_000 });
  // "slow" answers after 300 ms with progress every 50 ms: each progress restarts the 150 ms timeout.
  const progressed = await client.callTool("slow", {}, { timeoutMs: 150, onProgress: () => {} });
  expect(progressed.content).toEqual([{ type: "text", text: "slow done" }]);
  const capped = await client
    .callTool("slow", {}, { timeoutMs: 150, maxTotalMs: 120, onProgress: () => {} })
    .catch((e: Error) => e.message);
  expect(capped).toBe("tools/call timed out: no answer within 120 ms in all, though progress kept coming");
}, 30_000);
