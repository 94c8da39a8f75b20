/**
 * Recovery after the MCP servers are up (issue 41, item 16): a killed run left a call of an MCP
 * tool that never started; `--continue` opens the session before the servers start, and the
 * recovery waits for them, so the call runs on its server instead of being answered `not found`.
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runMain } from "../src/cli/main.js";
import { folderKey } from "../src/cli/sessions.js";
import { userMessage } from "../src/messages.js";
import { transcriptOf } from "../src/session/context.js";
import { SessionFile } from "../src/session/session.js";
import type { ToolResultMessage } from "../src/types.js";
import { answerTurn, scriptedChatServer } from "./support/chat-turns.js";
import { MANY_TOOLS_SERVER } from "./support/mcp.js";
import { call, turn } from "./support/messages.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "pi-durable-mcp-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("recovery and the MCP servers", () => {
  it("--continue: a never-started MCP call of a killed run runs once its server is up", async () => {
    const workspace = path.join(dir, "work");
    const sessions = path.join(dir, "sessions");
    const folder = path.join(sessions, folderKey(workspace));
    await mkdir(workspace, { recursive: true });
    await mkdir(folder, { recursive: true, mode: 0o700 });
    // what a run killed right after the model's answer leaves: the call, no intent, no result
    const file = path.join(folder, "2026-12-04T00-00-00-000Z_killed.jsonl");
    const session = await SessionFile.create(file, { cwd: workspace });
    const asked = await session.append({ type: "message", parentId: null, message: userMessage("weather in Oslo?") });
    const answer = turn([call("call_1", "mcp__many__city_weather", { city: "Oslo" })]);
    await session.append({ type: "message", parentId: asked, message: answer });
    await session.close();
    const config = path.join(dir, "mcp.json");
    await writeFile(
      config,
      JSON.stringify({ mcpServers: { many: { command: process.execPath, args: [MANY_TOOLS_SERVER] } } }),
    );

    const echo = answerTurn((body) => `It is ${body.messages.at(-1).content}.`);
    const model = await scriptedChatServer([echo, echo]);
    let stdout = "";
    let stderr = "";
    let code: number;
    try {
      code = await runMain(
        [
          ...["--base-url", model.baseUrl, "--model", "m", "--no-api-key", "--cwd", workspace],
          ...["--session-dir", sessions, "--mcp-config", config, "--continue", "-p", "thanks"],
        ],
        {
          stdout: { write: (text: string) => (stdout += text) },
          stderr: { write: (text: string) => (stderr += text) },
          env: { HOME: dir, INIT_CWD: dir },
        },
      );
    } finally {
      await model.close();
    }
    expect(code, stderr).toBe(0);
    expect(stderr).toContain("mcp__many__city_weather (call_1): never started, run now; the run goes on");
    const reopened = await SessionFile.open(file, { readOnly: true });
    const messages = transcriptOf(reopened.pathToLeaf(reopened.leaf!.id)).messages;
    const result = messages.find((m): m is ToolResultMessage => "role" in m && m.role === "toolResult");
    expect(result).toMatchObject({
      toolCallId: "call_1",
      isError: false,
      content: [{ type: "text", text: "sunny in Oslo" }],
    });
    expect(model.bodies[0].messages.at(-1)).toEqual({ role: "tool", tool_call_id: "call_1", content: "sunny in Oslo" });
    expect(model.bodies).toHaveLength(2); // the run that goes on, then "thanks"
    expect(stdout).toBe("It is thanks.\n");
  }, 60_000);
});
