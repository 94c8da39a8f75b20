/**
 * Chapter 19 in the interactive mode, in a real pseudo-terminal (support/terminal.ts): a run is
 * killed (SIGKILL of the agent process) while its `bash` call sleeps; the next interactive start
 * with `--continue` (or `/resume ID` inside a conversation) says what the killed run left and asks
 * whether to resume it. Yes: recovered (the call, not safe to repeat, gets the "may or may not have
 * taken effect" result), and the run goes on before the prompt line. No: recorded as it stands,
 * no model call and no tool runs, the prompt waits. `--no-recover` skips the question.
 *
 * A side-effect counter (each run of the command appends a line) proves the command never ran
 * twice. Waits are for what the screen shows (generous limits: a start-up on a loaded machine can
 * take many seconds), never a fixed time.
 */
import { readFileSync } from "node:fs";
import { mkdir, mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { RECOVERY_QUESTION } from "../src/cli/features/durable.js";
import { folderKey } from "../src/cli/sessions.js";
import { findPairingProblem } from "../src/cli/pairing.js";
import { uncertainText } from "../src/durable/recovery.js";
import { textOf } from "../src/messages.js";
import type { Message } from "../src/types.js";
import { SseServer, sseReply } from "./support/sse-server.js";
import { KEY, openTerminal, type PseudoTerminal } from "./support/terminal.js";
import { builtStart } from "./support/built-cli.js";
import { killQuietly, readText, until } from "./support/processes.js";

const PROMPT = "› ";
const WAIT = 60_000;

let dir: string;
let workspace: string;
let sessions: string;
let server: SseServer;
const terminals: PseudoTerminal[] = [];
const strays: number[] = [];

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "pi-durable-tty-"));
  workspace = path.join(dir, "work");
  sessions = path.join(dir, "sessions");
  await mkdir(workspace);
  server = await SseServer.start();
});
afterEach(async () => {
  for (const t of terminals.splice(0)) t.kill();
  for (const pid of strays.splice(0)) killQuietly(pid);
  await server.close();
  await rm(dir, { recursive: true, force: true });
});

/** The interactive CLI on a new pseudo-terminal, against the replay server, sessions kept in `sessions`. */
function terminal(extra: string[]): PseudoTerminal {
  const args = ["--base-url", server.baseUrl, "--model", "replay", "--no-api-key", "--cwd", workspace];
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    HOME: dir,
    INIT_CWD: workspace,
    TERM: "xterm-256color",
    NO_COLOR: "1",
  };
  for (const name of ["PI_COURSE_CONFIG", "PI_COURSE_BASE_URL", "PI_COURSE_MODEL", "PI_COURSE_PROVIDER"])
    delete env[name];
  const t = openTerminal([process.execPath, builtStart(), ...args, "--session-dir", sessions, ...extra], {
    cwd: workspace,
    env,
    columns: 200,
  });
  terminals.push(t);
  return t;
}

/** A Chat Completions stream: text, or one bash call. */
function chat(content: { text?: string; bash?: string }): string {
  const chunk = (delta: object, reason: string | null) =>
    `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "m", choices: [{ index: 0, delta, finish_reason: reason }] })}\n\n`;
  if (content.bash !== undefined) {
    const call = {
      index: 0,
      id: "call_sleep",
      type: "function",
      function: { name: "bash", arguments: JSON.stringify({ command: content.bash }) },
    };
    return `${chunk({ role: "assistant", tool_calls: [call] }, null)}${chunk({}, "tool_calls")}data: [DONE]\n\n`;
  }
  return `${chunk({ role: "assistant", content: content.text }, null)}${chunk({}, "stop")}data: [DONE]\n\n`;
}

const pidFile = () => path.join(dir, "agent.pid");
const counterFile = () => path.join(dir, "ran.txt");

/**
 * An interactive run whose bash call (it counts itself, then sleeps) is killed mid-call: SIGKILL
 * of the agent process (the command's parent), as a crash would. Resolves once the terminal ended.
 */
