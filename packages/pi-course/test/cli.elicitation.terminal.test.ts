/**
 * An MCP server's form at the terminal, against the real server-everything
 * (`trigger-elicitation-request` asks for 13 fields of every kind a form may hold): in a real
 * pseudo-terminal the person is asked field by field while the tool call waits, a wrong answer is
 * said and asked again, Enter takes a default, Ctrl-C cancels the form (not the run), and the
 * server gets what was typed. A page to open (`trigger-url-elicitation`) is shown whole and never
 * opened for the person; refused with -32042, the call's error names the page. A question the
 * server withdraws (`notifications/cancelled`) leaves the prompt line. Where nobody can answer
 * (`--print`) the server is told no.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import type { ChildProcess } from "node:child_process";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, expect, it } from "vitest";
import { builtStart } from "./support/built-cli.js";
import { answerTurn, callTurn, scriptedChatServer } from "./support/chat-turns.js";
import { serverEntry } from "./support/mcp.js";
import { killStarted, startProcess } from "./support/processes.js";
import { KEY, openTerminal, type PseudoTerminal } from "./support/terminal.js";

let dir: string;
let terminal: PseudoTerminal | undefined;
const started: ChildProcess[] = [];

beforeEach(() => {
  dir = realpathSync(mkdtempSync(path.join(tmpdir(), "pi-cli-elicit-")));
});
afterEach(() => {
  terminal?.kill();
  killStarted(started);
  rmSync(dir, { recursive: true, force: true });
});

const TOOL = "mcp__everything__trigger-elicitation-request";
const URL_TOOL = "mcp__everything__trigger-url-elicitation";
const PAGE = "https://example.com/consent?step=1";

/** server-everything with only its elicitation tools. */
const EVERYTHING = {
  command: process.execPath,
  args: [serverEntry("server-everything"), "stdio"],
  includeTools: ["trigger-elicitation-request", "trigger-url-elicitation"],
};

