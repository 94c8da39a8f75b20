/**
 * Chapter 13: the wiring of `npm start`. Where each setting comes from (13.1), the sessions folder
 * (13.2), and the conversation kept in a session file: recorded as it happens, restored when it
 * is resumed (13.3). In-process and fast; the repository also drives the same wiring through a real
 * terminal (a test that is not part of this folder).
 */
import { existsSync } from "node:fs";
import { appendFile, mkdir, mkdtemp, readFile, realpath, rm, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SessionWriteError } from "../src/agent/agent-session.js";
import { CliUsageError, keyVariable, parseArgs, type RunOptions } from "../src/cli/args.js";
import { SETTINGS, resolveSettings } from "../src/cli/settings.js";
import { DEMO_REPLY, DEMO_TASK } from "../src/cli/demo.js";
import { Runtime, sessionNotes } from "../src/cli/runtime.js";
import { SessionFolder, folderKey } from "../src/cli/sessions.js";
import { textOf } from "../src/messages.js";
import { SessionFile } from "../src/session/session.js";
import type { AgentMessage } from "../src/types.js";
import type { SessionEntry } from "../src/session/types.js";

let dir: string;
const runtimes: Runtime[] = [];

beforeEach(async () => {
  // The real path: on macOS the temporary folder is a symlink (/var -> /private/var).
  dir = await realpath(await mkdtemp(path.join(tmpdir(), "pi-course-13-")));
});

afterEach(async () => {
  for (const runtime of runtimes.splice(0)) await runtime.close();
  await rm(dir, { recursive: true, force: true });
});

/** Options of an offline run whose sessions live under `dir`. */
function offline(extra: string[] = []): RunOptions {
  const options = parseArgs(
    ["--session-dir", path.join(dir, "sessions"), ...extra],
    { HOME: dir, INIT_CWD: dir },
    false,
  );
  if (options.kind !== "run") throw new Error("expected a run");
  return options;
}

async function start(options: RunOptions, notes: string[] = []): Promise<Runtime> {
  const runtime = await Runtime.start(options, (note) => notes.push(note));
  runtimes.push(runtime);
  return runtime;
}

function roles(messages: readonly AgentMessage[]): string[] {
  return messages.map((m) => ("role" in m ? m.role : "custom"));
}

async function lines(file: string): Promise<any[]> {
  return (await readFile(file, "utf8"))
    .trimEnd()
    .split("\n")
    .map((line) => JSON.parse(line));
}

/** A session file of `folder` holding only its header, last written at `written` (seconds since the epoch). */
async function writeSession(folder: SessionFolder, id: string, created: string, written: number): Promise<string> {
  await mkdir(folder.dir, { recursive: true });
  const file = path.join(folder.dir, `${created.replace(/[:.]/g, "-")}_${id}.jsonl`);
  await writeFile(
    file,
    JSON.stringify({ type: "session", version: 1, id, timestamp: created, cwd: folder.cwd }) + "\n",
  );
  await utimes(file, written, written);
  return file;
}

