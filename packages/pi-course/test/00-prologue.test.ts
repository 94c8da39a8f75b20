/**
 * Chapter 00 (observe): the main job, end to end. Every test spawns the real command, the way a
 * newcomer runs it, and reads what it prints.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { HELP } from "../src/cli/args.js";
import { runMain } from "../src/cli/main.js";
import { LAUNCH_SECRET_PATTERN } from "../src/cli/launch.js";
import { findPairingProblem } from "../src/cli/pairing.js";
import { SECRET_NAME_PATTERN } from "../src/coding-tools/processes.js";
import { assistantMessage, toolResultMessage, userMessage } from "../src/messages.js";
import { closedPort, startChatReplayServer } from "./support/chat-replay-server.js";
import { builtStart } from "./support/built-cli.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const packageDir = path.resolve(here, "..");
/** Every run keeps a session file (chapter 13): here, not in the home folder of whoever runs the tests. */
const SESSIONS = mkdtempSync(path.join(tmpdir(), "pi-course-00-sessions-"));
afterAll(() => rmSync(SESSIONS, { recursive: true, force: true }));

interface Outcome {
  code: number | null;
  stdout: string;
  stderr: string;
}

function collect(command: string, args: string[], env: NodeJS.ProcessEnv, cwd = packageDir): Promise<Outcome> {
  return launch(command, args, env, { cwd }).outcome;
}

/**
 * Spawns a command and collects its output; `detached` gives it its own process group (as a
 * terminal gives a job), `input` is written to its stdin.
 */
