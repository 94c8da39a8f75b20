/**
 * What of the environment reaches an MCP server, and how a server's key reaches the agent.
 * (Not a chapter test: no chapter owns it, so it runs in the repository only.)
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { McpClient } from "../src/mcp/client.js";
import { mcpVariables } from "../src/mcp/config.js";
import { StdioTransport } from "../src/mcp/stdio-transport.js";
import { serverEntry } from "./support/mcp.js";

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "pi-course-mcp-env-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("the environment of MCP servers", () => {
  it("mcpVariables names the ${VAR}s of the user's mcp.json, of each --mcp-config file (relative to INIT_CWD) and of the project's", async () => {
    await mkdir(path.join(dir, ".pi-course"));
    await writeFile(
      path.join(dir, ".pi-course", "mcp.json"),
      JSON.stringify({ mcpServers: { a: { command: "x", env: { K: "${GITHUB_TOKEN}" } } } }),
    );
    await writeFile(
      path.join(dir, "more.json"),
      JSON.stringify({
        mcpServers: { b: { url: "https://e/mcp", headers: { A: "Bearer ${WEB_KEY:-none} ${GITHUB_TOKEN}" } } },
      }),
    );
    await mkdir(path.join(dir, "project", ".pi-course"), { recursive: true });
    await writeFile(
      path.join(dir, "project", ".pi-course", "mcp.json"),
      JSON.stringify({ mcpServers: { c: { command: "y", env: { P: "${PROJECT_KEY}" } } } }),
    );
    const argv = ["--mcp-config", "more.json", "--mcp-config", "missing.json"];
    expect(mcpVariables(argv, { INIT_CWD: dir }, dir)).toEqual(["GITHUB_TOKEN", "WEB_KEY"]);
    // the project's file (of --cwd) too: its values are used only once the folder is trusted
    expect(mcpVariables([...argv, "--cwd", "project"], { INIT_CWD: dir }, dir)).toEqual([
      "GITHUB_TOKEN",
      "WEB_KEY",
      "PROJECT_KEY",
    ]);
  });

  it("a stdio server inherits PATH and HOME but no secret of this process; it gets what its env names", async () => {
    const before = process.env.PI_COURSE_TEST_SECRET_TOKEN;
    process.env.PI_COURSE_TEST_SECRET_TOKEN = "do-not-leak";
    const client = new McpClient(
      new StdioTransport({
        command: process.execPath,
        args: [serverEntry("server-everything"), "stdio"],
        env: { SERVER_KEY: "given" },
        graceMs: 500,
      }),
    );
    try {
      await client.connect({ timeoutMs: 20_000 });
      const result = await client.callTool("get-env", {});
      const text = result.content.map((c) => ("text" in c ? c.text : "")).join("");
      const env = JSON.parse(text) as Record<string, string>;
      expect(env.SERVER_KEY).toBe("given");
      expect(env.PATH).toBe(process.env.PATH);
      expect(env.PI_COURSE_TEST_SECRET_TOKEN).toBeUndefined();
      expect(text).not.toContain("do-not-leak");
    } finally {
      await client.close();
      if (before === undefined) delete process.env.PI_COURSE_TEST_SECRET_TOKEN;
      else process.env.PI_COURSE_TEST_SECRET_TOKEN = before;
    }
  }, 30_000);
});