async function killMidTool(): Promise<void> {
  server.reply(sseReply(chat({ bash: `echo ran >> ${counterFile()}; echo $PPID $$ > ${pidFile()}; sleep 60` })));
  const first = terminal([]);
  await first.waitFor(PROMPT, WAIT);
  first.type(`sleep a while${KEY.enter}`);
  await until(
    () => /^\d+ \d+\n$/.test(readText(pidFile())),
    () => `the terminal showed:\n${first.text()}`,
    WAIT,
  );
  const [agentPid, shellPid] = readText(pidFile()).trim().split(" ").map(Number) as [number, number];
  process.kill(agentPid, "SIGKILL");
  // the orphaned command would keep the terminal open until its sleep ends
  strays.push(-shellPid, shellPid);
  for (const pid of strays) killQuietly(pid);
  await first.exit;
  expect(roles(await sessionMessages())).toEqual(["user", "assistant"]);
  expect(server.requests).toHaveLength(1);
}

const FOUND =
  "note: the session's last run was killed mid-way: bash (call_sleep): interrupted, may or may not have taken effect";

describe("interactive recovery of a killed run, in a pseudo-terminal", () => {
  it("--continue: told what the killed run left, asked (Ctrl-C leaves it as it is); y recovers and the run goes on before the prompt line", async () => {
    await killMidTool();
    server.reply(sseReply(chat({ text: "Resumed." }))).reply(sseReply(chat({ text: "Done." })));
    // Ctrl-C at the question leaves, recovering nothing: the next start asks again
    const left = terminal(["--continue"]);
    await left.waitFor(RECOVERY_QUESTION.trimEnd(), WAIT);
    left.type(KEY.ctrlC);
    await left.waitFor("(exit: the killed run is left as it is; --continue asks again)", WAIT);
    expect(await left.exit).toBe(130);
    expect(roles(await sessionMessages())).toEqual(["user", "assistant"]);
    const t = terminal(["--continue"]);
    await t.waitFor(FOUND, WAIT);
    await t.waitFor(RECOVERY_QUESTION.trimEnd(), WAIT);
    // asked, not yet recovered: nothing written, no model called
    expect(roles(await sessionMessages())).toEqual(["user", "assistant"]);
    expect(server.requests).toHaveLength(1);
    t.type(`y${KEY.enter}`);
    await t.waitFor(`${FOUND}; the run goes on`, WAIT);
    await t.waitFor("earlier in this session (3 messages):", WAIT);
    await t.waitFor("going on with the interrupted run (Ctrl-C stops it)", WAIT);
    const beforePrompt = await t.waitFor("Resumed.", WAIT);
    // the run went on before the prompt line was shown
    expect(beforePrompt.slice(beforePrompt.lastIndexOf("going on with the interrupted run"))).not.toContain(PROMPT);
    await t.waitFor(PROMPT, WAIT);
    t.type(`thanks${KEY.enter}`);
    await t.waitFor("Done.", WAIT);
    await t.waitFor(PROMPT, WAIT);
    t.type(KEY.ctrlD);
    expect(await t.exit).toBe(0);

    const resumed = sent(1);
    expect(resumed.map((m: { role: string }) => m.role)).toEqual(["system", "user", "assistant", "tool"]);
    expect(resumed[3]).toMatchObject({ tool_call_id: "call_sleep" });
    expect(findPairingProblem((await sessionMessages()).slice(0, 4))).toBe(undefined);
    const saved = await sessionMessages();
    expect(roles(saved)).toEqual(["user", "assistant", "toolResult", "assistant", "user", "assistant"]);
    expect(saved[2]).toMatchObject({ toolCallId: "call_sleep", isError: true });
    expect(textOf(saved[2]!)).toBe(uncertainText("bash", "Its command is no longer running."));
    expect(readText(counterFile())).toBe("ran\n"); // bash is not safe to repeat: it never ran again
  }, 300_000);

  it("--continue: n records the killed run as it stands (the interrupted call's error result), runs nothing, and the prompt waits", async () => {
    await killMidTool();
    server.reply(sseReply(chat({ text: "Checked." })));
    const t = terminal(["--continue"]);
    await t.waitFor(FOUND, WAIT);
    await t.waitFor(RECOVERY_QUESTION.trimEnd(), WAIT);
    t.type(`maybe${KEY.enter}`);
    await t.waitFor("answer y (resume the run) or n (record it as it stands)", WAIT);
    await t.waitFor(RECOVERY_QUESTION.trimEnd(), WAIT);
    t.type(`n${KEY.enter}`);
    await t.waitFor(`${FOUND}; recorded as it stands, nothing ran again; your next message goes on from there`, WAIT);
    await t.waitFor("earlier in this session (3 messages):", WAIT);
    const shown = await t.waitFor(PROMPT, WAIT);
    expect(shown).not.toContain("going on with the interrupted run");
    // recorded, and nothing re-run: no model call, the command ran once
    const saved = await sessionMessages();
    expect(roles(saved)).toEqual(["user", "assistant", "toolResult"]);
    expect(textOf(saved[2]!)).toBe(uncertainText("bash", "Its command is no longer running."));
    expect(server.requests).toHaveLength(1);
    expect(readText(counterFile())).toBe("ran\n");
    t.type(`what happened?${KEY.enter}`);
    await t.waitFor("Checked.", WAIT);
    await t.waitFor(PROMPT, WAIT);
    t.type(KEY.ctrlD);
    expect(await t.exit).toBe(0);
    expect(sent(1).map((m: { role: string }) => m.role)).toEqual(["system", "user", "assistant", "tool", "user"]);
    expect(roles(await sessionMessages())).toEqual(["user", "assistant", "toolResult", "user", "assistant"]);
  }, 300_000);

  it("--continue --no-recover: no question; recorded as it stands, not continued", async () => {
    await killMidTool();
    const t = terminal(["--continue", "--no-recover"]);
    await t.waitFor(`${FOUND}; not continued (--no-recover)`, WAIT);
    const shown = await t.waitFor(PROMPT, WAIT);
    expect(shown).not.toContain(RECOVERY_QUESTION.trimEnd());
    expect(roles(await sessionMessages())).toEqual(["user", "assistant", "toolResult"]);
    expect(server.requests).toHaveLength(1);
    t.type(KEY.ctrlD);
    expect(await t.exit).toBe(0);
  }, 300_000);

  it("/resume ID inside a conversation: told, asked; y recovers and the run goes on", async () => {
    await killMidTool();
    const [killed] = await sessionFiles();
    const id = JSON.parse(readFileSync(killed!, "utf8").split("\n")[0]!).id as string;
    server.reply(sseReply(chat({ text: "Resumed." })));
    const t = terminal([]);
    await t.waitFor(PROMPT, WAIT);
    t.type(`/resume ${id.slice(0, 8)}${KEY.enter}`);
    await t.waitFor(FOUND, WAIT);
    await t.waitFor(RECOVERY_QUESTION.trimEnd(), WAIT);
    expect(server.requests).toHaveLength(1);
    t.type(`y${KEY.enter}`);
    await t.waitFor(`${FOUND}; the run goes on`, WAIT);
    await t.waitFor(`resumed session ${id} (3 messages):`, WAIT);
    await t.waitFor("going on with the interrupted run (Ctrl-C stops it)", WAIT);
    await t.waitFor("Resumed.", WAIT);
    await t.waitFor(PROMPT, WAIT);
    t.type(KEY.ctrlD);
    expect(await t.exit).toBe(0);
    const saved = messagesIn(killed!);
    expect(roles(saved)).toEqual(["user", "assistant", "toolResult", "assistant"]);
    expect(textOf(saved[2]!)).toBe(uncertainText("bash", "Its command is no longer running."));
    expect(readText(counterFile())).toBe("ran\n");
  }, 300_000);
});

const roles = (messages: readonly { role: string }[]) => messages.map((m) => m.role);

/** The messages the n-th request carried. */
function sent(n: number): any[] {
  return JSON.parse(server.requests[n]!.body).messages;
}

/** The session files of the workspace, oldest first (names start with the time). */
async function sessionFiles(): Promise<string[]> {
  const folder = path.join(sessions, folderKey(workspace));
  return (await readdir(folder))
    .filter((name) => name.endsWith(".jsonl"))
    .sort()
    .map((name) => path.join(folder, name));
}

/** The messages of the session file the killed run wrote (the oldest). */
async function sessionMessages(): Promise<Message[]> {
  const [file] = await sessionFiles();
  return messagesIn(file!);
}

function messagesIn(file: string): Message[] {
  return readFileSync(file, "utf8")
    .split("\n")
    .slice(1)
    .flatMap((line) => {
      try {
        return [JSON.parse(line)];
      } catch {
        return []; // a torn line
      }
    })
    .filter((entry) => entry.type === "message")
    .map((entry) => entry.message as Message);
}