describe("settings: flag, then environment, then config file", () => {
  it("Lab 13.1 · resolveSettings takes the flag, else a non-empty variable, else the file, else the default, and says which", () => {
    const settings = resolveSettings(
      { model: "from-flag" },
      { PI_COURSE_MODEL: "from-env", PI_COURSE_BASE_URL: "http://env/v1", PI_COURSE_PROVIDER: "" },
      { model: "from-file", baseUrl: "http://file/v1", provider: "anthropic", apiKeyEnv: "MY_KEY" },
      { sessionDir: "/default" },
    );
    expect(settings).toEqual({
      model: { value: "from-flag", source: "flag" },
      baseUrl: { value: "http://env/v1", source: "env" },
      // An empty variable counts as unset.
      provider: { value: "anthropic", source: "config" },
      apiKeyEnv: { value: "MY_KEY", source: "config" },
      sessionDir: { value: "/default", source: "default" },
    });
    expect(resolveSettings({}, {}, {})).toEqual({});
    // apiKeyEnv has no variable: nothing of the environment is read for it (not even env["undefined"]).
    expect(resolveSettings({}, { undefined: "x" }, {})).toEqual({});
  });

  it("Lab 13.1 · parseArgs reads the server from PI_COURSE_* variables and the config file, and a flag overrides both", async () => {
    const config = path.join(dir, "config.json");
    await writeFile(config, JSON.stringify({ model: "file-model", apiKeyEnv: "FILE_KEY", sessionDir: "kept" }));
    const env = {
      HOME: dir,
      INIT_CWD: dir,
      PI_COURSE_CONFIG: config,
      PI_COURSE_BASE_URL: "http://127.0.0.1:9/v1",
      FILE_KEY: "k-file",
    };
    const fromEnvAndFile = parseArgs(["--cwd", ".", "hi"], env, false) as RunOptions;
    expect(fromEnvAndFile.server).toMatchObject({
      provider: "openai",
      baseUrl: "http://127.0.0.1:9/v1",
      model: "file-model",
      apiKey: "k-file",
    });
    expect(fromEnvAndFile.session?.root).toBe(path.join(dir, "kept"));
    expect(fromEnvAndFile.configFile).toBe(config);
    const flagged = parseArgs(
      ["--cwd", ".", "--model", "flag-model", "--base-url", "http://127.0.0.1:10/v1", "hi"],
      { ...env, PI_COURSE_MODEL: "env-model" },
      false,
    ) as RunOptions;
    expect(flagged.server).toMatchObject({ baseUrl: "http://127.0.0.1:10/v1", model: "flag-model" });
    expect(parseArgs(["--cwd", ".", "hi"], { ...env, PI_COURSE_MODEL: "env-model" }, false)).toMatchObject({
      server: { model: "env-model" },
    });
    // A value that comes from the environment is named when it is wrong.
    expect(() => parseArgs(["--cwd", ".", "hi"], { ...env, PI_COURSE_BASE_URL: "ftp://x" }, false)).toThrow(
      new CliUsageError('--base-url must be http:// or https://, got "ftp://x" (from $PI_COURSE_BASE_URL).'),
    );
    expect(() => parseArgs([], { ...env, PI_COURSE_PROVIDER: "gemini" }, false)).toThrow(
      'unknown provider "gemini" (from $PI_COURSE_PROVIDER); the providers are openai and anthropic.',
    );
  });

  it("Lab 13.1 · --context-tokens (or its variable, or the file) sets the context budget; a value that is not a whole number of at least 1000 is refused, naming where it came from", () => {
    const env = { HOME: dir, INIT_CWD: dir };
    expect(offline().contextTokens).toBeUndefined();
    expect(offline(["--context-tokens", "50000"]).contextTokens).toBe(50_000);
    expect(parseArgs([], { ...env, PI_COURSE_CONTEXT_TOKENS: "64000" }, false)).toMatchObject({
      contextTokens: 64_000,
    });
    expect(() => parseArgs([], { ...env, PI_COURSE_CONTEXT_TOKENS: "lots" }, false)).toThrow(
      new CliUsageError(
        '--context-tokens must be a whole number of tokens, at least 1000, got "lots" (from $PI_COURSE_CONTEXT_TOKENS).',
      ),
    );
    expect(() => parseArgs(["--context-tokens", "999"], env, false)).toThrow(/at least 1000, got "999"\.$/);
    expect(() => parseArgs(["--context-tokens", "1e5"], env, false)).toThrow(/got "1e5"/);
  });

  it("Lab 13.1 · a config file that is not JSON, has an unknown key or holds a key is refused with its path and what to do", async () => {
    // The default place: ~/.pi-course/config.json.
    const config = path.join(dir, ".pi-course", "config.json");
    await mkdir(path.dirname(config));
    const refuse = async (text: string) => {
      await writeFile(config, text);
      return () => parseArgs([], { HOME: dir, INIT_CWD: dir }, false);
    };
    expect(await refuse("{ model: x }")).toThrow(new RegExp(`the config file ${config} is not JSON`));
    // The keys are SETTINGS' keys: this chapter's six, in this order, then any a later chapter adds.
    expect(Object.keys(SETTINGS).slice(0, 6)).toEqual([
      "provider",
      "baseUrl",
      "model",
      "apiKeyEnv",
      "sessionDir",
      "contextTokens",
    ]);
    expect(await refuse('{"modle": "x"}')).toThrow(
      `the config file ${config} has an unknown key "modle"; the keys are ${Object.keys(SETTINGS).join(", ")}.`,
    );
    expect(await refuse('{"apiKey": "sk-1"}')).toThrow(/keep API keys out of files .* "apiKeyEnv"/);
    // Only a key that ends in "key" looks like one; any other unknown key is just unknown.
    expect(await refuse('{"keymap": "vi"}')).toThrow(`the config file ${config} has an unknown key "keymap";`);
    // Not an object (null has no keys to look at): read-json's wording, never a TypeError.
    for (const [text, got] of [
      ["null", "null"],
      ["3", "a number"],
      ['["apiKey"]', "an array of 1 item"],
    ] as const) {
      expect(await refuse(text)).toThrow(
        `the config file ${config} must be one JSON object, e.g. {"model": "gpt-4o-mini"}, got ${got}.`,
      );
    }
    expect(await refuse('{"model": 3}')).toThrow(
      `the config file ${config}: model must be a non-empty string, got a number.`,
    );
    expect(() => parseArgs(["--config", path.join(dir, "none.json")], { HOME: dir, INIT_CWD: dir }, false)).toThrow(
      /none\.json does not exist \(--config\)\.$/,
    );
  });

  it("Lab 13.1 · the launcher hands over the key variable of the provider: ANTHROPIC_API_KEY for --provider anthropic, else the one named", async () => {
    const env = { HOME: dir };
    expect(keyVariable(["--provider", "anthropic"], env)).toBe("ANTHROPIC_API_KEY");
    expect(keyVariable([], { ...env, PI_COURSE_PROVIDER: "anthropic" })).toBe("ANTHROPIC_API_KEY");
    expect(keyVariable(["--base-url", "http://x/v1"], env)).toBe("OPENAI_API_KEY");
    expect(keyVariable(["--provider", "anthropic", "--api-key-env", "MINE"], env)).toBe("MINE");
    expect(keyVariable(["--no-api-key"], env)).toBe(undefined);
    // The variable may be named in the config file too; a flag still wins.
    await mkdir(path.join(dir, ".pi-course"));
    await writeFile(path.join(dir, ".pi-course", "config.json"), JSON.stringify({ apiKeyEnv: "FROM_FILE" }));
    expect(keyVariable(["--provider", "anthropic"], env)).toBe("FROM_FILE");
    expect(keyVariable(["--api-key-env", "MINE"], env)).toBe("MINE");
    await rm(path.join(dir, ".pi-course"), { recursive: true });
    const options = parseArgs(
      ["--provider", "anthropic", "--model", "claude-x", "--cwd", ".", "hi"],
      { ...env, INIT_CWD: dir, ANTHROPIC_API_KEY: "sk-ant" },
      false,
    );
    expect(options).toMatchObject({
      server: { provider: "anthropic", model: "claude-x", apiKey: "sk-ant", workspace: dir },
    });
    expect((options as RunOptions).server?.baseUrl).toBe(undefined);
  });
});

