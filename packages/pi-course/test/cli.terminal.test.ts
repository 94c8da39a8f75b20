/**
 * `npm start` as a person uses it: the interactive mode in a real pseudo-terminal (support/
 * terminal.ts: util-linux `script`), against the scripted demo model and against local servers
 * on 127.0.0.1 replaying recorded streams (support/sse-server.ts); the print and json modes and
 * the Anthropic provider end to end through `npm start`.
 *
 * Every terminal runs with its own HOME, so sessions land in a temporary folder. Each test waits
 * for what the screen shows, never for a fixed time (up to 15 s per step: a start-up on a busy
 * machine can take several seconds; at a load average of 12 on 2 cores the tests took 3–13 s each).
 */
import { spawn } from "node:child_process";
import { appendFile, mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { HELP } from "../src/cli/args.js";
import { runMain } from "../src/cli/main.js";
import { DEMO_REPLY, DEMO_TASK } from "../src/cli/demo.js";
import { folderKey } from "../src/cli/sessions.js";
import { findPairingProblem } from "../src/cli/pairing.js";
import type { Message } from "../src/types.js";
import { SseServer, dripReply, modelsReply, sseReply, statusReply } from "./support/sse-server.js";
import { KEY, openTerminal, type PseudoTerminal } from "./support/terminal.js";
import { builtStart } from "./support/built-cli.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const packageDir = path.resolve(here, "..");

let home: string;
let workspace: string;
const terminals: PseudoTerminal[] = [];
const servers: SseServer[] = [];

beforeAll(async () => {
  home = await mkdtemp(path.join(tmpdir(), "pi-course-cli-home-"));
  workspace = await mkdtemp(path.join(tmpdir(), "pi-course-cli-work-"));
});
afterEach(async () => {
  for (const terminal of terminals.splice(0)) terminal.kill();
  for (const server of servers.splice(0)) await server.close();
});
afterAll(async () => {
  await rm(home, { recursive: true, force: true });
  await rm(workspace, { recursive: true, force: true });
});

/** The environment of every run: its own HOME, no key, no config of the person running the tests. */
function environment(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, TERM: "xterm-256color", ...extra };
  for (const name of [
    "NO_COLOR",
    "PI_COURSE_CONFIG",
    "PI_COURSE_BASE_URL",
    "PI_COURSE_MODEL",
    "PI_COURSE_PROVIDER",
    "PI_COURSE_SESSION_DIR",
  ]) {
    if (!(name in extra)) delete env[name];
  }
  return env;
}

/** `npm start -- args` on a terminal (tsx on the entry point, as the start script runs it, without npm's start-up). */
function terminal(args: string[], env: NodeJS.ProcessEnv = {}): PseudoTerminal {
  const opened = openTerminal([process.execPath, builtStart(), ...args], {
    cwd: workspace,
    env: environment({ INIT_CWD: workspace, ...env }),
  });
  terminals.push(opened);
  return opened;
}

/** `npm start -s -- args`, piped, through the real npm. */
function npmStart(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return piped("npm", ["start", "-s", "--", ...args], env);
}

/** The same without npm (tsx on the entry point, as the start script runs it): a second faster. */
function startPiped(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return piped(process.execPath, [builtStart(), ...args], env);
}

function piped(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: packageDir, env: environment(env), stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString("utf8")));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString("utf8")));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** A Chat Completions stream: text and/or one tool call, then the finish reason. */
function chat(
  content: { text?: string; bash?: string; id?: string },
  finish = content.bash ? "tool_calls" : "stop",
): string {
  const chunk = (delta: object, reason: string | null) =>
    `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "m", choices: [{ index: 0, delta, finish_reason: reason }] })}\n\n`;
  let body = "";
  if (content.text !== undefined) body += chunk({ role: "assistant", content: content.text }, null);
  if (content.bash !== undefined) {
    const call = {
      index: 0,
      id: content.id ?? "call_1",
      type: "function",
      function: { name: "bash", arguments: JSON.stringify({ command: content.bash }) },
    };
    body += chunk({ role: "assistant", tool_calls: [call] }, null);
  }
  return body + chunk({}, finish) + "data: [DONE]\n\n";
}

async function replayServer(): Promise<SseServer> {
  const server = await SseServer.start();
  servers.push(server);
  return server;
}

