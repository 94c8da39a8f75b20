/**
 * The MCP servers of a project in a real pseudo-terminal: the project's `.pi-course/mcp.json` is
 * named in the trust question (it starts programs), starts once the folder is trusted, and `/mcp`
 * shows each server's state. server-everything is the real reference server. Servers start in the
 * background: a server that never answers holds back neither the conversation nor a print run
 * longer than its bound.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { answerTurn, callTurn, scriptedChatServer } from "./support/chat-turns.js";
import { GATED_SERVER, serverEntry } from "./support/mcp.js";
import { killStarted, startProcess } from "./support/processes.js";
import type { ChildProcess } from "node:child_process";
import { SseServer } from "./support/sse-server.js";
import { KEY, openTerminal, type PseudoTerminal } from "./support/terminal.js";
import { builtStart } from "./support/built-cli.js";

let dir: string;
let model: SseServer | undefined;
let terminal: PseudoTerminal | undefined;
const started: ChildProcess[] = [];

beforeEach(() => {
  dir = realpathSync(mkdtempSync(path.join(tmpdir(), "pi-cli-mcp-")));
});
afterEach(async () => {
  terminal?.kill();
  killStarted(started);
  await model?.close();
  rmSync(dir, { recursive: true, force: true });
});

it("a project's mcp.json is named in the trust question, starts once trusted, and /mcp shows its state", async () => {
  const project = path.join(dir, "project");
  const home = path.join(dir, "home");
  mkdirSync(path.join(project, ".pi-course"), { recursive: true });
  mkdirSync(home);
  const config = path.join(project, ".pi-course", "mcp.json");
  writeFileSync(
    config,
    JSON.stringify({
      mcpServers: {
        everything: { command: process.execPath, args: [serverEntry("server-everything"), "stdio"] },
        missing: { command: "no-such-mcp-server-here" },
      },
    }),
  );
  model = await SseServer.start();
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, TERM: "xterm-256color", INIT_CWD: project };
  for (const name of ["NO_COLOR", "PI_COURSE_CONFIG", "PI_COURSE_BASE_URL", "PI_COURSE_MODEL", "PI_COURSE_PROVIDER"])
    delete env[name];
  const args = ["--base-url", model.baseUrl, "--model", "m", "--no-api-key", "--cwd", project, "--no-session"];
  terminal = openTerminal([process.execPath, builtStart(), ...args], { cwd: project, env, columns: 200 });
  await terminal.waitFor(`The folder ${project} holds project resources`);
  await terminal.waitFor(config);
  await terminal.waitFor("(y/N) ");
  terminal.type(`y${KEY.enter}`);
  // the servers start in the background: each is said as it settles (a missing program at once)
  await terminal.waitFor("note: MCP server everything: ready with", 45_000);
  expect(terminal.text()).toContain('note: MCP server missing failed: cannot start "no-such-mcp-server-here"');
  await terminal.waitFor("› ");
  terminal.type(`/mcp${KEY.enter}`);
  await terminal.waitFor(/everything: ready with \d+ tools/);
  await terminal.waitFor('missing: failed: cannot start "no-such-mcp-server-here": no such program');
  await terminal.waitFor("› ");
  terminal.type(`/mcp reconnect everything${KEY.enter}`);
  await terminal.waitFor("starting the MCP server everything afresh…");
  await terminal.waitFor(/everything: ready with \d+ tools/, 45_000);
  await terminal.waitFor("› ");
  terminal.type(`/exit${KEY.enter}`);
  expect(await terminal.exit).toBe(0);
  // no model was called: the servers started with the conversation, not with a prompt
  expect(model.requests).toEqual([]);
}, 60_000);

/** A program that speaks no MCP: it starts and never answers `initialize`. */
const HANGING = { command: process.execPath, args: ["-e", "process.stdin.resume()"] };

/** A home and a project with `servers` in the project's trusted mcp.json; the environment to run in. */
function setUpProject(servers: Record<string, unknown>): { project: string; env: NodeJS.ProcessEnv } {
  const project = path.join(dir, "project");
  const home = path.join(dir, "home");
  mkdirSync(path.join(project, ".pi-course"), { recursive: true });
  mkdirSync(home);
  writeFileSync(path.join(project, ".pi-course", "mcp.json"), JSON.stringify({ mcpServers: servers }));
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, TERM: "xterm-256color", INIT_CWD: project };
  for (const name of ["NO_COLOR", "PI_COURSE_CONFIG", "PI_COURSE_BASE_URL", "PI_COURSE_MODEL", "PI_COURSE_PROVIDER"])
    delete env[name];
  return { project, env };
}