describe("the sessions folder", () => {
  it("Lab 13.2 · list() gives the sessions of one working folder, the most recently written first, with title and size; others are apart", async () => {
    const folder = new SessionFolder(path.join(dir, "sessions"), "/work/project");
    expect(folder.dir).toBe(path.join(dir, "sessions", folderKey("/work/project")));
    expect(folderKey("/work/project")).toMatch(/^[0-9a-f]{16}$/);
    expect(folderKey("/work/project")).not.toBe(folderKey("/work/other"));
    expect(await folder.list()).toEqual([]);
    const older = await folder.create();
    await older.append({
      type: "message",
      parentId: null,
      message: { role: "user", content: [{ type: "text", text: "first\nquestion" }], timestamp: 1 },
    });
    await older.close();
    const newer = await folder.create();
    await newer.close();
    await utimes(older.path, new Date(1_000_000), new Date(1_000_000));
    const listed = await folder.list();
    expect(listed.map((s) => [s.id, s.messages, s.title])).toEqual([
      [newer.header.id, 0, ""],
      [older.header.id, 1, "first question"],
    ]);
    // --continue goes on with the newest session that holds a message.
    expect((await folder.newest())?.id).toBe(older.header.id);
    expect(await new SessionFolder(path.join(dir, "sessions"), "/work/other").list()).toEqual([]);
  });

  it("Lab 13.2 · list() orders by last write, a tie by creation; only .jsonl files are sessions; a folder it cannot read is an error", async () => {
    const folder = new SessionFolder(path.join(dir, "sessions"), dir);
    await writeSession(folder, "aaaa0001", "2026-01-01T00:00:00.000Z", 3_000);
    await writeSession(folder, "bbbb0002", "2026-01-02T00:00:00.000Z", 1_000);
    await writeSession(folder, "cccc0003", "2026-01-03T00:00:00.000Z", 1_000);
    // Written last comes first, however old; written at the same time, the one created last first.
    expect((await folder.list()).map((s) => s.id)).toEqual(["aaaa0001", "cccc0003", "bbbb0002"]);
    // A session open for writing has its lock file beside it: not a session.
    const open = await folder.create();
    try {
      expect(existsSync(`${open.path}.lock`)).toBe(true);
      expect((await folder.list()).map((s) => s.id)).toEqual([open.header.id, "aaaa0001", "cccc0003", "bbbb0002"]);
    } finally {
      await open.close();
    }
    // Only a missing folder is an empty list: a root that is a file is an error.
    await writeFile(path.join(dir, "a-file"), "");
    await expect(new SessionFolder(path.join(dir, "a-file"), dir).list()).rejects.toMatchObject({ code: "ENOTDIR" });
  });

  it("Lab 13.2 · find() takes an id or its start; none, several or an unreadable file is an error that says what to do", async () => {
    const folder = new SessionFolder(path.join(dir, "sessions"), dir);
    await expect(folder.find("zzzz")).rejects.toThrow(
      `no session "zzzz" for ${dir} in ${folder.dir} (there is none yet).`,
    );
    const session = await folder.create();
    await session.close();
    const id = session.header.id;
    expect((await folder.find(id)).file).toBe(session.path);
    expect((await folder.find(id.slice(0, 6))).id).toBe(id);
    await expect(folder.find("zzzz")).rejects.toThrow(
      `no session "zzzz" for ${dir} in ${folder.dir} (the newest: ${id.slice(0, 8)}; /sessions lists them all).`,
    );
    const broken = path.join(folder.dir, "2026-01-01T00-00-00-000Z_broken00.jsonl");
    await writeFile(broken, "not a session\n");
    const listed = await folder.list();
    expect(listed).toHaveLength(2);
    expect(listed.find((s) => s.id === "broken00")?.problem).toMatch(/broken00\.jsonl:1: not valid JSON/);
    await expect(folder.find("broken")).rejects.toThrow(`the session file ${broken} cannot be resumed:`);
    // Listed, never deleted.
    expect(await readFile(broken, "utf8")).toBe("not a session\n");
    const twinId = `${id.slice(0, 4)}ffff`;
    const twin = path.join(folder.dir, `2026-01-02T00-00-00-000Z_${twinId}.jsonl`);
    await writeFile(
      twin,
      JSON.stringify({
        type: "session",
        version: 1,
        id: twinId,
        timestamp: "2026-01-02T00:00:00.000Z",
        cwd: dir,
      }) + "\n",
    );
    await utimes(twin, 1_000, 1_000);
    await utimes(session.path, 2_000, 2_000);
    await expect(folder.find(id.slice(0, 4))).rejects.toThrow(
      `"${id.slice(0, 4)}" starts 2 session ids (${id.slice(0, 12)}, ${twinId}); give more of it.`,
    );
  });

  it("Lab 13.2 · find(): an exact id wins over a longer one it starts, an empty id matches none, and a miss names the newest five", async () => {
    const folder = new SessionFolder(path.join(dir, "sessions"), dir);
    const ids = ["cafe", "cafe0001", "cafe0002-long-id", "d0000003", "d0000004", "d0000005"];
    for (const [i, id] of ids.entries()) await writeSession(folder, id, `2026-01-0${i + 1}T00:00:00.000Z`, 1_000 + i);
    expect((await folder.find("cafe")).id).toBe("cafe");
    expect((await folder.find("cafe0001")).id).toBe("cafe0001");
    await expect(folder.find("cafe000")).rejects.toThrow(
      '"cafe000" starts 2 session ids (cafe0002-lon, cafe0001); give more of it.',
    );
    await expect(folder.find("")).rejects.toThrow(
      `no session "" for ${dir} in ${folder.dir} (the newest: d0000005, d0000004, d0000003, cafe0002, cafe0001; /sessions lists them all).`,
    );
  });
});

