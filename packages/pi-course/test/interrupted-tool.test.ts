/**
 * A process killed (SIGKILL) while a tool runs leaves a session whose last tool call has no
 * result. Loading it again, in the library (an `Agent` given the session) and in the CLI
 * (`--continue`), gives that call an error result saying it was interrupted, records it, and the
 * conversation goes on: the next model call is well paired. (The CLI journals its tool calls since
 * chapter 19: there the result says the call may or may not have taken effect, and the killed
 * run is finished before the new prompt.)
 */
import type { ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Agent } from "../src/agent/agent.js";
import { findPairingProblem } from "../src/cli/pairing.js";
import { folderKey } from "../src/cli/sessions.js";
import { assistantMessage, textOf } from "../src/messages.js";
import { ScriptedModel } from "../src/models/scripted-model.js";
import { uncertainText } from "../src/durable/recovery.js";
import { interruptedText } from "../src/session/interrupted.js";
import { SessionFile, messagesOf } from "../src/session/session.js";
import type { Message } from "../src/types.js";
import { SseServer, sseReply } from "./support/sse-server.js";
import { builtStart } from "./support/built-cli.js";
import { answerTurn, callTurn } from "./support/chat-turns.js";
import { killQuietly, readText, running, startProcess, until } from "./support/processes.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const packageDir = path.resolve(here, "..");

let dir: string;
const children: ChildProcess[] = [];
const strays: number[] = [];
let server: SseServer | undefined;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "pi-interrupted-"));
});
afterEach(async () => {
  for (const child of children.splice(0))
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  for (const pid of strays.splice(0)) killQuietly(pid);
  await server?.close();
  server = undefined;
  await rm(dir, { recursive: true, force: true });
});

/**
 * The CLI (print mode) in a fresh workspace against a server that asks for one bash `command`
 * (call `id`), then answers "Resumed." and "Done."; resolves once the command wrote its parent's
 * and its own pid to `pidFile` ("agent shell").
 */
async function bashRun(id: string, command: string, pidFile: string) {
  const replay = await SseServer.start();
  server = replay; // closed after the test
  replay
    .reply(sseReply(callTurn(id, "bash", { command })({})))
    .reply(sseReply(answerTurn(() => "Resumed.")({})))
    .reply(sseReply(answerTurn(() => "Done.")({})));
  const workspace = path.join(dir, "work");
  const sessions = path.join(dir, "sessions");
  await mkdir(workspace);
  const args = ["--base-url", replay.baseUrl, "--model", "replay", "--no-api-key", "--cwd", workspace];
  const env = { HOME: dir, INIT_CWD: workspace, NO_COLOR: "1" };
  const first = start(builtStart(), [...args, "--session-dir", sessions, "--print", "run it"], env);
  await until(
    () => /^\d+ \d+\n$/.test(readText(pidFile)),
    () => JSON.stringify(first.output()),
  );
  return { server: replay, args, env, sessions, workspace, first };
}

/** `node script args` from the package folder, a .ts script bundled first (support/processes.ts). */
const start = (script: string, args: string[], env: NodeJS.ProcessEnv = {}) =>
  startProcess(script, args, { cwd: packageDir, started: children, env });

const roles = (messages: readonly { role: string }[]) => messages.map((m) => m.role);

