/**
 * `/tree`, `/fork`, `/label`, `/export` and `--continue` after a fork, as a person uses them: the
 * interactive mode in a real pseudo-terminal (support/terminal.ts), against a local server on
 * 127.0.0.1 that replays Chat Completions streams and records what each request carried, so the
 * tests see which branch the agent really went on from.
 */
import { mkdtemp, readFile, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { folderKey } from "../src/cli/sessions.js";
import { SseServer, sseReply } from "./support/sse-server.js";
import { KEY, openTerminal, type PseudoTerminal } from "./support/terminal.js";
import { builtStart } from "./support/built-cli.js";

const PROMPT = "› ";
/** A start-up (tsx compiling the CLI) on a loaded 2-core machine can take many seconds. */
const START_MS = 40_000;

let home: string;
let workspace: string;
const terminals: PseudoTerminal[] = [];
let server: SseServer | undefined;

beforeAll(async () => {
  home = await mkdtemp(path.join(tmpdir(), "pi-course-view-home-"));
  workspace = await mkdtemp(path.join(tmpdir(), "pi-course-view-work-"));
});
afterEach(async () => {
  for (const terminal of terminals.splice(0)) terminal.kill();
});
afterAll(async () => {
  await server?.close();
  await rm(home, { recursive: true, force: true });
  await rm(workspace, { recursive: true, force: true });
});

function terminal(args: string[]): PseudoTerminal {
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, TERM: "xterm-256color", INIT_CWD: workspace };
  for (const name of [
    "NO_COLOR",
    "PI_COURSE_CONFIG",
    "PI_COURSE_BASE_URL",
    "PI_COURSE_MODEL",
    "PI_COURSE_PROVIDER",
    "PI_COURSE_SESSION_DIR",
  ])
    delete env[name];
  const opened = openTerminal(
    [
      process.execPath,
      builtStart(),
      "--base-url",
      server!.baseUrl,
      "--model",
      "replay",
      "--no-api-key",
      "--cwd",
      workspace,
      ...args,
    ],
    {
      cwd: workspace,
      env,
      columns: 100,
    },
  );
  terminals.push(opened);
  return opened;
}

/** A Chat Completions stream of one text answer. */
function answer(text: string): string {
  const chunk = (delta: object, reason: string | null) =>
    `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "m", choices: [{ index: 0, delta, finish_reason: reason }] })}\n\n`;
  return chunk({ role: "assistant", content: text }, null) + chunk({}, "stop") + "data: [DONE]\n\n";
}

/** What the n-th request sent, as `role: text` (the system prompt left out). */
function sent(n: number): string[] {
  const messages = JSON.parse(server!.requests[n]!.body).messages as { role: string; content: string }[];
  return messages.filter((m) => m.role !== "system").map((m) => `${m.role}: ${m.content}`);
}

async function ask(t: PseudoTerminal, text: string, reply: string): Promise<void> {
  t.type(`${text}${KEY.enter}`);
  await t.waitFor(reply);
  await t.waitFor(PROMPT);
}

/** One whole line of the screen. */
function line(text: string): RegExp {
  return new RegExp(`^${text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`, "m");
}

async function command(t: PseudoTerminal, typed: string, ...expected: (string | RegExp)[]): Promise<void> {
  t.type(`${typed}${KEY.enter}`);
  for (const text of expected) await t.waitFor(text);
  await t.waitFor(PROMPT);
}