/**
 * `--print PROMPT` of the built CLI in the trusted `project` against `chat`, every MCP server
 * given `startupMs` to start unless its entry says; fails if the run has not ended in 50 s.
 */
async function printRun(
  project: string,
  env: NodeJS.ProcessEnv,
  chat: { baseUrl: string },
  prompt: string,
  startupMs = "60000",
): Promise<{ code: number | null; stdout: string; stderr: string; tookMs: number }> {
  const args = ["--base-url", chat.baseUrl, "--model", "m", "--no-api-key", "--cwd", project, "--no-session"];
  const flags = ["--approve", "--print", "--mcp-startup-timeout", startupMs, prompt];
  const startedAt = Date.now();
  const run = startProcess(builtStart(), [...args, ...flags], { cwd: project, env, started });
  const { code } = await Promise.race([
    run.exit,
    new Promise<never>((_, fail) => setTimeout(() => fail(new Error("the run did not end")), 50_000)),
  ]);
  return { code, ...run.output(), tookMs: Date.now() - startedAt };
}

it("a server that never answers does not hold the conversation back: the first answer comes while it starts, and its failure is said above the prompt line, which keeps what was typed", async () => {
  const { project, env } = setUpProject({ hanging: { ...HANGING, startupTimeoutMs: 6_000 } });
  const chat = await scriptedChatServer([answerTurn(() => "Hello there.")]);
  try {
    const args = [
      "--base-url",
      chat.baseUrl,
      "--model",
      "m",
      "--no-api-key",
      "--cwd",
      project,
      "--no-session",
      "--approve",
    ];
    const started = Date.now();
    terminal = openTerminal([process.execPath, builtStart(), ...args], { cwd: project, env, columns: 200 });
    await terminal.waitFor("note: MCP server hanging: starting (its tools join when it is ready; /mcp shows it)");
    await terminal.waitFor("› ");
    terminal.type(`hi${KEY.enter}`);
    await terminal.waitFor("Hello there.");
    const answeredMs = Date.now() - started;
    await terminal.waitFor("› ");
    terminal.type(`/mcp${KEY.enter}`);
    await terminal.waitFor("hanging: starting");
    await terminal.waitFor("› ");
    expect(answeredMs).toBeLessThan(6_000); // answered before the server's start-up could even time out
    terminal.type("half typed");
    await terminal.waitFor("note: MCP server hanging failed: initialize timed out: no answer within 6000 ms", 15_000);
    await terminal.waitFor("› half typed");
    terminal.type(`${KEY.ctrlU}/exit${KEY.enter}`);
    expect(await terminal.exit).toBe(0);
    expect(chat.bodies).toHaveLength(1);
  } finally {
    await chat.close();
  }
}, 60_000);

it('--print waits for a server of "exposure": "direct" at most its start-up timeout, and for none more than 10 s: then the run goes on with a note', async () => {
  const { project, env } = setUpProject({
    quick: { ...HANGING, exposure: "direct", startupTimeoutMs: 1_000 },
    slow: { ...HANGING, exposure: "direct" },
    everything: { command: process.execPath, args: [serverEntry("server-everything"), "stdio"], exposure: "direct" },
  });
  const chat = await scriptedChatServer([answerTurn((body) => `tools: ${body.tools.length}`)]);
  try {
    const args = ["--base-url", chat.baseUrl, "--model", "m", "--no-api-key", "--cwd", project, "--no-session"];
    const startedAt = Date.now();
    const flags = ["--approve", "--print", "--mcp-startup-timeout", "60000", "hi"];
    const run = startProcess(builtStart(), [...args, ...flags], { cwd: project, env, started });
    const { code } = await run.exit;
    const tookMs = Date.now() - startedAt;
    const { stdout, stderr } = run.output();
    expect([code, stdout]).toEqual([0, `tools: ${chat.bodies[0].tools.length}\n`]);
    expect(stderr).toContain("note: MCP server quick failed: initialize timed out: no answer within 1000 ms");
    expect(stderr).toContain(
      "note: MCP server slow: still starting after 10 s; the run goes on without it (its tools join the model's next request once it is ready; tool_search waits for it)",
    );
    expect(stderr).toMatch(/note: MCP server everything: ready with \d+ tools/);
    // everything's tools were in the first request; the slow server's start-up (60 s) was not waited out
    expect(chat.bodies[0].tools.map((tool: { function: { name: string } }) => tool.function.name)).toContain(
      "mcp__everything__echo",
    );
    expect(tookMs).toBeGreaterThanOrEqual(10_000);
    expect(tookMs).toBeLessThan(30_000);
  } finally {
    await chat.close();
  }
}, 60_000);

