/**
 * Recovery and the tool hooks (issue 41, item 2). A call `beforeToolCall` blocks has its
 * outcome committed when it is decided: a real process killed (SIGKILL) while the other call of
 * its parallel batch runs leaves the block in the session, and recovery records it instead of
 * running the call. And a call recovery does run passes the agent's hooks (`Agent.toolHooks`):
 * `beforeToolCall` may block it, `afterToolCall` may change its result.
 */
import type { ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Type } from "typebox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Agent } from "../src/agent/agent.js";
import { defineTool } from "../src/agent/tools.js";
import { planRecovery, resumeRun } from "../src/durable/recovery.js";
import { userMessage } from "../src/messages.js";
import { transcriptOf } from "../src/session/context.js";
import { SessionFile } from "../src/session/session.js";
import type { ToolResultMessage } from "../src/types.js";
import { BLOCKED, SECRET, blockReveal, secretTools } from "./support/blocked-call-script.js";
import { call, says, scripted, turn } from "./support/messages.js";
import { killStarted, startProcess, until } from "./support/processes.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const packageDir = path.resolve(here, "..");
let dir: string;
const children: ChildProcess[] = [];
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "pi-durable-hooks-"));
});
afterAll(async () => {
  killStarted(children);
  await rm(dir, { recursive: true, force: true });
});

/** Each tool result on the session's path, by call id. */
function results(session: SessionFile): Map<string, ToolResultMessage> {
  const messages = transcriptOf(session.pathToLeaf(session.leaf!.id)).messages;
  return new Map(
    messages
      .filter((m): m is ToolResultMessage => "role" in m && m.role === "toolResult")
      .map((m) => [m.toolCallId, m]),
  );
}

const textOf = (message: ToolResultMessage | undefined) =>
  message?.content.map((block) => (block.type === "text" ? block.text : "")).join("");

describe("recovery and the tool hooks", () => {
  it("a blocked call's outcome is committed when it is decided: killed while its batch runs, it is recorded, never run", async () => {
    const file = path.join(dir, "killed.jsonl");
    const effects = path.join(dir, "killed.effects");
    const run = startProcess(path.join(here, "support", "blocked-call-child.ts"), [file, effects], {
      cwd: packageDir,
      started: children,
    });
    await until(
      () => run.output().stdout.includes("hanging") || run.child.exitCode !== null,
      () => `the child said ${JSON.stringify(run.output())}`,
      60_000,
    );
    expect(run.output().stdout).toContain("hanging");
    run.child.kill("SIGKILL");
    await run.exit;

    const session = await SessionFile.open(file);
    const tools = secretTools(effects);
    const plan = await planRecovery(session, tools);
    expect(plan.calls.map((c) => [c.call.id, c.action])).toEqual([
      ["c1", "interrupted"],
      ["c2", "recorded"],
    ]);
    expect(plan.calls[1]!.outcome).toMatchObject({ content: [{ type: "text", text: BLOCKED }], isError: true });

    // recovered by an agent with no hooks at all: the block stands, the secret is never read
    const model = scripted([says("done")]);
    await resumeRun(new Agent({ initialState: { model, tools } }), session, {});
    expect(existsSync(effects)).toBe(false);
    expect(results(session).get("c2")).toMatchObject({ isError: true, content: [{ type: "text", text: BLOCKED }] });
    expect(JSON.stringify(model.requests)).not.toContain(SECRET);
    expect(readFileSync(file, "utf8")).not.toContain(SECRET);
    await session.close();
  }, 90_000);

  it("a call recovery runs passes the agent's hooks: beforeToolCall blocks it, afterToolCall changes its result", async () => {
    const file = path.join(dir, "never-started.jsonl");
    const effects = path.join(dir, "never-started.effects");
    const session = await SessionFile.create(file, { cwd: dir });
    const asked = await session.append({ type: "message", parentId: null, message: userMessage("look around") });
    const calls = turn([call("c2", "reveal"), call("c3", "note")]);
    await session.append({ type: "message", parentId: asked, message: calls });
    const note = defineTool({
      name: "note",
      label: "note",
      description: "Notes something.",
      parameters: Type.Object({}),
      execute: async () => ({ content: [{ type: "text", text: "raw" }], details: undefined }),
    });
    const tools = [...secretTools(effects), note];
    expect((await planRecovery(session, tools)).calls.map((c) => c.action)).toEqual(["run", "run"]);

    const model = scripted([says("done")]);
    const agent = new Agent({
      beforeToolCall: blockReveal,
      afterToolCall: ({ toolCall }) =>
        toolCall.name === "note" ? { content: [{ type: "text", text: "redacted" }] } : undefined,
      initialState: { model, tools },
    });
    await resumeRun(agent, session, {});
    expect(existsSync(effects)).toBe(false);
    const answered = results(session);
    expect(answered.get("c2")).toMatchObject({ isError: true });
    expect(textOf(answered.get("c2"))).toBe(BLOCKED);
    expect(answered.get("c3")).toMatchObject({ isError: false });
    expect(textOf(answered.get("c3"))).toBe("redacted");
    expect(JSON.stringify(model.requests)).not.toContain(SECRET);
    await session.close();
  });
});
