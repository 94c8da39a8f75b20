/**
 * Chapter 18 in the CLI, as a person uses it: `/model` and `/thinking` in a real pseudo-terminal
 * (support/terminal.ts), kept across `--continue`; the cost after each answer and with `/cost`;
 * `--model a,b` falling back when the first model's server is overloaded. Against a local server
 * on 127.0.0.1 replaying a recorded OpenAI stream. Every wait is for what the screen shows.
 */
import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { SseServer, fixtureSse, modelsReply, sseReply, statusReply } from "./support/sse-server.js";
import { KEY, openTerminal, type PseudoTerminal } from "./support/terminal.js";
import { builtStart } from "./support/built-cli.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const packageDir = path.resolve(here, "..");
const PROMPT = "› ";
const ANSWER = "The capital of Mexico is Mexico City.";

let home: string;
let workspace: string;
const terminals: PseudoTerminal[] = [];
const servers: SseServer[] = [];

beforeAll(async () => {
  home = await mkdtemp(path.join(tmpdir(), "pi-course-models-home-"));
  workspace = await mkdtemp(path.join(tmpdir(), "pi-course-models-work-"));
});
afterEach(async () => {
  for (const terminal of terminals.splice(0)) terminal.kill();
  for (const server of servers.splice(0)) await server.close();
});
afterAll(async () => {
  await rm(home, { recursive: true, force: true });
  await rm(workspace, { recursive: true, force: true });
});

function environment(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, TERM: "xterm-256color", NO_COLOR: "1", ...extra };
  for (const name of Object.keys(env)) if (name.startsWith("PI_COURSE_")) delete env[name];
  return env;
}

function terminal(args: string[]): PseudoTerminal {
  const opened = openTerminal([process.execPath, builtStart(), ...args], {
    cwd: workspace,
    env: environment({ INIT_CWD: workspace }),
  });
  terminals.push(opened);
  return opened;
}

function piped(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [builtStart(), ...args], {
      cwd: packageDir,
      env: environment(),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString("utf8")));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString("utf8")));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

async function server(): Promise<SseServer> {
  const started = await SseServer.start();
  servers.push(started);
  return started;
}

const text = () => sseReply(fixtureSse("openai-gpt-4o-text-with-usage.sse"));

