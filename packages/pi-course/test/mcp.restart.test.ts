/**
 * A stdio server that exits is started again when one of its tools is called, a bounded number
 * of times, and `reconnect` starts it afresh. The server is the fault server (the official SDK's
 * `McpServer`), whose `crash` tool ends its process mid-call.
 */
import { afterEach, expect, it } from "vitest";
import type { McpServerConfig } from "../src/mcp/config.js";
import { MAX_RESTARTS, McpServers } from "../src/mcp/servers.js";
import type { AgentTool } from "../src/types.js";
import { FAULT_SERVER } from "./support/mcp.js";

const opened: McpServers[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((servers) => servers.close()));
});

const fault: McpServerConfig = {
  name: "fault",
  source: "test",
  transport: { kind: "stdio", command: process.execPath, args: [FAULT_SERVER] },
};

/** Runs `tool` to its result: the text, or the error it threw. */
async function run(tool: AgentTool<any, any>): Promise<string> {
  try {
    const result = await tool.execute("call", {}, undefined);
    return result.content.map((block) => (block.type === "text" ? block.text : "")).join("");
  } catch (error) {
    return `error: ${(error as Error).message}`;
  }
}

it("an exited server keeps its tools and starts again on the next call, at most MAX_RESTARTS times; reconnect starts it afresh", async () => {
  const servers = McpServers.start([fault], { startupTimeoutMs: 20_000, graceMs: 200 });
  opened.push(servers);
  await servers.ready();
  const tool = (name: string) => servers.tools.find((candidate) => candidate.name === `mcp__fault__${name}`)!;
  const crash = tool("crash");
  const garbage = tool("garbage");

  expect(await run(crash)).toMatch(/^error: .*exited with code 3/);
  expect(servers.entries()[0]!.state.status).toBe("exited");
  expect(servers.describe().split("\n")[0]).toMatch(
    new RegExp(
      `^fault: exited: .*; starts again when one of its tools is called \\(${MAX_RESTARTS} of ${MAX_RESTARTS} restarts left\\)$`,
    ),
  );
  expect(servers.tools.map((candidate) => candidate.name)).toContain("mcp__fault__garbage");
  // the next call starts it again, and is answered
  expect(await run(garbage)).toBe("answered after the stray line");
  expect(servers.entries()[0]!.state.status).toBe("ready");

  for (let restart = 2; restart <= MAX_RESTARTS; restart++) {
    expect(await run(crash)).toMatch(/^error: .*exited with code 3/); // exits (restarts left)
    expect(await run(garbage)).toBe("answered after the stray line"); // started again
  }
  // the last crash: no restart left
  expect(await run(crash)).toMatch(/^error: .*exited with code 3/);
  const state = servers.entries()[0]!.state;
  expect(state.status).toBe("failed");
  expect(state.status === "failed" && state.reason).toMatch(
    new RegExp(`\\(started again ${MAX_RESTARTS} times; /mcp reconnect starts it afresh\\)$`),
  );
  expect(servers.tools).toEqual([]);
  expect(await run(garbage)).toMatch(/^error: the MCP server fault is not running: .*started again/);

  await servers.reconnect("fault");
  expect(servers.entries()[0]!.state.status).toBe("ready");
  expect(await run(tool("garbage"))).toBe("answered after the stray line");
  await expect(servers.reconnect("nope")).rejects.toThrow('no MCP server is named "nope"');
}, 90_000);