describe("a tool call interrupted by a crash", () => {
  it("library: SIGKILL while the tool runs; an Agent given the reopened session answers the call as interrupted, records it, and goes on", async () => {
    const file = path.join(dir, "s.jsonl");
    const run = start(path.join(here, "support", "interrupted-tool-child.ts"), [file]);
    await until(
      () => run.output().stdout.includes("tool started") || run.child.exitCode !== null,
      () => JSON.stringify(run.output()),
    );
    expect(run.output().stdout).toContain("tool started");
    run.child.kill("SIGKILL");
    expect(await run.exit).toEqual({ code: null, signal: "SIGKILL" });

    const session = await SessionFile.open(file);
    expect(roles(messagesOf(session.entries()))).toEqual(["user", "assistant"]);
    const model = new ScriptedModel([assistantMessage([{ type: "text", text: "Understood." }], "stop")]);
    const agent = new Agent({ session, initialState: { model } });
    expect(agent.state.messages.at(-1)).toMatchObject({
      role: "toolResult",
      toolCallId: "call_wait",
      toolName: "wait",
      isError: true,
      content: [{ type: "text", text: interruptedText("wait") }],
    });
    await agent.prompt("what happened?");
    const sent = model.requests[0]!.messages;
    expect(roles(sent)).toEqual(["user", "assistant", "toolResult", "user"]);
    expect(findPairingProblem(sent)).toBe(undefined);
    await session.close();
    const onDisk = messagesOf((await SessionFile.open(file)).entries()) as Message[];
    expect(roles(onDisk)).toEqual(["user", "assistant", "toolResult", "user", "assistant"]);
    expect(textOf(onDisk[2]!)).toBe(interruptedText("wait"));
  }, 240_000);

  it("CLI: SIGKILL of the agent process while bash runs; --continue answers the call as interrupted, records it, and the server gets a well-paired request", async () => {
    const pidFile = path.join(dir, "agent.pid");
    const { server, args, env, sessions, workspace, first } = await bashRun(
      "call_sleep",
      `echo $PPID $$ > ${pidFile}; sleep 30`,
      pidFile,
    );
    const [agentPid, shellPid] = readText(pidFile).trim().split(" ").map(Number) as [number, number];
    // The bash command's parent is the agent process (the launcher started it apart): kill it.
    process.kill(agentPid, "SIGKILL");
    // The orphaned command would hold the launcher's output open until its sleep ends.
    strays.push(-shellPid, shellPid);
    for (const pid of strays) killQuietly(pid);
    await first.exit;
    const sessionDir = path.join(sessions, folderKey(workspace));
    const [name] = await readdir(sessionDir);
    const lines = async () =>
      (await readFile(path.join(sessionDir, name!), "utf8"))
        .trimEnd()
        .split("\n")
        .slice(1)
        .map((line) => JSON.parse(line))
        // chapter 19's tool_intent / tool_outcome lines are not messages
        .filter((entry) => entry.type === "message")
        .map((entry) => entry.message as Message);
    expect(roles(await lines())).toEqual(["user", "assistant"]);

    const second = start(builtStart(), [...args, "--session-dir", sessions, "--continue", "--print", "go on"], env);
    const done = await second.exit;
    // chapter 19: the bash call's intent was committed, so recovery answers it as uncertain (it
    // may or may not have run: bash is not safe to replay), says so, and finishes the killed run
    // ("Resumed.") before the new prompt ("Done.")
    expect({ ...done, ...second.output() }).toMatchObject({ code: 0, stdout: "Done.\n" });
    expect(second.output().stderr).toContain(
      "note: the session's last run was killed mid-way: bash (call_sleep): interrupted, may or may not have taken effect; the run goes on",
    );
    expect(server.requests).toHaveLength(3);
    const sent = JSON.parse(server.requests[1]!.body).messages;
    expect(sent.map((m: { role: string }) => m.role)).toEqual(["system", "user", "assistant", "tool"]);
    expect(sent[3]).toMatchObject({ tool_call_id: "call_sleep" });
    expect(JSON.stringify(sent[3].content)).toContain('Tool call \\"bash\\" was interrupted');
    const next = JSON.parse(server.requests[2]!.body).messages;
    expect(next.map((m: { role: string }) => m.role)).toEqual([
      "system",
      "user",
      "assistant",
      "tool",
      "assistant",
      "user",
    ]);
    const saved = await lines();
    expect(roles(saved)).toEqual(["user", "assistant", "toolResult", "assistant", "user", "assistant"]);
    expect(saved[2]).toMatchObject({ toolCallId: "call_sleep", isError: true });
    expect(textOf(saved[2]!)).toBe(uncertainText("bash", "Its command is no longer running."));
  }, 300_000);

  it("CLI: a bash command the killed agent left running is stopped by --continue's recovery, and the model is told", async () => {
    const pidFile = path.join(dir, "agent.pid");
    const late = path.join(dir, "late.txt");
    // its output goes to /dev/null, so the orphan holds no pipe of the dead agent open; it sleeps
    // long enough to outlive a slow start of the second run on a loaded machine (8 s was not enough once)
    const command = `echo $PPID $$ > ${pidFile}; exec >/dev/null 2>&1; sleep 15; echo late > ${late}`;
    const { server, args, env, sessions, first } = await bashRun("call_orphan", command, pidFile);
    const [agentPid, shellPid] = readText(pidFile).trim().split(" ").map(Number) as [number, number];
    strays.push(-shellPid, shellPid); // only if the test fails: recovery is to stop it
    process.kill(agentPid, "SIGKILL");
    await first.exit;
    expect(running(shellPid)).toBe(true); // the command outlived its agent

    const second = start(builtStart(), [...args, "--session-dir", sessions, "--continue", "--print", "go on"], env);
    const done = await second.exit;
    expect({ ...done, ...second.output() }).toMatchObject({ code: 0, stdout: "Done.\n" });
    expect(running(shellPid)).toBe(false);
    const sent = JSON.parse(server.requests[1]!.body).messages;
    expect(sent[3]).toMatchObject({
      role: "tool",
      tool_call_id: "call_orphan",
      content: uncertainText(
        "bash",
        "Its command was still running after the crash (2 processes); it was stopped now.",
      ),
    });
    await new Promise((resolve) => setTimeout(resolve, 16_000)); // past the command's sleep
    expect(existsSync(late)).toBe(false);
  }, 300_000);
});