it("--print never waits for a server whose tools are found with tool_search: one that never answers is noted, and the first request goes out", async () => {
  const { project, env } = setUpProject({
    everything: { command: process.execPath, args: [serverEntry("server-everything"), "stdio"], exposure: "direct" },
    silent: { ...HANGING, exposure: "search" },
  });
  const chat = await scriptedChatServer([answerTurn((body) => `tools: ${body.tools.length}`)]);
  try {
    const { code, stdout, stderr } = await printRun(project, env, chat, "hi", "600000");
    expect([code, stdout]).toEqual([0, `tools: ${chat.bodies[0].tools.length}\n`]);
    // everything (its tools declared up front) was waited for; silent was still starting when the run went on
    expect(stderr).toMatch(/note: MCP server everything: ready with \d+ tools/);
    expect(stderr).toContain(
      "note: MCP server silent: starting; the run goes on without waiting for it (its tools join the model's next request once it is ready; tool_search waits for it)",
    );
    expect(stderr).not.toContain("still starting after");
    const names = chat.bodies[0].tools.map((tool: { function: { name: string } }) => tool.function.name);
    expect(names).toContain("mcp__everything__echo");
    expect(names).toContain("tool_search");
    expect(names.filter((name: string) => name.startsWith("mcp__silent__"))).toEqual([]);
  } finally {
    await chat.close();
  }
}, 60_000);

it("issue 53 · --print does not wait for a server of default exposure that never answers: the first answer comes long before its 60 s start-up limit, with a note", async () => {
  const { project, env } = setUpProject({ hanging: HANGING });
  const chat = await scriptedChatServer([answerTurn((body) => `tools: ${body.tools.length}`)]);
  try {
    const { code, stdout, stderr, tookMs } = await printRun(project, env, chat, "hi");
    expect([code, stdout]).toEqual([0, `tools: ${chat.bodies[0].tools.length}\n`]);
    expect(stderr).toContain(
      "note: MCP server hanging: starting; the run goes on without waiting for it (its tools join the model's next request once it is ready; tool_search waits for it)",
    );
    // not waited out: its 60 s start-up limit (the note above also tells it from the old 10 s wait)
    expect(tookMs).toBeLessThan(30_000);
    // the first request offers the search that waits for it
    const search = chat.bodies[0].tools.find(
      (tool: { function: { name: string } }) => tool.function.name === "tool_search",
    );
    expect(search.function.description).toContain(
      "The MCP servers hanging are still starting: a search waits for them",
    );
  } finally {
    await chat.close();
  }
}, 60_000);

it("issue 53 · in a --print run, tool_search waits for the servers still starting: one that arrives has its tools in the next request, one that never starts is named with its reason", async () => {
  const gate = path.join(dir, "gate");
  const { project, env } = setUpProject({
    late: { command: process.execPath, args: [GATED_SERVER, gate] },
    never: { ...HANGING, startupTimeoutMs: 3_000 },
  });
  const chat = await scriptedChatServer([
    (body) => {
      // the late server may start only now: the first request went out without its tools
      writeFileSync(gate, "");
      return callTurn("s1", "tool_search", { query: "weather forecast for a city" })(body);
    },
    callTurn("c1", "mcp__late__city_weather", { city: "Oslo" }),
    answerTurn(() => "done"),
  ]);
  try {
    const { code, stdout, stderr } = await printRun(project, env, chat, "weather in Oslo?");
    expect([code, stdout, chat.bodies.length]).toEqual([0, "done\n", 3]);
    const names = (body: any) => body.tools.map((tool: { function: { name: string } }) => tool.function.name);
    expect(names(chat.bodies[0])).not.toContain("mcp__late__city_weather");
    expect(names(chat.bodies[1])).toContain("mcp__late__city_weather");
    const toolText = (body: any) => body.messages.at(-1).content;
    expect(toolText(chat.bodies[1])).toBe(
      "The MCP server late is ready; declared to you from your next request on: mcp__late__city_weather.\n" +
        'The MCP server never did not start (initialize timed out: no answer within 3000 ms): its tools cannot be used in this run. Tell the user; its entry in mcp.json (command, "startupTimeoutMs") is what to check.',
    );
    expect(toolText(chat.bodies[2])).toBe("sunny in Oslo");
    expect(stderr).toContain("note: MCP server late: ready with 1 tool");
  } finally {
    await chat.close();
  }
}, 60_000);