describe("the CLI chooses models by name", () => {
  it("/model and /thinking are kept in the session: --continue goes on with the same model and level; the cost is shown", async () => {
    const replay = await server();
    replay.reply(text()).reply(text());
    const common = ["--base-url", replay.baseUrl, "--model", "gpt-4o-mini", "--no-api-key", "--cwd", workspace];
    const sessions = ["--session-dir", path.join(home, "sessions")];
    const t = terminal([...common, ...sessions]);
    await t.waitFor(PROMPT);
    t.type(`/model gpt-5-mini${KEY.enter}`);
    await t.waitFor(/model: openai-compatible · gpt-5-mini · thinking off · context budget 383616\s+tokens/);
    await t.waitFor(PROMPT);
    t.type(`/thinking high${KEY.enter}`);
    await t.waitFor("model: openai-compatible · gpt-5-mini · thinking high");
    await t.waitFor(PROMPT);
    t.type(`hello${KEY.enter}`);
    await t.waitFor(ANSWER);
    // 14 prompt tokens at $0.25 and 8 completion tokens at $2 per million
    await t.waitFor(/cost: \$0\.0000(19|20)/);
    await t.waitFor(PROMPT);
    t.type(`/exit${KEY.enter}`);
    expect(await t.exit).toBe(0);

    // no --model: the session's choice (an explicit --model would win over it)
    const again = terminal([
      ...common.filter((a) => a !== "--model" && a !== "gpt-4o-mini"),
      ...sessions,
      "--continue",
    ]);
    await again.waitFor("note: model from the session: gpt-5-mini · thinking high");
    await again.waitFor(PROMPT);
    again.type(`and again${KEY.enter}`);
    await again.waitFor(ANSWER);
    await again.waitFor(/cost: \$0\.0000(39|40)/);
    await again.waitFor(PROMPT);
    again.type(`/cost${KEY.enter}`);
    await again.waitFor(/cost: \$0\.0000(39|40)/);
    await again.waitFor(PROMPT);
    again.type(`/exit${KEY.enter}`);
    expect(await again.exit).toBe(0);

    const bodies = replay.requests.map((r) => JSON.parse(r.body));
    expect(bodies.map((b) => [b.model, b.reasoning_effort])).toEqual([
      ["gpt-5-mini", "high"],
      ["gpt-5-mini", "high"],
    ]);
  }, 60_000);

  it("/model refuses a name in no catalogue that the server does not serve; one it serves is taken, with the notice", async () => {
    const replay = await server();
    replay.reply(modelsReply(["house-a", "house-b"])).reply(modelsReply(["house-a", "house-b"]));
    const args = ["--base-url", replay.baseUrl, "--model", "gpt-4o-mini", "--no-api-key", "--cwd", workspace];
    const t = terminal([...args, "--no-session"]);
    await t.waitFor(PROMPT);
    t.type(`/model no-such-model${KEY.enter}`);
    await t.waitFor(
      /error: "no-such-model" is in no model catalogue and the server does not serve it\s+\(it lists house-a, house-b\); nothing changed/,
    );
    await t.waitFor(PROMPT);
    t.type(`/model house-b${KEY.enter}`);
    await t.waitFor('note: model "house-b" is not in the model catalogue');
    await t.waitFor("model: openai-compatible · house-b · thinking off");
    await t.waitFor(PROMPT);
    t.type(`/exit${KEY.enter}`);
    expect(await t.exit).toBe(0);
    expect(replay.requests.map((r) => `${r.method} ${r.url}`)).toEqual(["GET /v1/models", "GET /v1/models"]);
  }, 60_000);

  it("Tab completes model names after /model", async () => {
    const replay = await server();
    const t = terminal([
      "--base-url",
      replay.baseUrl,
      "--model",
      "gpt-4o-mini",
      "--no-api-key",
      "--cwd",
      workspace,
      "--no-session",
    ]);
    await t.waitFor(PROMPT);
    t.type("/model claude-hai");
    // Wait for the echo before the Tab: readline treats a Tab that arrives in one chunk with
    // other keys as pasted text and inserts it instead of completing.
    await t.waitFor("/model claude-hai");
    t.type("\t");
    await t.waitFor("ku-4-5"); // readline writes only what the completion adds
    t.type(KEY.enter);
    await t.waitFor("model: openai-compatible · claude-haiku-4-5 · thinking off");
    await t.waitFor(PROMPT);
    t.type(`/exit${KEY.enter}`);
    expect(await t.exit).toBe(0);
  }, 60_000);

  it("--model a,b falls back when the first is overloaded, and says so; an unknown model gets one notice; --json's agent_end carries the conversation's cost", async () => {
    const replay = await server();
    replay
      .reply(statusReply(529, JSON.stringify({ error: { message: "Overloaded", type: "overloaded_error" } })))
      .reply(text());
    const run = await piped([
      "--base-url",
      replay.baseUrl,
      "--model",
      "mystery-model,gpt-4o-mini",
      "--no-api-key",
      "--cwd",
      workspace,
      "--no-session",
      "--json",
      "hello",
    ]);
    expect(run.stderr).toContain(
      'note: model "mystery-model" is not in the model catalogue: its context window is taken as 128000 tokens and its price as unknown',
    );
    expect(run.stderr.match(/is not in the model catalogue/g)).toHaveLength(1);
    expect(run.stderr).toMatch(/note: fell back from mystery-model to gpt-4o-mini \(mystery-model: .*Overloaded.*\)/);
    expect(run.code).toBe(0);
    const lines = run.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    const last = lines.at(-1);
    expect(last.type).toBe("agent_end");
    expect(last.conversationCost.priced).toBe(1);
    expect(last.conversationCost.unpriced).toBe(0);
    expect(last.conversationCost.total).toBeCloseTo(14 * 0.15e-6 + 8 * 0.6e-6, 15);
    const answer = lines.find((l) => l.type === "message_end" && l.message.role === "assistant");
    expect(answer.message.model).toBe("gpt-4o-mini");
    expect(answer.message.cost.total).toBeCloseTo(last.conversationCost.total, 15);
    expect(replay.requests.map((r) => JSON.parse(r.body).model)).toEqual(["mystery-model", "gpt-4o-mini"]);
  }, 60_000);

  it("a virtual model named in ~/.pi-course/models.json falls back in its order; --thinking with a bad level is refused", async () => {
    await rm(path.join(home, ".pi-course"), { recursive: true, force: true });
    await import("node:fs/promises").then((fs) => fs.mkdir(path.join(home, ".pi-course"), { recursive: true }));
    await writeFile(
      path.join(home, ".pi-course", "models.json"),
      JSON.stringify({ virtual: { "cheap-then-strong": ["gpt-4o-mini", "gpt-4o"] } }),
    );
    try {
      const replay = await server();
      replay.reply(statusReply(503, "{}")).reply(text());
      const common = ["--base-url", replay.baseUrl, "--no-api-key", "--cwd", workspace, "--no-session"];
      const run = await piped([...common, "--model", "cheap-then-strong", "--print", "hello"]);
      expect(run.stdout).toBe(`${ANSWER}\n`);
      expect(run.stderr).toMatch(/note: fell back from gpt-4o-mini to gpt-4o/);
      expect(replay.requests.map((r) => JSON.parse(r.body).model)).toEqual(["gpt-4o-mini", "gpt-4o"]);

      const bad = await piped([...common, "--model", "gpt-4o", "--thinking", "hgih", "hello"]);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain('error: --thinking must be one of off, minimal, low, medium, high, got "hgih".');
    } finally {
      await rm(path.join(home, ".pi-course"), { recursive: true, force: true });
    }
  }, 60_000);
});