describe("the session tree in the conversation", () => {
  it("/tree shows the branches, /fork goes on from an earlier message, /label names it, and --continue resumes the branch last chosen", async () => {
    server = await SseServer.start();
    for (const text of ["Answer one.", "Answer two.", "Answer three.", "Answer four.", "Answer five."])
      server.reply(sseReply(answer(text)));

    const t = terminal([]);
    await t.waitFor(PROMPT, START_MS);
    await ask(t, "first", "Answer one.");
    await ask(t, "second", "Answer two.");
    await command(
      t,
      "/tree",
      "4 messages, 1 branch",
      line("1 user: first"),
      line("2 assistant: Answer one."),
      line("3 user: second"),
      line("4 assistant: Answer two.  ← here"),
    );
    await command(
      t,
      "/fork 2",
      "forked: going on after message 2; your next message starts a new branch (2 messages in context):",
      line("› first"),
      "Answer one.",
    );
    await command(
      t,
      "/tree",
      line("2 assistant: Answer one.  ← here (your next message starts a new branch)"),
      line("3 user: second"),
      line("4 assistant: Answer two."),
    );
    await ask(t, "third", "Answer three.");
    expect(sent(2)).toEqual(["user: first", "assistant: Answer one.", "user: third"]);
    await command(t, "/label the retry", "labelled message 6: the retry");
    await command(
      t,
      "/tree",
      "6 messages, 2 branches",
      line("1 user: first"),
      line("2 assistant: Answer one."),
      line("├─ 3 user: second"),
      line("│  4 assistant: Answer two."),
      line("5 user: third"),
      line("6 assistant: Answer three. [the retry]  ← here"),
    );
    await command(t, "/fork 99", "error: there is no message 99: /tree numbers them 1 to 6");
    await command(t, "/fork 1 start over", "forked: going on after message 1"); // a label names the fork point
    // Leave right after the fork, before any message on the new branch.
    t.type(KEY.ctrlD);
    expect(await t.exit).toBe(0);

    const again = terminal(["--continue"]);
    await again.waitFor("earlier in this session (1 messages):", START_MS);
    await again.waitFor(PROMPT);
    await command(
      again,
      "/tree",
      line("1 user: first [start over]  ← here (your next message starts a new branch)"),
      line("6 assistant: Answer three. [the retry]"),
    );
    await ask(again, "fourth", "Answer four.");
    expect(sent(3)).toEqual(["user: first", "user: fourth"]);
    await command(
      again,
      "/tree",
      "8 messages, 3 branches",
      line("├─ 2 assistant: Answer one."),
      line("│  ├─ 3 user: second"),
      line("│  6 assistant: Answer three. [the retry]"),
      line("7 user: fourth"),
      line("8 assistant: Answer four.  ← here"),
    );
    await command(again, "/export", "wrote", ".html", "(8 messages, 3 branches)");
    const out = path.join(workspace, "page.html");
    await command(again, `/export ${out}`, `(8 messages, 3 branches)`);
    await command(
      again,
      "/export nope.jsonl",
      "error: refusing to write the page to nope.jsonl: that is a session file",
    );
    again.type(`/exit${KEY.enter}`);
    expect(await again.exit).toBe(0);

    // The session file: append-only, three branches; the default page is beside it.
    const dir = path.join(home, ".pi-course", "sessions", folderKey(workspace));
    const names = (await readdir(dir)).sort();
    expect(names.filter((n) => n.endsWith(".jsonl"))).toHaveLength(1);
    expect(names.filter((n) => n.endsWith(".html"))).toEqual([
      names.find((n) => n.endsWith(".jsonl"))!.replace(/\.jsonl$/, ".html"),
    ]);
    const lines = (await readFile(path.join(dir, names.find((n) => n.endsWith(".jsonl"))!), "utf8"))
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => l.type)).toEqual([
      "session",
      "message",
      "message",
      "message",
      "message",
      "label",
      "message",
      "message",
      "label",
      "label",
      "message",
      "message",
    ]);
    const page = await readFile(out, "utf8");
    expect(page).toContain("Answer four.");
    expect(page).toContain("the retry");

    // A restart goes on from the newest branch's end.
    const third = terminal(["--continue"]);
    await third.waitFor("earlier in this session (3 messages):", START_MS);
    await third.waitFor(PROMPT);
    await ask(third, "fifth", "Answer five.");
    expect(sent(4)).toEqual(["user: first", "user: fourth", "assistant: Answer four.", "user: fifth"]);
    third.type(KEY.ctrlD);
    expect(await third.exit).toBe(0);
  }, 180_000);
});