/** A project whose mcp.json starts `servers` (default: server-everything as `everything`), and its environment. */
function setUpProject(servers: Record<string, unknown> = { everything: EVERYTHING }): {
  project: string;
  env: NodeJS.ProcessEnv;
} {
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

/** The text of the last message of a request body (the tool result the model was sent). */
const lastText = (body: { messages: { content: string }[] }) => body.messages.at(-1)!.content;

it("a server's form is asked field by field while the call waits: wrong answers are asked again, Enter takes a default, Ctrl-C cancels the form and not the run, and the server gets what was typed", async () => {
  const { project, env } = setUpProject();
  const chat = await scriptedChatServer([
    callTurn("c1", TOOL, {}),
    callTurn("c2", TOOL, {}),
    callTurn("c3", URL_TOOL, { url: PAGE, message: "Confirm the order" }),
    callTurn("c4", URL_TOOL, { url: PAGE, errorPath: true }),
    answerTurn(() => "Thanks."),
  ]);
  try {
    const args = ["--base-url", chat.baseUrl, "--model", "m", "--no-api-key", "--cwd", project, "--no-session"];
    terminal = openTerminal([process.execPath, builtStart(), ...args, "--approve"], {
      cwd: project,
      env,
      columns: 200,
    });
    await terminal.waitFor(/MCP server everything: ready/);
    await terminal.waitFor("› ");
    terminal.type(`fill it in${KEY.enter}`);
    // the first call: cancelled at the first question; the run goes on to the second call
    await terminal.waitFor("MCP server everything asks: Please provide inputs for the following fields:");
    await terminal.waitFor("Fill in its 13 field(s)? (y: fill in, n: decline; Ctrl-C cancels at any question) ");
    terminal.type(KEY.ctrlC);
    await terminal.waitFor("(cancelled)");
    // the second call: filled in
    await terminal.waitFor("Fill in its 13 field(s)?");
    terminal.type(`y${KEY.enter}`);
    const answer = async (prompt: string, typed: string) => {
      await terminal!.waitFor(prompt);
      terminal!.type(`${typed}${KEY.enter}`);
    };
    await answer("String * (text): ", "");
    await terminal.waitFor("String is required");
    await answer("String * (text): ", "Ada");
    await answer("Boolean (y/n, Enter: leave out): ", "maybe");
    await terminal.waitFor("answer y or n");
    await answer("Boolean (y/n, Enter: leave out): ", "y");
    await answer("String with default (text, Enter: It was a dark and stormy night.): ", "");
    await answer("String with email format (an email address, Enter: leave out): ", "ada@");
    await terminal.waitFor('"ada@" is not an email address');
    await answer("String with email format (an email address, Enter: leave out): ", "ada@example.com");
    await answer("String with uri format (a URL, Enter: leave out): ", "");
    await answer("String with date format (a date (YYYY-MM-DD), Enter: leave out): ", "2026-02-30");
    await terminal.waitFor('"2026-02-30" is not a date (YYYY-MM-DD)');
    await answer("String with date format (a date (YYYY-MM-DD), Enter: leave out): ", "1815-12-10");
    await answer("Integer (a whole number, 1 to 100, Enter: 42): ", "500");
    await terminal.waitFor("give at most 100");
    await answer("Integer (a whole number, 1 to 100, Enter: 42): ", "7");
    await answer("Number in range 1-1000 (a number, 0 to 1000, Enter: 3.14): ", "");
    await terminal.waitFor("1) Monica  2) Rachel  3) Joey");
    await answer("Untitled Single Select Enum (a number 1-6, Enter: Monica): ", "3");
    await answer("Untitled Multiple Select Enum (1-3 numbers, separated by commas, Enter: Guitar): ", "1, Piano");
    await terminal.waitFor("1) Superman  2) Green Lantern  3) Wonder Woman");
    await answer("Titled Single Select Enum (a number 1-3, Enter: Superman): ", "wonder woman");
    await answer("Titled Multiple Select Enum (1-3 numbers, separated by commas, Enter: Tuna): ", "");
    await answer("Legacy Titled Single Select Enum (a number 1-5, Enter: Cats): ", "Dogs");
    await terminal.waitFor("Legacy Titled Single Select Enum: Dogs");
    await answer("Send this to everything? (y: send, n: decline) ", "y");
    // a page to open: its whole address is shown, and nothing opens it for the person
    await terminal.waitFor("MCP server everything asks you to open a page: Confirm the order");
    await terminal.waitFor(`  ${PAGE}`);
    await answer("Will you open it? (y: I open it myself, n: decline) ", "y");
    await terminal.waitFor("Thanks.");
    await terminal.waitFor("› ");
    terminal.type(`/exit${KEY.enter}`);
    expect(await terminal.exit).toBe(0);

    expect(lastText(chat.bodies[1])).toContain("⚠️ User cancelled the elicitation dialog.");
    const result = lastText(chat.bodies[2]);
    const raw = JSON.parse(result.slice(result.indexOf("Raw result: ") + "Raw result: ".length));
    expect(raw).toEqual({
      action: "accept",
      content: {
        name: "Ada",
        check: true,
        firstLine: "It was a dark and stormy night.",
        email: "ada@example.com",
        birthdate: "1815-12-10",
        integer: 7,
        number: 3.14,
        untitledSingleSelectEnum: "Joey",
        untitledMultipleSelectEnum: ["Guitar", "Piano"],
        titledSingleSelectEnum: "hero-3",
        titledMultipleSelectEnum: ["fish-1"],
        legacyTitledEnum: "pet-2",
      },
    });
    expect(lastText(chat.bodies[3])).toContain(`✅ User completed the URL elicitation flow.\nElicitation ID: `);
    // the error path (-32042): the model reads which page the person must open before trying again
    expect(lastText(chat.bodies[4])).toContain(
      "the person must open this page first, then the call can be tried again: https://modelcontextprotocol.io (Open this link to satisfy the prerequisite, then retry the request.)",
    );
  } finally {
    await chat.close();
  }
}, 90_000);

it("a question the server withdraws leaves the prompt line at once, and the next question is asked", async () => {
  const withdrawing = fileURLToPath(new URL("./fixtures/mcp/withdrawing-server.mjs", import.meta.url));
  const { project, env } = setUpProject({ w: { command: process.execPath, args: [withdrawing] } });
  const chat = await scriptedChatServer([
    callTurn("c1", "mcp__w__ask", {}),
    callTurn("c2", "mcp__w__ask", {}),
    answerTurn(() => "Noted."),
  ]);
  try {
    const args = ["--base-url", chat.baseUrl, "--model", "m", "--no-api-key", "--cwd", project, "--no-session"];
    terminal = openTerminal([process.execPath, builtStart(), ...args, "--approve"], {
      cwd: project,
      env,
      columns: 200,
    });
    await terminal.waitFor(/MCP server w: ready/);
    await terminal.waitFor("› ");
    terminal.type(`ask me${KEY.enter}`);
    await terminal.waitFor("MCP server w asks: Which color?");
    await terminal.waitFor("Fill in its 1 field(s)?");
    // nobody answers: the server gives up on its question
    await terminal.waitFor("MCP server w no longer waits for an answer: the question is withdrawn", 10_000);
    // the second call's question is asked (nothing waits behind the withdrawn one)
    await terminal.waitFor("Fill in its 1 field(s)?");
    terminal.type(`y${KEY.enter}`);
    await terminal.waitFor("color * (text): ");
    terminal.type(`blue${KEY.enter}`);
    await terminal.waitFor("Send this to w? (y: send, n: decline) ");
    terminal.type(`y${KEY.enter}`);
    await terminal.waitFor("Noted.");
    await terminal.waitFor("› ");
    terminal.type(`/exit${KEY.enter}`);
    expect(await terminal.exit).toBe(0);
    expect(lastText(chat.bodies[1])).toBe("went ahead without an answer");
    expect(lastText(chat.bodies[2])).toBe('answered: {"action":"accept","content":{"color":"blue"}}');
  } finally {
    await chat.close();
  }
}, 60_000);

it("--print declines a server's form, and says so", async () => {
  const { project, env } = setUpProject();
  const chat = await scriptedChatServer([callTurn("c1", TOOL, {}), answerTurn(() => "Done.")]);
  try {
    const args = ["--base-url", chat.baseUrl, "--model", "m", "--no-api-key", "--cwd", project, "--no-session"];
    const run = startProcess(builtStart(), [...args, "--approve", "--print", "go"], { cwd: project, env, started });
    const { code } = await run.exit;
    const { stdout, stderr } = run.output();
    expect([code, stdout]).toEqual([0, "Done.\n"]);
    expect(stderr).toContain(
      'note: MCP server everything asked for input ("Please provide inputs for the following fields:"): declined (nobody can answer in this mode)',
    );
    expect(lastText(chat.bodies[1])).toContain("❌ User declined to provide the requested information.");
  } finally {
    await chat.close();
  }
}, 60_000);