describe("a conversation kept in a session file", () => {
  it("Lab 13.3 · every message is appended as the agent ends it, chained; --continue restores the transcript and the model sees all of it", async () => {
    const first = await start(offline());
    await first.agent.prompt("hello");
    await first.agent.prompt("run: echo hi");
    const file = first.session!.path;
    const said = first.agent.state.messages;
    expect(roles(said)).toEqual(["user", "assistant", "user", "assistant", "toolResult", "assistant"]);
    await first.close();

    const written = await lines(file);
    expect(written[0]).toMatchObject({ type: "session", cwd: dir });
    // the messages, chained (chapter 19 adds tool_intent / tool_outcome lines beside them, off this chain)
    const entries = (written.slice(1) as SessionEntry[]).filter((e) => e.type === "message");
    expect(entries.map((e) => e.type === "message" && e.message)).toEqual(said);
    expect(entries.map((e) => e.parentId)).toEqual([null, ...entries.slice(0, -1).map((e) => e.id)]);

    const notes: string[] = [];
    const again = await start(offline(["--continue"]), notes);
    expect(notes).toEqual([]);
    expect(again.session!.path).toBe(file);
    expect(again.agent.state.messages).toEqual(said);
    await again.agent.prompt("third");
    const last = again.agent.state.messages.at(-1)!;
    expect("role" in last && last.role === "assistant" && textOf(last)).toBe(`You said: "third". ${DEMO_REPLY}`);
    const after = (await lines(file)).slice(1).filter((e) => e.type === "message");
    expect(after).toHaveLength(8);
    // The first new entry continues the old leaf.
    expect(after[6].parentId).toBe(after[5].id);
  });

  it("Lab 13.3 · /new and /resume close the session left (its lock released, an unused one removed); a session the agent refuses is closed and changes nothing", async () => {
    const runtime = await start(offline());
    await runtime.agent.prompt("hello");
    const first = runtime.session!.path;
    const said = runtime.agent.state.messages;
    await runtime.startNew();
    const second = runtime.session!.path;
    expect(second).not.toBe(first);
    expect(existsSync(`${first}.lock`)).toBe(false);
    await runtime.startNew();
    // The second took no entry: closed, and its file removed.
    expect(existsSync(second)).toBe(false);
    const third = runtime.session!.path;
    await runtime.resume(await runtime.folder!.find(path.basename(first, ".jsonl").split("_")[1]!), () => {});
    expect(runtime.session!.path).toBe(first);
    expect(runtime.agent.state.messages).toEqual(said);
    expect(existsSync(third)).toBe(false);

    // A malformed path: a compaction that keeps from an entry that is not before it.
    const bad = await runtime.folder!.create();
    const root = await bad.append({ type: "message", parentId: null, message: said[0]! });
    await bad.append({
      type: "compaction",
      parentId: root,
      summary: "lost",
      firstKeptEntryId: "nowhere",
      tokensBefore: 10,
      tokensAfter: 5,
    });
    await bad.close();
    await expect(runtime.resume(await runtime.folder!.find(bad.header.id), () => {})).rejects.toThrow(TypeError);
    // Refused: the file is closed again, and the conversation goes on in the session it was in.
    expect(existsSync(`${bad.path}.lock`)).toBe(false);
    expect(runtime.session!.path).toBe(first);
    expect(runtime.agent.state.messages).toEqual(said);
    await runtime.agent.prompt("still here");
    expect((await lines(first)).filter((e) => e.type === "message")).toHaveLength(4);
    expect((await lines(bad.path)).length).toBe(3);
  });

  it("Lab 13.3 · --context-tokens reaches the agent: a conversation past the budget is compacted into a summary in its session file", async () => {
    const runtime = await start(offline(["--context-tokens", "1000"]));
    for (const word of ["alpha", "beta", "gamma"]) await runtime.agent.prompt(`${word} `.repeat(400));
    const entries = (await lines(runtime.session!.path)).slice(1) as SessionEntry[];
    const compaction = entries.find((e) => e.type === "compaction");
    expect(compaction, "a compaction entry in the session file").toBeDefined();
    // the whole history stays on disk; the transcript now starts from the summary
    expect(entries.filter((e) => e.type === "message")).toHaveLength(6);
    expect(runtime.agent.state.messages.length).toBeLessThan(6);
    // Three runs and a compaction in process: seconds, but a loaded machine took more than 10.
  }, 30_000);

  it("Lab 13.3 · a torn last line is reported, skipped and kept; the session still resumes and goes on", async () => {
    const first = await start(offline());
    await first.agent.prompt("remember the milk");
    const file = first.session!.path;
    await first.close();
    await appendFile(file, '{"type":"message","id":"torn');
    const notes: string[] = [];
    const again = await start(offline(["--resume", path.basename(file, ".jsonl").split("_")[1]!.slice(0, 8)]), notes);
    expect(notes).toEqual([
      expect.stringMatching(
        /^the session file ends in a torn line \(28 bytes on line 4, a crash mid-write\?\); it is skipped, and kept in the file$/,
      ),
    ]);
    expect(roles(again.agent.state.messages)).toEqual(["user", "assistant"]);
    await again.agent.prompt("and eggs");
    expect(again.agent.state.messages.map((m) => ("role" in m && m.role === "user" ? textOf(m) : "·"))).toEqual([
      "remember the milk",
      "·",
      "and eggs",
      "·",
    ]);
    await again.close();
    const reread = await SessionFile.open(file);
    try {
      expect(reread.recovery.kept).toHaveLength(1);
      expect(sessionNotes(reread)).toEqual(["1 torn line(s) of earlier crashes are skipped"]);
    } finally {
      await reread.close();
    }
  });

  it("Lab 13.3 · the newest compaction starts the restored transcript with its summary, and resuming says so", async () => {
    const first = await start(offline());
    await first.agent.prompt("one");
    await first.agent.prompt("two");
    const session = first.session!;
    const entries = session.entries();
    await session.append({
      type: "compaction",
      parentId: session.leaf!.id,
      summary: "We said one.",
      firstKeptEntryId: entries[2]!.id,
      tokensBefore: 100,
      tokensAfter: 40,
    });
    await first.close();
    const notes: string[] = [];
    const again = await start(offline(["--continue"]), notes);
    expect(notes).toEqual(["earlier messages are condensed into a summary (/compact)"]);
    const messages = again.agent.state.messages;
    expect(roles(messages)).toEqual(["user", "user", "assistant"]);
    expect(textOf(messages[0] as any)).toContain("<summary>\nWe said one.\n</summary>");
    await again.agent.prompt("three");
    const file = (await lines(again.session!.path)).slice(1);
    expect(file.at(-2).parentId).toBe(file.at(-3).id);
    expect(file.at(-3).type).toBe("compaction");
  });

  it("Lab 13.3 · an abort during a tool call leaves every call answered on disk, and a write that fails stops the run instead of losing it", async () => {
    const runtime = await start(offline());
    const running = runtime.agent.prompt("run: sleep 5");
    await new Promise<void>((resolve) => {
      const off = runtime.agent.subscribe((event) => {
        if (event.type === "tool_execution_start") {
          off();
          resolve();
        }
      });
    });
    runtime.agent.abort();
    await running;
    const file = runtime.session!.path;
    const messages = (await lines(file)).slice(1).map((e) => e.message);
    expect(messages.map((m) => m.role)).toEqual(["user", "assistant", "toolResult"]);
    expect(messages[2].toolCallId).toBe(messages[1].content[0].id);
    expect(messages[2].isError).toBe(true);

    // The file goes away under the conversation: the next message cannot be kept, so the run stops.
    await runtime.session!.close();
    await expect(runtime.agent.prompt("hello")).rejects.toThrow(SessionWriteError);
    expect((await lines(file)).length).toBe(4);
  }, 10_000);

  it("Lab 13.3 · the demo task still plays its four turns, and a session is created only where the sessions folder says", async () => {
    const runtime = await start(offline());
    await runtime.agent.prompt(DEMO_TASK);
    const answer = runtime.agent.state.messages.at(-1)!;
    expect("role" in answer && answer.role === "assistant" && textOf(answer)).toContain("ok: Hello, pi!");
    expect(path.dirname(runtime.session!.path)).toBe(path.join(dir, "sessions", folderKey(dir)));
    // the header and the eight messages (chapter 19 adds its tool_intent / tool_outcome lines)
    expect(
      (await lines(runtime.session!.path)).filter((l) => l.type === "session" || l.type === "message").length,
    ).toBe(1 + 8);
    await mkdir(path.join(dir, "elsewhere"));
    const none = await start(offline(["--no-session"]));
    expect(none.session).toBe(undefined);
    await none.agent.prompt("hi");
    // A conversation left before its first prompt leaves no file; one that went on is kept.
    const left = await start(offline());
    const unused = left.session!.path;
    await left.close();
    expect(existsSync(unused)).toBe(false);
    expect(existsSync(runtime.session!.path)).toBe(true);
  }, 10_000);
});