it("issue 53 · in a --print run, a call of a tool of a server still starting waits for it, then runs", async () => {
  const gate = path.join(dir, "gate");
  const { project, env } = setUpProject({ late: { command: process.execPath, args: [GATED_SERVER, gate] } });
  const chat = await scriptedChatServer([
    (body) => {
      writeFileSync(gate, ""); // the server may start only once the first request went out
      return callTurn("c1", "mcp__late__city_weather", { city: "Oslo" })(body);
    },
    answerTurn((body) => body.messages.at(-1).content),
  ]);
  try {
    const { code, stdout } = await printRun(project, env, chat, "weather in Oslo?");
    expect([code, stdout]).toEqual([0, "sunny in Oslo\n"]);
    const names = chat.bodies.map((body) =>
      body.tools.map((tool: { function: { name: string } }) => tool.function.name),
    );
    expect([names[0].includes("mcp__late__city_weather"), names[1].includes("mcp__late__city_weather")]).toEqual([
      false,
      true,
    ]);
  } finally {
    await chat.close();
  }
}, 60_000);

it("issue 53 · in a --print run, a search whose only server never starts is an error result that names it, its reason and what to do", async () => {
  const { project, env } = setUpProject({ never: { ...HANGING, startupTimeoutMs: 1_500 } });
  const chat = await scriptedChatServer([
    callTurn("s1", "tool_search", { query: "weather" }),
    answerTurn(() => "no weather tool"),
  ]);
  try {
    const { code, stdout } = await printRun(project, env, chat, "weather?");
    expect([code, stdout]).toEqual([0, "no weather tool\n"]);
    const result = chat.bodies[1].messages.at(-1);
    expect(result.content).toBe(
      'The MCP server never did not start (initialize timed out: no answer within 1500 ms): its tools cannot be used in this run. Tell the user; its entry in mcp.json (command, "startupTimeoutMs") is what to check.',
    );
  } finally {
    await chat.close();
  }
}, 60_000);

it("a variable an MCP config names reaches its server but never the agent's commands, whatever its name (DATABASE_URL)", async () => {
  const { project, env } = setUpProject({
    everything: {
      command: process.execPath,
      args: [serverEntry("server-everything"), "stdio"],
      env: { DB: "${DATABASE_URL}" },
    },
  });
  env.DATABASE_URL = "postgres://app:hunter2@db.internal/app";
  const chat = await scriptedChatServer([
    callTurn("c1", "bash", { command: 'echo "db=${DATABASE_URL:-unset}"' }),
    callTurn("c2", "mcp__everything__get-env", {}),
    answerTurn(() => "Done."),
  ]);
  try {
    const args = ["--base-url", chat.baseUrl, "--model", "m", "--no-api-key", "--cwd", project, "--no-session"];
    const run = startProcess(builtStart(), [...args, "--approve", "--print", "look"], { cwd: project, env, started });
    const { code } = await run.exit;
    expect([code, run.output().stdout]).toEqual([0, "Done.\n"]);
    const toolText = (body: { messages: { role: string; content: string }[] }) => body.messages.at(-1)!.content;
    expect(toolText(chat.bodies[1])).toBe("db=unset");
    expect(toolText(chat.bodies[2])).toContain("postgres://app:hunter2@db.internal/app");
  } finally {
    await chat.close();
  }
}, 60_000);

it("the system prompt names the servers one line each; a server behind codemode brings the code tool and is declared only in it", async () => {
  const everything = { command: process.execPath, args: [serverEntry("server-everything"), "stdio"] };
  const { project, env } = setUpProject({
    // direct: a print run waits for it (as for the codemode server), so its tool is in the first request
    plain: { ...everything, includeTools: ["echo"], exposure: "direct" },
    scripted: { ...everything, exposure: "codemode" },
  });
  const chat = await scriptedChatServer([answerTurn(() => "Done.")]);
  try {
    const args = ["--base-url", chat.baseUrl, "--model", "m", "--no-api-key", "--cwd", project, "--no-session"];
    const run = startProcess(builtStart(), [...args, "--approve", "--print", "hi"], { cwd: project, env, started });
    const { code } = await run.exit;
    expect([code, run.output().stdout]).toEqual([0, "Done.\n"]);
    const body = chat.bodies[0];
    expect(body.messages[0].content).toContain(
      "MCP servers (their tools join as each server starts):\n- plain: tools named mcp__plain__* (declared to you)\n- scripted: tools named mcp__scripted__* (call them from the code tool)",
    );
    const names: string[] = body.tools.map((tool: { function: { name: string } }) => tool.function.name);
    expect(names[0]).toBe("code");
    expect(names).toContain("mcp__plain__echo");
    expect(names.filter((name) => name.startsWith("mcp__scripted__"))).toEqual([]);
    const code_ = body.tools[0].function.description as string;
    expect(code_).toContain("mcp__scripted__");
  } finally {
    await chat.close();
  }
}, 60_000);