/** The messages the n-th request carried. */
function sent(server: SseServer, n: number): any[] {
  return JSON.parse(server.requests[n]!.body).messages;
}

/** The canonical messages of the only session file under HOME for `folder`. */
async function sessionMessages(folder: string): Promise<Message[]> {
  const dir = path.join(home, ".pi-course", "sessions", folderKey(folder));
  const [file] = (await readdir(dir)).sort().reverse();
  const text = await readFile(path.join(dir, file!), "utf8");
  const entries = text
    .split("\n")
    .slice(1)
    .flatMap((line) => {
      try {
        return [JSON.parse(line)];
      } catch {
        return []; // a torn line
      }
    });
  return entries.filter((entry) => entry.type === "message").map((entry) => entry.message);
}

const PROMPT = "› ";

/** `text` as a pattern that also matches it wrapped: any run of spaces may be a line break. */
function wrapped(text: string): RegExp {
  return new RegExp(text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replace(/ +/g, "\\s+"));
}

describe("interactive, on the scripted model", () => {
  it("Lab 13.3 · three prompts (the suggested demo task first), a steer (Enter) and a follow-up (Alt-Enter) during a tool call, up-arrow history, colour and wrapping", async () => {
    const t = terminal([]);
    await t.waitFor(`${PROMPT}${DEMO_TASK}`);
    t.type(KEY.enter);
    await t.waitFor("ok: Hello, pi!");
    await t.waitFor(PROMPT);
    t.type(`hello${KEY.enter}`);
    await t.waitFor('You said: "hello".');
    await t.waitFor(PROMPT);
    t.type(`run: sleep 2; echo slept${KEY.enter}`);
    await t.waitFor("⚙ bash sleep 2; echo slept");
    t.type(`/compact${KEY.enter}`);
    await t.waitFor(wrapped("/compact waits until the run has ended (Ctrl-C stops it); /later TEXT queues a message"));
    t.type(`steer now${KEY.enter}`);
    await t.waitFor("↳ steering: steer now (after the current tool batch)");
    t.type(`later please${KEY.altEnter}`);
    await t.waitFor("↳ queued for later: later please");
    await t.waitFor("✓ bash");
    await t.waitFor('You said: "steer now".');
    await t.waitFor('You said: "later please".');
    await t.waitFor(PROMPT);
    // Up recalls the last line typed (the steer), then the ones before.
    t.type(KEY.up);
    await t.waitFor("steer now");
    t.type(KEY.up);
    await t.waitFor("/compact");
    t.type(KEY.up);
    await t.waitFor("run: sleep 2; echo slept");
    t.type(`${KEY.ctrlU}/compact${KEY.enter}`);
    await t.waitFor(
      /nothing\s+compacted:\s+the\s+\d+\s+messages\s+that\s+could\s+be\s+cut\s+hold\s+\d+\s+tokens,\s+within\s+keepRecentTokens\s+\(2000\)\./,
    );
    await t.waitFor(PROMPT);
    t.type(KEY.ctrlD);
    expect(await t.exit).toBe(0);
    // Colour on a terminal; what the agent prints is wrapped to the 80 columns (the typed lines
    // and the session's path are left to the terminal).
    expect(t.raw()).toMatch(/\u001b\[32m✓\u001b\[0m/);
    const printed = t
      .text()
      .split("\n")
      .filter((line) => !line.includes(PROMPT) && !line.startsWith("session:"));
    expect(printed.filter((line) => line.length > 80)).toEqual([]);
    const reply = `You said: "hello". ${DEMO_REPLY}`;
    const at = printed.findIndex((line) => line.startsWith('You said: "hello".'));
    expect(
      printed
        .slice(at, at + 3)
        .map((line) => line.trimEnd())
        .join(" "),
    ).toBe(reply);
    const messages = await sessionMessages(workspace);
    const said = messages.map(
      (m) => `${m.role}${m.role === "user" ? `:${(m.content[0] as { text: string }).text}` : ""}`,
    );
    expect(said).toEqual([
      `user:${DEMO_TASK}`,
      "assistant",
      "toolResult",
      "assistant",
      "toolResult",
      "assistant",
      "toolResult",
      "assistant",
      "user:hello",
      "assistant",
      "user:run: sleep 2; echo slept",
      "assistant",
      "toolResult",
      // The steer lands after the tool batch, before the next model call; the follow-up once
      // the agent would stop.
      "user:steer now",
      "assistant",
      "user:later please",
      "assistant",
    ]);
    expect(findPairingProblem(messages)).toBe(undefined);
  }, 45_000);

  it("Lab 13.3 · --continue after a restart shows the earlier transcript; a torn session file is reported and the session still resumes (no colour with NO_COLOR)", async () => {
    const dir = path.join(home, ".pi-course", "sessions", folderKey(workspace));
    const [file] = (await readdir(dir)).sort().reverse();
    // The torn line is the file's next line (how many lines a run writes depends on the chapters
    // built: chapter 19 journals each tool call beside its messages).
    const torn = (await readFile(path.join(dir, file!), "utf8")).split("\n").length;
    await appendFile(path.join(dir, file!), '{"type":"message","id":"to');
    const t = terminal(["--continue"], { NO_COLOR: "1" });
    await t.waitFor(
      `note: the session file ends in a torn line (26 bytes on line ${torn}, a crash mid-write?); it is skipped, and kept in the file`,
    );
    await t.waitFor("earlier in this session (17 messages):");
    await t.waitFor("› hello");
    await t.waitFor("› steer now");
    await t.waitFor(PROMPT);
    t.type(`and now?${KEY.enter}`);
    await t.waitFor('You said: "and now?".');
    await t.waitFor(PROMPT);
    t.type(KEY.ctrlD);
    expect(await t.exit).toBe(0);
    expect(t.raw()).not.toMatch(/\u001b\[\d+(;\d+)*m/);
    const messages = await sessionMessages(workspace);
    expect(messages.slice(-2).map((m) => m.role)).toEqual(["user", "assistant"]);
    expect(messages).toHaveLength(19);
  }, 45_000);
});

describe("interactive, against a replay server", () => {
  /** The interrupted conversation of the Ctrl-C test, resumed by the next one. */
  let interrupted: { args: string[]; server: SseServer; id: string } | undefined;

  it("Lab 13.3 · three prompts and a steer during a tool call: the steer reaches the next request after the tool result", async () => {
    const server = await replayServer();
    server
      .reply(sseReply(chat({ bash: "sleep 1; echo built", id: "call_build" })))
      .reply(sseReply(chat({ text: "Built, and noted: no tests." })))
      .reply(sseReply(chat({ text: "Second answer." })))
      // /model other-model (a name no catalogue knows) asks the server's model list first
      .reply(modelsReply(["replay", "other-model"]))
      .reply(sseReply(chat({ text: "Third answer." })));
    const t = terminal([
      "--base-url",
      server.baseUrl,
      "--model",
      "replay",
      "--no-api-key",
      "--cwd",
      workspace,
      "--session-dir",
      path.join(home, "replay"),
    ]);
    await t.waitFor(PROMPT);
    t.type(`build it${KEY.enter}`);
    await t.waitFor("⚙ bash sleep 1; echo built");
    t.type(`skip the tests${KEY.enter}`);
    await t.waitFor("↳ steering: skip the tests");
    await t.waitFor("Built, and noted: no tests.");
    await t.waitFor(PROMPT);
    t.type(`second${KEY.enter}`);
    await t.waitFor("Second answer.");
    await t.waitFor(PROMPT);
    t.type(`/help${KEY.enter}`);
    await t.waitFor("/resume ID");
    await t.waitFor(PROMPT);
    t.type(`/model other-model${KEY.enter}`);
    await t.waitFor(/model: .+ · other-model/);
    await t.waitFor(PROMPT);
    t.type(`third${KEY.enter}`);
    await t.waitFor("Third answer.");
    await t.waitFor(PROMPT);
    t.type(`/sessions${KEY.enter}`);
    await t.waitFor(/\d+ messages · build it \(this one\)/);
    await t.waitFor(PROMPT);
    t.type(`/new${KEY.enter}`);
    await t.waitFor(/new session [0-9a-f-]{36}/);
    await t.waitFor(PROMPT);
    t.type(`/sessions${KEY.enter}`);
    await t.waitFor(/0 messages · \(empty\) \(this one\)/);
    await t.waitFor(PROMPT);
    t.type(`/exit${KEY.enter}`);
    expect(await t.exit).toBe(0);
    expect(server.requests.map((r) => `${r.method} ${r.url}`)).toEqual([
      "POST /v1/chat/completions",
      "POST /v1/chat/completions",
      "POST /v1/chat/completions",
      "GET /v1/models",
      "POST /v1/chat/completions",
    ]);
    expect(sent(server, 1).map((m) => m.role)).toEqual(["system", "user", "assistant", "tool", "user"]);
    expect(sent(server, 1)[4].content).toContain("skip the tests");
    const posted = server.requests.filter((r) => r.method === "POST");
    expect(posted.map((r) => JSON.parse(r.body).model)).toEqual(["replay", "replay", "replay", "other-model"]);
    expect(sent(server, 4).map((m) => m.role)).toEqual([
      "system",
      "user",
      "assistant",
      "tool",
      "user",
      "assistant",
      "user",
      "assistant",
      "user",
    ]);
  }, 45_000);

  it("Lab 13.3 · Ctrl-C mid-stream stops the run: no further model call, every call answered; a second Ctrl-C exits with 130", async () => {
    const server = await SseServer.start(); // closed by the next test, which restarts against it
    const words = Array.from({ length: 400 }, (_, i) => `word${i} `);
    const textChunk = (text: string) =>
      `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "m", choices: [{ index: 0, delta: { content: text }, finish_reason: null }] })}\n\n`;
    server
      .reply(sseReply(chat({ bash: "echo first", id: "call_first" })))
      .reply(
        dripReply(
          textChunk("Here is a long story: "),
          (i) => (i < words.length ? textChunk(words[i]!) : undefined),
          20,
        ),
      );
    const sessions = path.join(home, "interrupt");
    const args = [
      "--base-url",
      server.baseUrl,
      "--model",
      "replay",
      "--no-api-key",
      "--cwd",
      workspace,
      "--session-dir",
      sessions,
    ];
    const t = terminal(args);
    await t.waitFor(PROMPT);
    t.type(`tell me a story${KEY.enter}`);
    await t.waitFor("word5 ");
    t.type(KEY.ctrlC);
    await t.waitFor("(interrupted: the run was stopped)");
    await t.waitFor(PROMPT);
    // A key in between: this Ctrl-C only clears the line; the next one, the second in a row, leaves.
    t.type("x");
    t.type(KEY.ctrlC);
    await t.waitFor("(Ctrl-C again to exit, or /exit)");
    t.type(KEY.ctrlC);
    expect(await t.exit).toBe(130);
    expect(server.requests).toHaveLength(2);
    const dir = path.join(sessions, folderKey(workspace));
    const [file] = await readdir(dir);
    const lines = (await readFile(path.join(dir, file!), "utf8"))
      .trimEnd()
      .split("\n")
      .slice(1)
      .map((l) => JSON.parse(l))
      .filter((entry) => entry.type === "message")
      .map((entry) => entry.message);
    expect(lines.map((m: Message) => m.role)).toEqual(["user", "assistant", "toolResult", "assistant"]);
    expect(lines[3].stopReason).toBe("aborted");
    expect(findPairingProblem(lines)).toBe(undefined);
    interrupted = { args, server, id: JSON.parse((await readFile(path.join(dir, file!), "utf8")).split("\n")[0]!).id };
  }, 45_000);

  it("Lab 13.3 · /resume after a restart shows the earlier transcript, the interrupted answer included, and calls no model", async () => {
    expect(interrupted).toBeDefined();
    const { args, server, id } = interrupted!;
    servers.push(server);
    const again = terminal(args);
    await again.waitFor(PROMPT);
    again.type(`/resume ${id.slice(0, 8)}${KEY.enter}`);
    await again.waitFor(`resumed session ${id} (4 messages):`);
    await again.waitFor("› tell me a story");
    await again.waitFor("⚙ bash echo first");
    await again.waitFor("Here is a long story: word0");
    await again.waitFor("(interrupted)");
    await again.waitFor(PROMPT);
    again.type(KEY.ctrlD);
    expect(await again.exit).toBe(0);
    expect(server.requests).toHaveLength(2);
  }, 45_000);

  it("text typed while a run goes on stays out of the answer: the status line shows it, the prompt line gets it back, Enter sends it", async () => {
    const server = await replayServer();
    const words = Array.from({ length: 60 }, (_, i) => `word${i} `);
    const chunk = (delta: object, reason: string | null = null) =>
      `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "m", choices: [{ index: 0, delta, finish_reason: reason }] })}\n\n`;
    const story = (i: number) =>
      i < words.length
        ? chunk({ content: words[i] })
        : i === words.length
          ? `${chunk({}, "stop")}data: [DONE]\n\n`
          : undefined;
    server
      .reply(sseReply(chat({ bash: "sleep 2", id: "call_sleep" })))
      .reply(dripReply(chunk({ content: "Here is a story: " }), story, 25))
      .reply(sseReply(chat({ text: "You typed it." })));
    const t = terminal(["--base-url", server.baseUrl, "--model", "replay", "--no-api-key", "--cwd", workspace]);
    await t.waitFor(PROMPT);
    t.type(`tell me a story${KEY.enter}`);
    await t.waitFor("⚙ bash sleep 2");
    t.type("typed-meanwhile");
    // While the tool runs, the status line shows the elapsed time and the line being typed.
    await t.waitFor(/… bash [\d.]+ m?s {2}› typed-meanwhile/);
    await t.waitFor("word5 ");
    t.type("!");
    const answer = await t.waitFor("word59");
    // The answer reads as it streamed: the typed text is nowhere in it.
    const streamed = answer.slice(answer.indexOf("Here is a story:"));
    expect(streamed).not.toContain("typed-meanwhile");
    expect(streamed).not.toContain("!");
    expect(streamed.replace(/\s+/g, " ")).toContain(words.join("").trim());
    // Once the run has ended, the line comes back on the prompt, and Enter sends it.
    await t.waitFor(`${PROMPT}typed-meanwhile!`);
    t.type(KEY.enter);
    await t.waitFor("You typed it.");
    expect(sent(server, 2).at(-1)).toEqual({ role: "user", content: "typed-meanwhile!" });
    t.type(KEY.ctrlD);
    expect(await t.exit).toBe(0);
  }, 45_000);
});

describe("print and json modes, and Anthropic, through npm start", () => {
  it("Lab 13.3 · --print prints only the answer (exit 1 and nothing on stdout for an error turn); --json prints only JSON", async () => {
    const [answers, json, refuses] = await Promise.all([replayServer(), replayServer(), replayServer()]);
    answers.reply(sseReply(chat({ text: "The answer is 42." })));
    json.reply(sseReply(chat({ text: "Also JSON." })));
    refuses.reply(
      statusReply(
        400,
        JSON.stringify({ error: { message: "the replay refuses this one", type: "invalid_request_error" } }),
      ),
    );
    const options = (server: SseServer) => [
      "--base-url",
      server.baseUrl,
      "--model",
      "replay",
      "--no-api-key",
      "--cwd",
      workspace,
      "--no-session",
    ];
    const [printed, events, failed] = await Promise.all([
      npmStart([...options(answers), "--print", "what is it?"]),
      npmStart([...options(json), "--json", "again"]),
      startPiped([...options(refuses), "--print", "and now?"]),
    ]);
    expect([printed.code, printed.stdout]).toEqual([0, "The answer is 42.\n"]);
    expect(events.code).toBe(0);
    const types = events.stdout
      .trimEnd()
      .split("\n")
      .map((line) => (JSON.parse(line) as { type: string }).type);
    expect([types[0], types.at(-1), types.filter((type) => type === "message_end").length]).toEqual([
      "agent_start",
      "agent_end",
      2,
    ]);
    expect(failed.code).toBe(1);
    expect(failed.stdout).toBe("");
    expect(failed.stderr).toMatch(/error: .*400.*the replay refuses this one/);
  }, 45_000);

  it("when the agent process dies mid-tool on a terminal, the launcher's error starts a line of its own (not glued to the status line)", async () => {
    const server = await replayServer();
    const pidFile = path.join(home, `agent-${Date.now()}.pid`);
    server.reply(sseReply(chat({ bash: `echo $PPID $$ > ${pidFile}; sleep 30`, id: "call_sleep" })));
    const t = terminal([
      "--base-url",
      server.baseUrl,
      "--model",
      "replay",
      "--no-api-key",
      "--cwd",
      workspace,
      "--no-session",
    ]);
    await t.waitFor(PROMPT);
    t.type(`sleep${KEY.enter}`);
    await t.waitFor("⚙ bash");
    let pids = "";
    for (let i = 0; i < 600 && !/^\d+ \d+\n$/.test(pids); i++) {
      pids = await readFile(pidFile, "utf8").catch(() => "");
      if (!/^\d+ \d+\n$/.test(pids)) await new Promise((resolve) => setTimeout(resolve, 25));
    }
    const [agentPid, shellPid] = pids.trim().split(" ").map(Number) as [number, number];
    await t.waitFor("… bash"); // the elapsed-time status line, left open on the terminal
    process.kill(agentPid, "SIGKILL");
    for (const pid of [-shellPid, shellPid]) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // gone with its agent
      }
    }
    await t.waitFor("error: the agent process ended without an exit code");
    expect(t.text()).toMatch(/\n\s*error: the agent process ended without an exit code/);
    expect(t.text()).not.toMatch(/\S[ \t]*error: the agent process ended/);
    expect(await t.exit).toBe(1);
  }, 45_000);

  it("started by npm in the repository, a usage error names npm start -- --help (the bin names pi-course: package.test.ts)", async () => {
    const misused = await npmStart(["--verbose"]);
    expect([misused.code, misused.stderr]).toEqual([
      2,
      "error: unknown option --verbose.\nRun `npm start -- --help` for the options.\n",
    ]);
  }, 45_000);

  it("Lab 13.3 · --provider anthropic talks to a Messages API replay, with the key from ANTHROPIC_API_KEY; the offline demo prints its answer", async () => {
    const server = await replayServer();
    const recorded = await readFile(path.join(here, "fixtures", "anthropic", "anthropic-text.sse"), "utf8");
    server.reply(sseReply(recorded));
    const [anthropic, demo] = await Promise.all([
      npmStart(
        [
          "--provider",
          "anthropic",
          "--base-url",
          server.baseUrl.replace(/\/v1$/, ""),
          "--model",
          "claude-sonnet-4-5",
          "--cwd",
          workspace,
          "--no-session",
          "--print",
          "Name two",
        ],
        { ANTHROPIC_API_KEY: "sk-ant-replay" },
      ),
      startPiped(["--print", "--no-session"]),
    ]);
    expect(anthropic.stderr).toContain("claude-sonnet-4-5");
    expect([anthropic.code, anthropic.stdout]).toEqual([0, "- Captain\n- Scoop\n"]);
    expect(server.requests.map((r) => [r.url, r.headers["x-api-key"]])).toEqual([["/v1/messages", "sk-ant-replay"]]);
    expect(JSON.parse(server.requests[0]!.body)).toMatchObject({
      model: "claude-sonnet-4-5",
      stream: true,
      messages: [{ role: "user" }],
    });
    expect(demo.code).toBe(0);
    expect(demo.stdout).toBe(
      'Fixed: greeting.mjs now says "Hello, " instead of "Helo, ". `node check.mjs` prints:\nok: Hello, pi!\n',
    );
  }, 40_000);

  it("Lab 13.3 · --print writes the answer as it is when piped, and its control characters as text on a terminal", async () => {
    const server = await replayServer();
    const hostile = "clear\u001b[2Jdone";
    server.reply(sseReply(chat({ text: hostile }))).reply(sseReply(chat({ text: hostile })));
    const print = async (isTTY: boolean) => {
      let stdout = "";
      const code = await runMain(
        [
          "--base-url",
          server.baseUrl,
          "--model",
          "m",
          "--no-api-key",
          "--cwd",
          workspace,
          "--no-session",
          "--print",
          "go",
        ],
        {
          stdout: { isTTY, write: (text: string) => (stdout += text) },
          stderr: { write: () => true },
          env: { HOME: home },
        },
      );
      return [code, stdout];
    };
    expect(await print(false)).toEqual([0, `${hostile}\n`]);
    expect(await print(true)).toEqual([0, "clear\\u001b[2Jdone\n"]);
  });

  it("Lab 13.1 · --help lists the modes, the session flags and where each setting comes from", () => {
    for (const text of [
      "--print",
      "--interactive",
      "--provider",
      "--session-dir",
      "--continue",
      "--resume",
      "--no-session",
      "--config",
      "PI_COURSE_BASE_URL",
      "PI_COURSE_MODEL",
      "ANTHROPIC_API_KEY",
      "/later",
      "Alt-Enter",
      "~/.pi-course/sessions",
    ]) {
      expect(HELP).toContain(text);
    }
  });
});
