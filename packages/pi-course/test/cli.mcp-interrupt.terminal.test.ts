/**
 * Ctrl-C with a stdio MCP server running a call, in a real pseudo-terminal. On Linux the server
 * stays in the agent's session and process group (no scheduling group of its own), so in
 * `--print` (no raw mode) the terminal's SIGINT reaches it too; the interactive CLI reads Ctrl-C
 * as a key and the server keeps running. Either way the run ends as Ctrl-C says and no process of
 * the server outlives the agent. server-everything is the real reference server.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { answerTurn, callTurn, scriptedChatServer } from "./support/chat-turns.js";
import { serverEntry } from "./support/mcp.js";
import { KEY, openTerminal, type PseudoTerminal } from "./support/terminal.js";
import { builtStart } from "./support/built-cli.js";

let dir: string;
let terminal: PseudoTerminal | undefined;

beforeEach(() => {
  dir = realpathSync(mkdtempSync(path.join(tmpdir(), "pi-cli-mcp-int-")));
});
afterEach(() => {
  terminal?.kill();
  rmSync(dir, { recursive: true, force: true });
});

/**
 * A project whose trusted mcp.json starts server-everything as `everything`, `"exposure": "direct"`
 * (so a print run waits for it and its tools are in the first request); its environment.
 */
function setUpProject(): { project: string; env: NodeJS.ProcessEnv } {
  const project = path.join(dir, "project");
  const home = path.join(dir, "home");
  mkdirSync(path.join(project, ".pi-course"), { recursive: true });
  mkdirSync(home);
  const everything = {
    command: process.execPath,
    args: [serverEntry("server-everything"), "stdio"],
    exposure: "direct",
    // what tells this test's server from the server-everything of test files running beside it
    env: { PI_COURSE_TEST_SERVER: project },
  };
  writeFileSync(path.join(project, ".pi-course", "mcp.json"), JSON.stringify({ mcpServers: { everything } }));
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, TERM: "xterm-256color", INIT_CWD: project };
  for (const name of ["NO_COLOR", "PI_COURSE_CONFIG", "PI_COURSE_BASE_URL", "PI_COURSE_MODEL", "PI_COURSE_PROVIDER"])
    delete env[name];
  return { project, env };
}

/** The pids of the processes whose command line names server-everything (Linux). */
function serverProcesses(): number[] {
  const entry = serverEntry("server-everything");
  const mark = `PI_COURSE_TEST_SERVER=${path.join(dir, "project")}`;
  const found: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^[0-9]+$/.test(name)) continue;
    try {
      if (!readFileSync(`/proc/${name}/cmdline`, "utf8").split("\0").includes(entry)) continue;
      if (readFileSync(`/proc/${name}/environ`, "utf8").split("\0").includes(mark)) found.push(Number(name));
    } catch {}
  }
  return found;
}

/**
 * The server process the run started (not in `before`), once the model was asked (its answer
 * calls the long operation, which runs for 60 s): a Ctrl-C after this lands in the run, in the
 * call or just before it, which ends the same way.
 */
async function serverOfTheRun(bodies: readonly unknown[], before: Set<number>): Promise<number[]> {
  for (const deadline = Date.now() + 30_000; bodies.length < 1 && Date.now() < deadline; )
    await new Promise((resolve) => setTimeout(resolve, 50));
  await new Promise((resolve) => setTimeout(resolve, 500));
  const mine = serverProcesses().filter((pid) => !before.has(pid));
  expect(mine).toHaveLength(1);
  return mine;
}

const LONG_CALL = callTurn("c1", "mcp__everything__trigger-long-running-operation", { duration: 60, steps: 60 });

it("--print: Ctrl-C during an MCP call ends the run (130) and the server with it", async () => {
  const { project, env } = setUpProject();
  const chat = await scriptedChatServer([LONG_CALL, answerTurn(() => "done")]);
  const before = new Set(serverProcesses());
  try {
    const args = ["--base-url", chat.baseUrl, "--model", "m", "--no-api-key", "--cwd", project, "--no-session"];
    terminal = openTerminal([process.execPath, builtStart(), ...args, "--approve", "--print", "hi"], {
      cwd: project,
      env,
      columns: 200,
    });
    await terminal.waitFor(/MCP server everything: ready/, 30_000);
    const mine = await serverOfTheRun(chat.bodies, before);
    terminal.type(KEY.ctrlC);
    const code = await terminal.exit;
    expect(code).toBe(130);
    const after = terminal.text().slice(terminal.text().indexOf("task:"));
    expect(after).toContain(
      "interrupted: the run was stopped by Ctrl-C (SIGINT) before it finished; there is no answer.",
    );
    expect(after).not.toContain("MCP server"); // its SIGINT is no failure to report
    expect(serverProcesses().filter((pid) => mine.includes(pid))).toEqual([]);
  } finally {
    await chat.close();
  }
}, 90_000);

it("interactive: Ctrl-C during an MCP call stops the turn; the server keeps running (a key, no signal) and ends with the agent", async () => {
  const { project, env } = setUpProject();
  const chat = await scriptedChatServer([LONG_CALL, answerTurn(() => "after")]);
  const before = new Set(serverProcesses());
  try {
    const args = ["--base-url", chat.baseUrl, "--model", "m", "--no-api-key", "--cwd", project, "--no-session"];
    terminal = openTerminal([process.execPath, builtStart(), ...args, "--approve"], {
      cwd: project,
      env,
      columns: 200,
    });
    await terminal.waitFor(/MCP server everything: ready/, 30_000);
    await terminal.waitFor("› ");
    terminal.type(`hi${KEY.enter}`);
    const mine = await serverOfTheRun(chat.bodies, before);
    await terminal.waitFor("⚙ mcp__everything__trigger-long-running-operation", 30_000);
    terminal.type(KEY.ctrlC);
    await terminal.waitFor("› ", 30_000);
    expect(terminal.text()).toContain(
      'Tool call "mcp__everything__trigger-long-running-operation" was aborted: the run was stopped before it finished.',
    );
    expect(serverProcesses().filter((pid) => mine.includes(pid))).toEqual(mine);
    terminal.type(`/mcp${KEY.enter}`);
    await terminal.waitFor("everything: ready");
    await terminal.waitFor("› ");
    terminal.type(`/exit${KEY.enter}`);
    expect(await terminal.exit).toBe(0);
    expect(serverProcesses().filter((pid) => mine.includes(pid))).toEqual([]);
  } finally {
    await chat.close();
  }
}, 90_000);