function launch(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  options: { cwd?: string; detached?: boolean; input?: string } = {},
): { child: ChildProcess; outcome: Promise<Outcome> } {
  const child = spawn(command, args, {
    cwd: options.cwd ?? packageDir,
    env: { ...process.env, NO_COLOR: undefined, PI_COURSE_SESSION_DIR: SESSIONS, ...env },
    stdio: [options.input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
    detached: options.detached ?? false,
  });
  if (options.input !== undefined) child.stdin!.end(options.input);
  const outcome = new Promise<Outcome>((resolve, reject) => {
    let stdout = "";
    let stderr = "";
    child.stdout!.on("data", (data: Buffer) => (stdout += data.toString("utf8")));
    child.stderr!.on("data", (data: Buffer) => (stderr += data.toString("utf8")));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
  return { child, outcome };
}

/** Alive and not a zombie. */
function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

/** Live processes of a process group. */
function groupMembers(pgid: number): number[] {
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .filter((name) => {
      try {
        const stat = readFileSync(`/proc/${name}/stat`, "utf8");
        const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        return Number(fields[2]) === pgid && fields[0] !== "Z";
      } catch {
        return false;
      }
    })
    .map(Number);
}

async function until(check: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return check();
}

/** The replay of one bash call (`command`), then a final answer. */
function bashThenDone(command: string): string[] {
  return [
    chatSse(
      [
        {
          role: "assistant",
          tool_calls: [
            {
              index: 0,
              id: "call_sh",
              type: "function",
              function: { name: "bash", arguments: JSON.stringify({ command }) },
            },
          ],
        },
      ],
      "tool_calls",
    ),
    chatSse([{ role: "assistant", content: "done" }], "stop"),
  ];
}

/** The main job as `npm start -- …` runs it, without npm's and tsx's start-up cost (the sources compiled once). */
function cli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Outcome> {
  // What npm's start script of @pi/course sets, so usage lines name `npm start --` as they do there.
  return collect(process.execPath, [builtStart(), ...args], {
    npm_lifecycle_event: "start",
    npm_package_name: "@pi/course",
    ...env,
  });
}

/** A Chat Completions SSE body: one chunk per delta, then the finish reason and `[DONE]`. */
function chatSse(deltas: object[], finishReason: string): string {
  const chunk = (delta: object, finish: string | null) =>
    `data: ${JSON.stringify({ id: "chatcmpl-test", object: "chat.completion.chunk", created: 1, model: "m", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  return deltas.map((delta) => chunk(delta, null)).join("") + chunk({}, finishReason) + "data: [DONE]\n\n";
}

/** Event lines of the readable trace: the first word of each line that names an event. */
function traceTypes(stdout: string): string[] {
  return stdout
    .split("\n")
    .map((line) => /^\s*([a-z]+_[a-z_]+)\b/.exec(line)?.[1])
    .filter((type): type is string => type !== undefined);
}

/** Consecutive repeats collapsed: `message_update×5`. */
function runs(types: string[]): string[] {
  const out: string[] = [];
  let count = 0;
  types.forEach((type, i) => {
    count++;
    if (types[i + 1] !== type) {
      out.push(count === 1 ? type : `${type}×${count}`);
      count = 0;
    }
  });
  return out;
}

/** One tool-using turn as the trace shows it, after the assistant's streaming updates. */
const TOOL_TURN_TAIL = [
  "message_end",
  "tool_execution_start",
  "tool_execution_end",
  "message_start",
  "message_end",
  "turn_end",
];

async function removeDemoWorkspace(stdout: string): Promise<string> {
  const workspace = /^workspace: (.+)$/m.exec(stdout)?.[1];
  expect(workspace).toMatch(/pi-course-demo-/);
  const fixed = await readFile(path.join(workspace!, "greeting.mjs"), "utf8").catch(() => "");
  await rm(workspace!, { recursive: true, force: true });
  return fixed;
}

describe("Prologue · the offline demo", () => {
  it("Prologue · npm start runs one full agent run: read, edit, bash, answer, every event in order", async () => {
    const result = await collect("npm", ["start", "--silent"], {});
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).not.toContain("\u001b[");
    expect(result.stdout, "turn 2's edit failed (its oldText must be text the file holds)").toContain(
      "    tool_execution_end     edit call_edit_2 ✓ ok\n",
    );
    expect(runs(traceTypes(result.stdout))).toEqual([
      "agent_start",
      "turn_start",
      "message_start",
      "message_end",
      "message_start",
      "message_update×3",
      ...TOOL_TURN_TAIL,
      "turn_start",
      "message_start",
      "message_update×3",
      ...TOOL_TURN_TAIL,
      "turn_start",
      "message_start",
      "message_update×3",
      ...TOOL_TURN_TAIL,
      "turn_start",
      "message_start",
      "message_update",
      "message_end",
      "turn_end",
      "agent_end",
    ]);
    expect(result.stdout).toContain("    tool_execution_end     bash call_bash_3 ✓ ok\n        │ ok: Hello, pi!\n");
    expect(result.stdout).toContain(
      'answer:\nFixed: greeting.mjs now says "Hello, " instead of "Helo, ". `node check.mjs` prints:\nok: Hello, pi!\n',
    );
    expect(await removeDemoWorkspace(result.stdout)).toContain('return "Hello, " + name + "!";');
  }, 60_000);

  it("Prologue · --json prints every event as one JSON line, and the colour switch works", async () => {
    // The documented form, through the real npm: -s keeps npm's "> start" lines off stdout.
    expect(HELP).toContain("npm start -s -- --json");
    const [json, colored] = await Promise.all([collect("npm", ["start", "-s", "--", "--json"], {}), cli(["--color"])]);
    expect(json.code).toBe(0);
    const events = json.stdout
      .trimEnd()
      .split("\n")
      .map((line) => JSON.parse(line) as { type: string });
    const types = events.map((e) => e.type);
    expect(runs(types)).toEqual([
      "agent_start",
      "turn_start",
      "message_start",
      "message_end",
      "message_start",
      "message_update×9",
      ...TOOL_TURN_TAIL,
      "turn_start",
      "message_start",
      "message_update×19",
      ...TOOL_TURN_TAIL,
      "turn_start",
      "message_start",
      "message_update×7",
      ...TOOL_TURN_TAIL,
      "turn_start",
      "message_start",
      "message_update×13",
      "message_end",
      "turn_end",
      "agent_end",
    ]);
    const ends = events.filter((e): e is any => e.type === "tool_execution_end");
    expect(ends.map((e) => [e.toolName, e.isError])).toEqual([
      ["read", false],
      ["edit", false],
      ["bash", false],
    ]);
    expect(ends[2].result.content).toEqual([{ type: "text", text: "ok: Hello, pi!" }]);
    expect(events.at(-1)).toMatchObject({ type: "agent_end" });
    await removeDemoWorkspace(json.stderr);
    expect(colored.code).toBe(0);
    expect(colored.stdout).toContain("\u001b[35magent_start");
    await removeDemoWorkspace(colored.stdout);
  }, 60_000);

  it("Prologue · break it: with a tool result dropped, the pairing check stops the run", async () => {
    const result = await cli(["--drop-tool-result"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      "error: pairing check: tool call call_read_1 (read) has no result before the next model call.",
    );
    expect(runs(traceTypes(result.stdout)).slice(-6)).toEqual([
      "turn_end",
      "turn_start",
      "message_start",
      "message_end",
      "turn_end",
      "agent_end",
    ]);
    // The file was read but never edited: the run stopped before the second model turn.
    expect(await removeDemoWorkspace(result.stdout)).toContain('"Helo, "');
  }, 60_000);

  it("Prologue · on a terminal the trace is coloured, unless NO_COLOR is set", async () => {
    const runOnTerminal = async (env: NodeJS.ProcessEnv) => {
      let stdout = "";
      let stderr = "";
      const code = await runMain([], {
        stdout: { isTTY: true, write: (text: string) => (stdout += text) },
        stderr: { write: (text: string) => (stderr += text) },
        env: { PI_COURSE_SESSION_DIR: SESSIONS, ...env },
      });
      return { code, stdout, stderr };
    };
    const [terminal, noColor] = await Promise.all([runOnTerminal({}), runOnTerminal({ NO_COLOR: "1" })]);
    expect([terminal.code, terminal.stderr]).toEqual([0, ""]);
    expect(terminal.stdout).toContain("\u001b[35magent_start");
    expect(terminal.stdout).toContain("\u001b[32m✓ ok\u001b[0m");
    expect([noColor.code, noColor.stderr]).toEqual([0, ""]);
    expect(noColor.stdout).not.toContain("\u001b[");
    await removeDemoWorkspace(terminal.stdout);
    await removeDemoWorkspace(noColor.stdout);
  }, 60_000);

  it("Prologue · the pairing check names the first unanswered or unknown tool call", () => {
    const call = assistantMessage([{ type: "toolCall", id: "c1", name: "read", arguments: {} }], "toolUse");
    const answer = toolResultMessage({ toolCallId: "c1", toolName: "read", content: "ok" });
    expect(findPairingProblem([userMessage("hi"), call, answer])).toBe(undefined);
    expect(findPairingProblem([userMessage("hi"), call])).toBe(
      "tool call c1 (read) has no result before the next model call. Every tool call needs exactly one result with its id.",
    );
    // a call still unanswered when the next message comes is reported there, even if its result comes later
    expect(findPairingProblem([userMessage("hi"), call, userMessage("more"), answer])).toBe(
      "tool call c1 (read) has no result before the next model call. Every tool call needs exactly one result with its id.",
    );
    expect(findPairingProblem([userMessage("hi"), call, answer, answer])).toBe(
      "the tool result for c1 (read) answers no pending tool call.",
    );
  });
});

describe("Prologue · against a real server", () => {
  it("Prologue · runs the coding tools in --cwd against a local OpenAI-compatible server replaying a recorded conversation", async () => {
    const fixtures = path.join(here, "fixtures");
    const bodies = await Promise.all(
      ["prologue-replay-turn-1.sse", "prologue-replay-turn-2.sse"].map((name) =>
        readFile(path.join(fixtures, name), "utf8"),
      ),
    );
    const server = await startChatReplayServer(bodies);
    const workspace = await mkdtemp(path.join(tmpdir(), "pi-course-00-"));
    try {
      await writeFile(path.join(workspace, "notes.txt"), "remember the milk\n");
      const result = await cli(
        [
          "--base-url",
          server.baseUrl,
          "--model",
          "replay-model",
          "--api-key-env",
          "REPLAY_KEY",
          "--cwd",
          workspace,
          "--json",
          "What",
          "do",
          "my",
          "notes",
          "say?",
        ],
        { REPLAY_KEY: "sk-replay-123" },
      );
      expect(result.stderr).toContain(`workspace: ${workspace}`);
      expect(result.code).toBe(0);
      const events = result.stdout
        .trimEnd()
        .split("\n")
        .map((line) => JSON.parse(line) as any);
      expect(runs(events.map((e) => e.type))).toEqual([
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "message_start",
        "message_update×16",
        "message_end",
        // bash is a sequential tool, so the batch runs one call at a time, result by result.
        "tool_execution_start",
        "tool_execution_end",
        "message_start",
        "message_end",
        "tool_execution_start",
        "tool_execution_end",
        "message_start",
        "message_end",
        "turn_end",
        "turn_start",
        "message_start",
        "message_update×8",
        "message_end",
        "turn_end",
        "agent_end",
      ]);
      const toolEnds = events.filter((e) => e.type === "tool_execution_end");
      expect(toolEnds.map((e) => [e.toolName, e.toolCallId, e.isError])).toEqual([
        ["read", "call_4kPq8ZtLwV3n", false],
        ["bash", "call_Xq2mB7rT0cYe", false],
      ]);
      expect(toolEnds[0].result.content).toEqual([{ type: "text", text: "1\tremember the milk" }]);
      // The commands the model runs never see the API key.
      expect(toolEnds[1].result.content).toEqual([{ type: "text", text: "key=\nnotes.txt" }]);
      const final = events.filter((e) => e.type === "message_end").at(-1).message;
      expect(final).toMatchObject({
        role: "assistant",
        stopReason: "stop",
        model: "replay-model",
        content: [{ type: "text", text: "notes.txt says: remember the milk." }],
        usage: { input: 871, output: 9, totalTokens: 880 },
      });
      // What the server saw: the key, the tools, then the tool result sent back with its id.
      expect(server.requests.map((r) => [r.method, r.path, r.authorization])).toEqual([
        ["POST", "/v1/chat/completions", "Bearer sk-replay-123"],
        ["POST", "/v1/chat/completions", "Bearer sk-replay-123"],
      ]);
      const [first, second] = server.requests.map((r) => r.body);
      expect(first.model).toBe("replay-model");
      expect(first.stream).toBe(true);
      expect(first.tools.map((t: any) => t.function.name)).toEqual(["read", "write", "edit", "ls", "bash"]);
      expect(first.messages.map((m: any) => m.role)).toEqual(["system", "user"]);
      expect(second.messages.map((m: any) => m.role)).toEqual(["system", "user", "assistant", "tool", "tool"]);
      expect(second.messages[2].tool_calls[0]).toMatchObject({
        id: "call_4kPq8ZtLwV3n",
        function: { name: "read", arguments: '{"path":"notes.txt"}' },
      });
      expect(second.messages[3]).toMatchObject({ role: "tool", tool_call_id: "call_4kPq8ZtLwV3n" });
      expect(JSON.stringify(second.messages[3].content)).toContain("remember the milk");
      expect(second.messages[4]).toMatchObject({ role: "tool", tool_call_id: "call_Xq2mB7rT0cYe" });
      expect(JSON.stringify(second).includes("sk-replay-123")).toBe(false);
    } finally {
      await server.close();
      await rm(workspace, { recursive: true, force: true });
    }
  }, 60_000);

  it("Prologue · commands never see an API key: not with --no-api-key, not with --api-key-env OTHER while OPENAI_API_KEY is exported", async () => {
    const command = 'echo "openai=$OPENAI_API_KEY llm=$MY_LLM gh=$GITHUB_TOKEN plain=$PI_COURSE_PLAIN"';
    const bodies = [
      chatSse(
        [
          {
            role: "assistant",
            tool_calls: [
              {
                index: 0,
                id: "call_env",
                type: "function",
                function: { name: "bash", arguments: JSON.stringify({ command }) },
              },
            ],
          },
        ],
        "tool_calls",
      ),
      chatSse([{ role: "assistant", content: "done" }], "stop"),
    ];
    const [noKeyServer, otherServer] = await Promise.all([
      startChatReplayServer(bodies),
      startChatReplayServer(bodies),
    ]);
    const workspace = await mkdtemp(path.join(tmpdir(), "pi-course-00-"));
    try {
      const exported = { OPENAI_API_KEY: "sk-exported-openai", GITHUB_TOKEN: "ghp-exported", PI_COURSE_PLAIN: "plain" };
      const common = ["--model", "m", "--cwd", workspace, "--json", "show the environment"];
      const [noKey, other] = await Promise.all([
        cli(["--base-url", noKeyServer.baseUrl, "--no-api-key", ...common], exported),
        cli(["--base-url", otherServer.baseUrl, "--api-key-env", "MY_LLM", ...common], {
          ...exported,
          MY_LLM: "sk-my-llm",
        }),
      ]);
      const bashOutput = (outcome: Outcome) => {
        expect(outcome.code).toBe(0);
        const events = outcome.stdout
          .trimEnd()
          .split("\n")
          .map((line) => JSON.parse(line) as any);
        return events.filter((e) => e.type === "tool_execution_end").map((e) => e.result.content);
      };
      expect(bashOutput(noKey)).toEqual([[{ type: "text", text: "openai= llm= gh= plain=plain" }]]);
      expect(bashOutput(other)).toEqual([[{ type: "text", text: "openai= llm= gh= plain=plain" }]]);
      expect(noKeyServer.requests.map((r) => r.authorization)).toEqual([undefined, undefined]);
      expect(otherServer.requests.map((r) => r.authorization)).toEqual(["Bearer sk-my-llm", "Bearer sk-my-llm"]);
    } finally {
      await Promise.all([noKeyServer.close(), otherServer.close()]);
      await rm(workspace, { recursive: true, force: true });
    }
  }, 60_000);

  it("Prologue · --json stays linear in the answer's size: message_update lines carry the delta, not the partial message", async () => {
    const workspace = await mkdtemp(path.join(tmpdir(), "pi-course-00-"));
    const jsonOf = async (pieces: number) => {
      const piece = "0123456789abcdefghijklmnopqrstuv";
      const server = await startChatReplayServer([
        chatSse(
          [{ role: "assistant", content: "" }, ...Array.from({ length: pieces }, () => ({ content: piece }))],
          "stop",
        ),
      ]);
      let stdout = "";
      try {
        const code = await runMain(
          ["--base-url", server.baseUrl, "--model", "m", "--no-api-key", "--cwd", workspace, "--json", "talk"],
          {
            stdout: { write: (text: string) => (stdout += text) },
            stderr: { write: () => true },
            env: { PI_COURSE_SESSION_DIR: SESSIONS },
          },
        );
        expect(code).toBe(0);
      } finally {
        await server.close();
      }
      return stdout;
    };
    try {
      const [small, large] = await Promise.all([jsonOf(200), jsonOf(400)]);
      const updates = large
        .trimEnd()
        .split("\n")
        .map((line) => JSON.parse(line))
        .filter((e) => e.type === "message_update");
      expect(updates[1]).toEqual({
        type: "message_update",
        event: { type: "text_delta", contentIndex: 0, delta: "0123456789abcdefghijklmnopqrstuv" },
      });
      // Twice the answer, about twice the output (a quadratic shape would give about four times).
      expect(large.length / small.length).toBeLessThan(2.5);
      expect(large.length).toBeLessThan(400 * 32 * 12);
    } finally {
      await rm(workspace, { recursive: true, force: true });
    }
  }, 30_000);

  it("Prologue · clear errors: malformed URL, refused connection, missing key, missing workspace, unknown option", async () => {
    const port = await closedPort();
    const workspace = await mkdtemp(path.join(tmpdir(), "pi-course-00-"));
    try {
      const base = ["--model", "m", "--cwd", workspace, "hello"];
      const [malformed, refused, noKey, noWorkspace, unknown] = await Promise.all([
        cli(["--base-url", "localhost:8080", ...base], { OPENAI_API_KEY: "k" }),
        cli(["--base-url", `http://127.0.0.1:${port}/v1`, ...base], { OPENAI_API_KEY: "k" }),
        cli(["--base-url", "http://127.0.0.1:1/v1", ...base], { OPENAI_API_KEY: undefined }),
        cli(["--base-url", "http://127.0.0.1:1/v1", "--model", "m", "--cwd", path.join(workspace, "nope"), "hi"], {
          OPENAI_API_KEY: "k",
        }),
        cli(["--verbose"]),
      ]);
      expect(malformed.code).toBe(2);
      expect(malformed.stderr).toMatch(/--base-url must be http:\/\/ or https:\/\/|is not a URL/);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain("ECONNREFUSED");
      expect(refused.stderr).toContain(
        `hint: nothing answered at http://127.0.0.1:${port}/v1: is the server running, and is the port right?`,
      );
      expect(noKey.code).toBe(2);
      expect(noKey.stderr).toContain("error: no API key: $OPENAI_API_KEY is not set.");
      expect(noWorkspace.code).toBe(2);
      expect(noWorkspace.stderr).toContain(
        `error: the workspace ${path.join(workspace, "nope")} does not exist or is not a folder (--cwd).`,
      );
      expect(unknown.code).toBe(2);
      expect(unknown.stderr).toBe("error: unknown option --verbose.\nRun `npm start -- --help` for the options.\n");
      for (const outcome of [malformed, noKey, noWorkspace, unknown]) expect(outcome.stdout).toBe("");
    } finally {
      await rm(workspace, { recursive: true, force: true });
    }
  }, 60_000);

  it("Prologue · no process above a command holds the key: the agent runs apart from npm, tsx and the shells that were given it", async () => {
    // Every ancestor of the command, from itself up: pid, how many key variables its environment
    // block holds, its command line. /proc/PID/environ is the block the process was started with.
    const walk =
      `p=$$; while [ "$p" -gt 1 ]; do ` +
      `echo "$p keys=$(tr '\\0' '\\n' < /proc/$p/environ | grep -c -E '^(OPENAI_API_KEY|MY_LLM)=') $(tr '\\0' ' ' < /proc/$p/cmdline | cut -c1-400)"; ` +
      `p=$(sed 's/.*) //' /proc/$p/stat | cut -d' ' -f2); done; ` +
      `echo "parent: $(tr '\\0' '\\n' < /proc/$PPID/environ | grep -E 'OPENAI_API_KEY|MY_LLM' || echo clean)"`;
    // One run through the real npm, with both OPENAI_API_KEY and the key in use (MY_LLM) exported.
    const named = await startChatReplayServer(bashThenDone(walk));
    const workspace = await mkdtemp(path.join(tmpdir(), "pi-course-00-"));
    try {
      const common = ["--model", "m", "--cwd", workspace, "--json", "who holds the key?"];
      const runs = [
        await collect("npm", ["start", "-s", "--", "--base-url", named.baseUrl, "--api-key-env", "MY_LLM", ...common], {
          OPENAI_API_KEY: "sk-ancestor-openai",
          MY_LLM: "sk-ancestor-llm",
        }),
      ];
      for (const outcome of runs) {
        expect(outcome.stderr).not.toContain("error");
        expect(outcome.code).toBe(0);
        expect(outcome.stdout).not.toContain("sk-ancestor");
        const events = outcome.stdout
          .trimEnd()
          .split("\n")
          .map((line) => JSON.parse(line) as any);
        const output: string = events.find((e) => e.type === "tool_execution_end").result.content[0].text;
        const lines = output.split("\n");
        // The command (bash), then the agent, which runs start.ts; nothing of the launch chain.
        expect(lines.length).toBeGreaterThanOrEqual(3);
        expect(lines[0]).toMatch(/^\d+ keys=0 bash -c /);
        expect(lines[1]).toMatch(/^\d+ keys=0 .*start\.ts --base-url/);
        for (const line of lines.slice(0, -1)) expect(line).toMatch(/^\d+ keys=0 /);
        expect(output).not.toMatch(/\bnpm\b|tsx\/dist\/cli|sh -c tsx/);
        expect(lines.at(-1)).toBe("parent: clean");
      }
      // The launcher leaves out of the agent's environment what the commands never see.
      expect(LAUNCH_SECRET_PATTERN.source).toBe(SECRET_NAME_PATTERN.source);
      // The key still reached the server.
      expect(named.requests.map((r) => r.authorization)).toEqual(["Bearer sk-ancestor-llm", "Bearer sk-ancestor-llm"]);
    } finally {
      await named.close();
      await rm(workspace, { recursive: true, force: true });
    }
  }, 90_000);

  it("Prologue · SIGHUP to npm start's process group, or SIGTERM to the npm process alone, ends the agent and the command it runs", async () => {
    const workspace = await mkdtemp(path.join(tmpdir(), "pi-course-00-"));
    const servers: Awaited<ReturnType<typeof startChatReplayServer>>[] = [];
    try {
      const runUntilCommand = async (name: string) => {
        const command = `echo $PPID > ${name}.agent; sleep 30 & echo $! > ${name}.sleep; wait`;
        const server = await startChatReplayServer(bashThenDone(command));
        servers.push(server);
        const run = launch(
          "npm",
          ["start", "-s", "--", "--base-url", server.baseUrl, "--model", "m", "--cwd", workspace, "wait"],
          { OPENAI_API_KEY: "sk-x" },
          { detached: true },
        );
        const pidOf = (suffix: string) =>
          Number(readFileSync(path.join(workspace, `${name}.${suffix}`), "utf8").trim() || "0");
        const read = (suffix: string) => {
          try {
            return pidOf(suffix);
          } catch {
            return 0;
          }
        };
        expect(await until(() => read("agent") > 0 && read("sleep") > 0, 60_000)).toBe(true);
        return { run, npm: run.child.pid!, agent: read("agent"), sleep: read("sleep") };
      };
      const [hup, term] = await Promise.all([runUntilCommand("hup"), runUntilCommand("term")]);
      // A closed terminal: SIGHUP to the whole job. A `kill` of npm: npm does not pass it on.
      process.kill(-hup.npm, "SIGHUP");
      process.kill(term.npm, "SIGTERM");
      for (const { npm, agent, sleep } of [hup, term]) {
        expect(agent).not.toBe(npm);
        expect(await until(() => !isAlive(sleep) && !isAlive(agent) && groupMembers(npm).length === 0, 15_000)).toBe(
          true,
        );
      }
      const termOutcome = await term.run.outcome;
      expect(termOutcome.stderr).toContain(
        "interrupted: the run was stopped by SIGHUP before it finished; there is no answer.",
      );
      expect(termOutcome.stdout).not.toContain("answer:");
      await hup.run.outcome;
    } finally {
      await Promise.all(servers.map((server) => server.close()));
      await rm(workspace, { recursive: true, force: true });
    }
  }, 120_000);

  it("Prologue · Ctrl-C during a tool call: the command dies, the trace ends, and the exit code (130) and stderr say the run was interrupted", async () => {
    const workspace = await mkdtemp(path.join(tmpdir(), "pi-course-00-"));
    const server = await startChatReplayServer(bashThenDone("sleep 30 & echo $! > sleep.pid; wait"));
    try {
      const run = launch(
        process.execPath,
        [builtStart(), "--base-url", server.baseUrl, "--model", "m", "--no-api-key", "--cwd", workspace, "wait"],
        {},
        { detached: true },
      );
      const sleepPid = () => Number(readFileSync(path.join(workspace, "sleep.pid"), "utf8").trim() || "0");
      expect(
        await until(() => {
          try {
            return sleepPid() > 0;
          } catch {
            return false;
          }
        }, 60_000),
      ).toBe(true);
      // As a terminal does: SIGINT to the whole foreground job.
      process.kill(-run.child.pid!, "SIGINT");
      const outcome = await run.outcome;
      expect(outcome.code).toBe(130);
      expect(outcome.stderr).toContain(
        "interrupted: the run was stopped by Ctrl-C (SIGINT) before it finished; there is no answer.",
      );
      expect(outcome.stdout).not.toContain("answer:");
      expect(runs(traceTypes(outcome.stdout)).slice(-3)).toEqual(["message_end", "turn_end", "agent_end"]);
      expect(await until(() => !isAlive(sleepPid()), 2000)).toBe(true);
    } finally {
      await server.close();
      await rm(workspace, { recursive: true, force: true });
    }
  }, 90_000);

  it("Prologue · the readable trace shows the control sequences of model text and command output as text: no clear-screen, title or clipboard write reaches the terminal", async () => {
    const hostile = "look\u001b[2J\u001b]0;pwned\u0007\u001b]52;c;cHduZWQ=\u0007\u009b31m\u202eevil\r";
    const command = "printf 'out\\033]52;c;cHduZWQ=\\007\\033[2J\\033[H\\rend\\n'";
    const server = await startChatReplayServer([
      chatSse(
        [
          { role: "assistant", content: hostile },
          {
            tool_calls: [
              {
                index: 0,
                id: "call_\u001b[2J",
                type: "function",
                function: { name: "bash", arguments: JSON.stringify({ command }) },
              },
            ],
          },
        ],
        "tool_calls",
      ),
      chatSse([{ role: "assistant", content: `answer ${hostile}` }], "stop"),
    ]);
    const workspace = await mkdtemp(path.join(tmpdir(), "pi-course-00-"));
    try {
      let stdout = "";
      let stderr = "";
      const code = await runMain(
        // a model of the catalogue (chapter 18): an unknown one would add its notice to stderr
        ["--base-url", server.baseUrl, "--model", "gpt-4o-mini", "--no-api-key", "--cwd", workspace, "--color", "go"],
        {
          stdout: { write: (text: string) => (stdout += text) },
          stderr: { write: (text: string) => (stderr += text) },
          env: { PI_COURSE_SESSION_DIR: SESSIONS },
        },
      );
      expect([code, stderr]).toEqual([0, ""]);
      // Only the trace's own colours remain; every other control character is written out.
      const withoutColours = stdout.replace(/\u001b\[\d+m/g, "");
      expect(withoutColours).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202e]/);
      expect(withoutColours).toContain(
        "look\\u001b[2J\\u001b]0;pwned\\u0007\\u001b]52;c;cHduZWQ=\\u0007\\u009b31m\\u202eevil\\u000d",
      );
      expect(withoutColours).toContain("│ out\\u001b]52;c;cHduZWQ=\\u0007\\u001b[2J\\u001b[H\\u000dend");
      expect(withoutColours).toContain("call_\\u001b[2J");
      expect(withoutColours).toContain("answer:\nanswer look\\u001b[2J");
    } finally {
      await server.close();
      await rm(workspace, { recursive: true, force: true });
    }
  }, 30_000);

  it("Prologue · an error text that echoes the key across the 500-character cut shows none of it", async () => {
    const key = "sk-straddle-0123456789abcdefghij";
    const server = createServer((request, response) => {
      request.resume();
      response.writeHead(401, { "content-type": "text/plain" });
      response.end(`${"y".repeat(490)}${key} was refused`);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const workspace = await mkdtemp(path.join(tmpdir(), "pi-course-00-"));
    try {
      let stderr = "";
      const code = await runMain(
        [
          "--base-url",
          `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
          "--model",
          "m",
          "--cwd",
          workspace,
          "--json",
          "hi",
        ],
        {
          stdout: { write: () => true },
          stderr: { write: (text: string) => (stderr += text) },
          env: { OPENAI_API_KEY: key, PI_COURSE_SESSION_DIR: SESSIONS },
        },
      );
      expect(code).toBe(1);
      expect(stderr).toContain(`error: HTTP 401 Unauthorized: ${"y".repeat(490)}[redacted]…`);
      expect(stderr).not.toContain("sk-s");
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await rm(workspace, { recursive: true, force: true });
    }
  }, 30_000);

  it("Prologue · long tasks come from --prompt-file (a file, or - for stdin), past npm's 128 KB argument limit; the key can come from --api-key-file", async () => {
    const workspace = await mkdtemp(path.join(tmpdir(), "pi-course-00-"));
    const big = `Summarise this:\n${"0123456789abcdef".repeat(8400)}`; // 134 KB: too long for npm's command line
    const bodies = [chatSse([{ role: "assistant", content: "ok" }], "stop")];
    const [fileServer, stdinServer] = await Promise.all([startChatReplayServer(bodies), startChatReplayServer(bodies)]);
    try {
      await writeFile(path.join(workspace, "task.md"), big);
      await writeFile(path.join(workspace, "key"), "sk-from-file\n");
      const common = ["--model", "m", "--cwd", workspace, "--json"];
      const [fromFile, fromStdin] = await Promise.all([
        cli(
          [
            "--base-url",
            fileServer.baseUrl,
            ...common,
            "--prompt-file",
            path.join(workspace, "task.md"),
            "--api-key-file",
            path.join(workspace, "key"),
          ],
          { OPENAI_API_KEY: undefined },
        ),
        launch(
          process.execPath,
          [builtStart(), "--base-url", stdinServer.baseUrl, ...common, "--no-api-key", "--prompt-file", "-"],
          {},
          { input: "from stdin\n" },
        ).outcome,
      ]);
      expect([fromFile.code, fromStdin.code]).toEqual([0, 0]);
      expect(fileServer.requests[0]!.body.messages[1]).toEqual({ role: "user", content: big });
      expect(fileServer.requests[0]!.authorization).toBe("Bearer sk-from-file");
      expect(stdinServer.requests[0]!.body.messages[1]).toEqual({ role: "user", content: "from stdin" });
      expect(HELP).toContain("--prompt-file PATH");
      expect(HELP).toContain("ends with exit code 249 and no message");
    } finally {
      await Promise.all([fileServer.close(), stdinServer.close()]);
      await rm(workspace, { recursive: true, force: true });
    }
  }, 90_000);

  it("Prologue · usage errors: an empty --cwd, a user:password in --base-url (never printed), a task given twice, an unreadable --prompt-file", async () => {
    const workspace = await mkdtemp(path.join(tmpdir(), "pi-course-00-"));
    try {
      const usage = async (args: string[]) => {
        let stdout = "";
        let stderr = "";
        const code = await runMain(args, {
          stdout: { write: (t: string) => (stdout += t) },
          stderr: { write: (t: string) => (stderr += t) },
          // as npm's start script of @pi/course runs it: the usage line names npm start
          env: { OPENAI_API_KEY: "k", npm_lifecycle_event: "start", npm_package_name: "@pi/course" },
        });
        expect(stdout).toBe("");
        return { code, stderr };
      };
      const base = ["--model", "m", "--cwd", workspace, "hi"];
      const emptyCwd = await usage(["--base-url", "http://127.0.0.1:1/v1", "--model", "m", "--cwd", "", "hi"]);
      expect(emptyCwd).toEqual({
        code: 2,
        stderr:
          'error: --cwd "" names no folder; give one (write --cwd . for the current folder).\nRun `npm start -- --help` for the options.\n',
      });
      const credentials = await usage(["--base-url", "http://alice:s3cret-pw@127.0.0.1:1/v1", ...base]);
      expect(credentials.code).toBe(2);
      expect(credentials.stderr).toContain('--base-url "http://***@127.0.0.1:1/v1" carries a user name or password');
      const schemeless = await usage(["--base-url", "alice:s3cret-pw@localhost:8080", ...base]);
      expect(schemeless.code).toBe(2);
      expect(schemeless.stderr).toContain('"***@localhost:8080"');
      for (const outcome of [credentials, schemeless]) expect(outcome.stderr).not.toMatch(/s3cret|alice/);
      const twice = await usage(["--base-url", "http://127.0.0.1:1/v1", ...base, "--prompt-file", "task.md"]);
      expect(twice.stderr).toContain("give the task either as arguments or with --prompt-file, not both.");
      const missing = await usage([
        "--base-url",
        "http://127.0.0.1:1/v1",
        "--model",
        "m",
        "--cwd",
        workspace,
        "--prompt-file",
        path.join(workspace, "nope.md"),
      ]);
      expect(missing).toEqual({
        code: 2,
        stderr: `error: --prompt-file ${path.join(workspace, "nope.md")}: cannot read it (ENOENT).\nRun \`npm start -- --help\` for the options.\n`,
      });
    } finally {
      await rm(workspace, { recursive: true, force: true });
    }
  }, 30_000);

  it("Prologue · --help documents every option", async () => {
    const result = await cli(["--help"]);
    expect(result.code).toBe(0);
    for (const option of [
      "--base-url",
      "--model",
      "--cwd",
      "--api-key-env",
      "--api-key-file",
      "--no-api-key",
      "--prompt-file",
      "--json",
      "--color",
      "--no-color",
      "--drop-tool-result",
      "--help",
      "OPENAI_API_KEY",
    ]) {
      expect(result.stdout).toContain(option);
    }
  }, 60_000);
});
