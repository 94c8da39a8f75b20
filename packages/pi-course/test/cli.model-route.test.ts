/**
 * A catalogue name alone picks the server and the key (chapter 18): `--model deepseek-chat` goes
 * to DeepSeek's endpoint with `$DEEPSEEK_API_KEY`. Here `~/.pi-course/models.json` points the
 * providers at replay servers on 127.0.0.1, and the CLI runs as a user runs it (start.ts, so the
 * launcher hands the key over and keeps it out of the agent's environment). The precedence of
 * chapter 13 (flag, environment, config file) still wins, checked in-process.
 */
import { spawn } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CliUsageError, keyVariable, keyVariables, parseArgs, type RunOptions } from "../src/cli/args.js";
import { helpText } from "../src/cli/help.js";
import { parseEvalArgs } from "../src/cli/eval-command.js";
import { runMain } from "../src/cli/main.js";
import { setUpModel } from "../src/cli/model-setup.js";
import { SessionFolder } from "../src/cli/sessions.js";
import { assistantMessage, userMessage } from "../src/messages.js";
import { ModelCatalogue } from "../src/model-choice/catalogue.js";
import { readdir, readFile } from "node:fs/promises";
import { SseServer, fixtureSse, sseReply, statusReply } from "./support/sse-server.js";
import { startChatReplayServer } from "./support/chat-replay-server.js";
import { builtStart } from "./support/built-cli.js";

let home: string;
let workspace: string;
beforeAll(async () => {
  home = await mkdtemp(path.join(tmpdir(), "pi-course-route-home-"));
  workspace = await mkdtemp(path.join(tmpdir(), "pi-course-route-work-"));
});
afterAll(async () => {
  await rm(home, { recursive: true, force: true });
  await rm(workspace, { recursive: true, force: true });
});

/** The environment of a run: this HOME, no PI_COURSE_* and no provider keys but those given. */
function environment(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, NO_COLOR: "1", INIT_CWD: workspace };
  for (const name of Object.keys(env)) {
    if (name.startsWith("PI_COURSE_") || /_API_KEY$/.test(name)) delete env[name];
  }
  return { ...env, ...extra };
}

async function modelsFile(value: unknown): Promise<void> {
  await mkdir(path.join(home, ".pi-course"), { recursive: true });
  await writeFile(path.join(home, ".pi-course", "models.json"), JSON.stringify(value));
}

function run(
  args: string[],
  extra: NodeJS.ProcessEnv,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [builtStart(), ...args], {
      cwd: workspace,
      env: environment(extra),
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

/** A Chat Completions SSE body: one chunk per delta, then the finish reason and `[DONE]`. */
function chatSse(deltas: object[], finishReason: string): string {
  const chunk = (delta: object, finish: string | null) =>
    `data: ${JSON.stringify({ id: "chatcmpl-test", object: "chat.completion.chunk", created: 1, model: "m", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  return deltas.map((delta) => chunk(delta, null)).join("") + chunk({}, finishReason) + "data: [DONE]\n\n";
}

/** One bash call (`command`), then the answer "done". */
function bashThenDone(command: string): string[] {
  const call = {
    index: 0,
    id: "call_sh",
    type: "function",
    function: { name: "bash", arguments: JSON.stringify({ command }) },
  };
  return [
    chatSse([{ role: "assistant", tool_calls: [call] }], "tool_calls"),
    chatSse([{ role: "assistant", content: "done" }], "stop"),
  ];
}

const answer = (text: string) => [chatSse([{ role: "assistant", content: text }], "stop")];

describe("a catalogue name picks the server and the key", () => {
  it("--model deepseek-chat alone: DeepSeek's server (as models.json places it) with $DEEPSEEK_API_KEY; the key is in neither the agent's environment nor the commands'", async () => {
    // What the command sees: its own environment, and the agent's (its parent's) start-up block.
    const look =
      `echo "agent: $(tr '\\0' '\\n' < /proc/$PPID/environ | grep -c -E '^(DEEPSEEK_API_KEY|OPENAI_API_KEY)=|sk-deep')"; ` +
      `echo "command: $(env | grep -c -E '^(DEEPSEEK_API_KEY|OPENAI_API_KEY)=|sk-deep')"`;
    const deepseek = await startChatReplayServer(bashThenDone(look));
    try {
      await modelsFile({ providers: { deepseek: { baseUrl: deepseek.baseUrl } } });
      const outcome = await run(["--model", "deepseek-chat", "--cwd", workspace, "--no-session", "--json", "hi"], {
        DEEPSEEK_API_KEY: "sk-deep-test",
        OPENAI_API_KEY: "sk-openai-not-this-one",
      });
      expect(outcome.stderr).not.toContain("error");
      expect(outcome.code).toBe(0);
      expect(deepseek.requests.map((r) => [r.path, r.authorization, r.body.model])).toEqual([
        ["/v1/chat/completions", "Bearer sk-deep-test", "deepseek-chat"],
        ["/v1/chat/completions", "Bearer sk-deep-test", "deepseek-chat"],
      ]);
      const events = outcome.stdout
        .trimEnd()
        .split("\n")
        .map((line) => JSON.parse(line));
      const output: string = events.find((e) => e.type === "tool_execution_end").result.content[0].text;
      expect(output.trim().split("\n")).toEqual(["agent: 0", "command: 0"]);
      expect(outcome.stdout).not.toContain("sk-deep-test");
      // Priced from the catalogue: the answer names the model that gave it.
      const end = events.find((e) => e.type === "message_end" && e.message.role === "assistant");
      expect(end.message.model).toBe("deepseek-chat");
    } finally {
      await deepseek.close();
    }
  }, 60_000);

  it("a missing key names the variable to set, and the model and server it is for", async () => {
    await modelsFile({});
    const outcome = await run(["--model", "deepseek-chat", "--cwd", workspace, "--print", "hi"], {
      OPENAI_API_KEY: "sk-openai-not-this-one",
    });
    expect(outcome.code).toBe(2);
    expect(outcome.stderr.split("\n")[0]).toBe(
      "error: no API key: $DEEPSEEK_API_KEY is not set (deepseek-chat is served by deepseek at https://api.deepseek.com/v1). " +
        "Set it, name another variable with --api-key-env NAME, or pass --no-api-key for a local server that needs none.",
    );
    expect(outcome.stdout).toBe("");
  }, 60_000);

  it("a fallback list across providers: each model on its own provider's server with its own key; a local model needs none", async () => {
    const deepseek = await startChatReplayServer([]); // every request: HTTP 500 (retryable: falls back)
    const groq = await startChatReplayServer(answer("from groq"));
    const local = await startChatReplayServer(answer("from the local server"));
    try {
      await modelsFile({
        providers: { deepseek: { baseUrl: deepseek.baseUrl }, groq: { baseUrl: groq.baseUrl } },
        models: [
          {
            id: "house-model",
            provider: "local",
            api: "openai-compatible",
            contextWindow: 8_192,
            maxOutput: 1_024,
            baseUrl: local.baseUrl,
          },
        ],
      });
      const keys = { DEEPSEEK_API_KEY: "sk-deep-test", GROQ_API_KEY: "gsk-groq-test" };
      const outcome = await run(
        ["--model", "deepseek-chat,llama-3.3-70b-versatile", "--cwd", workspace, "--no-session", "--print", "hi"],
        keys,
      );
      expect(outcome.code).toBe(0);
      expect(outcome.stdout).toBe("from groq\n");
      expect(outcome.stderr).toMatch(/note: fell back from deepseek-chat to llama-3\.3-70b-versatile/);
      expect(deepseek.requests.map((r) => r.authorization)).toEqual(["Bearer sk-deep-test"]);
      expect(groq.requests.map((r) => [r.authorization, r.body.model])).toEqual([
        ["Bearer gsk-groq-test", "llama-3.3-70b-versatile"],
      ]);

      // A local model: no key asked for, none sent (the others' keys are not handed over either).
      const own = await run(["--model", "house-model", "--cwd", workspace, "--no-session", "--print", "hi"], keys);
      expect(own.stderr).not.toContain("error");
      expect(own.stdout).toBe("from the local server\n");
      expect(local.requests.map((r) => [r.authorization, r.body.model])).toEqual([[undefined, "house-model"]]);
    } finally {
      await Promise.all([deepseek.close(), groq.close(), local.close()]);
    }
  }, 90_000);

  it("a flag, an environment variable or a config setting still wins over the catalogue (chapter 13's precedence)", async () => {
    await modelsFile({});
    const config = path.join(home, "config.json");
    await writeFile(config, JSON.stringify({ baseUrl: "http://127.0.0.1:9/v1" }));
    const parse = (argv: string[], extra: NodeJS.ProcessEnv = {}) => {
      const options = parseArgs(["--cwd", workspace, ...argv, "hi"], environment(extra), false) as RunOptions;
      return options.server!;
    };
    const keys = { OPENAI_API_KEY: "sk-o", DEEPSEEK_API_KEY: "sk-d", ANTHROPIC_API_KEY: "sk-a" };
    // The catalogue alone.
    expect(parse(["--model", "deepseek-chat"], keys)).toMatchObject({
      provider: "openai",
      baseUrl: "https://api.deepseek.com/v1",
      apiKey: "sk-d",
      byCatalogue: true,
      keys: { DEEPSEEK_API_KEY: "sk-d" },
    });
    expect(parse(["--model", "claude-haiku-4-5"], keys)).toMatchObject({
      provider: "anthropic",
      baseUrl: "https://api.anthropic.com",
      apiKey: "sk-a",
    });
    // A base URL by flag, by environment, by config file: chapter 13's server and key.
    for (const server of [
      parse(["--model", "deepseek-chat", "--base-url", "http://127.0.0.1:9/v1"], keys),
      parse(["--model", "deepseek-chat"], { ...keys, PI_COURSE_BASE_URL: "http://127.0.0.1:9/v1" }),
      parse(["--model", "deepseek-chat", "--config", config], keys),
    ]) {
      expect(server).toMatchObject({ provider: "openai", baseUrl: "http://127.0.0.1:9/v1", apiKey: "sk-o" });
      expect(server.byCatalogue).toBeUndefined();
    }
    // A provider named: Anthropic's endpoint, whatever the model.
    expect(parse(["--model", "deepseek-chat", "--provider", "anthropic"], keys)).toMatchObject({
      provider: "anthropic",
      apiKey: "sk-a",
    });
    // --api-key-env names the key of every model of the name.
    expect(parse(["--model", "deepseek-chat", "--api-key-env", "MY_KEY"], { MY_KEY: "sk-mine" })).toMatchObject({
      baseUrl: "https://api.deepseek.com/v1",
      apiKey: "sk-mine",
      apiKeyEnv: "MY_KEY",
    });
    // A name the catalogue does not know still needs a server.
    expect(() => parse(["--model", "mystery"], keys)).toThrow(CliUsageError);
    // What the launcher hands over.
    const argv = (...more: string[]) => ["--cwd", workspace, ...more, "hi"];
    expect(keyVariable(argv("--model", "deepseek-chat"), environment())).toBe("DEEPSEEK_API_KEY");
    expect(keyVariable(argv("--model", "qwen3"), environment())).toBeUndefined();
    expect(keyVariable(argv("--model", "deepseek-chat", "--base-url", "http://x/v1"), environment())).toBe(
      "OPENAI_API_KEY",
    );
    expect(keyVariables(argv("--model", "deepseek-chat,claude-haiku-4-5,qwen3"), environment())).toEqual([
      "DEEPSEEK_API_KEY",
      "ANTHROPIC_API_KEY",
    ]);
    expect(keyVariables(argv("--model", "deepseek-chat,claude-haiku-4-5", "--no-api-key"), environment())).toEqual([]);
    expect(keyVariables(argv("--model", "deepseek-chat", "--api-key-env", "MY_KEY"), environment())).toEqual([
      "MY_KEY",
    ]);
    // pi-course eval takes the same route.
    const evalOptions = parseEvalArgs(["suite", "--model", "deepseek-chat"], environment(keys));
    expect(evalOptions !== "help" && evalOptions.server).toMatchObject({
      baseUrl: "https://api.deepseek.com/v1",
      apiKey: "sk-d",
    });
  });

  it("/model to a model of a provider whose key this run was not given is refused, naming the variable", () => {
    const options = parseArgs(
      ["--cwd", workspace, "--model", "deepseek-chat", "hi"],
      environment({ DEEPSEEK_API_KEY: "sk-d" }),
      false,
    ) as RunOptions;
    const catalogue = ModelCatalogue.builtin();
    expect(() => setUpModel(options, catalogue, "gpt-4o-mini", undefined)).toThrow(
      "gpt-4o-mini is served by openai at https://api.openai.com/v1 with the key in $OPENAI_API_KEY, which this run " +
        "was not given: set it and start with --model gpt-4o-mini",
    );
    // A model of the same provider is fine.
    expect(setUpModel(options, catalogue, "deepseek-reasoner", undefined).infos.map((i) => i.id)).toEqual([
      "deepseek-reasoner",
    ]);
  });
});

describe("the route of a virtual model, recorded in the session only when it changes", () => {
  it("a model_route entry right before the answer whose real model differs from the last recorded one; none when it is the same; --continue knows the last", async () => {
    const replay = await SseServer.start();
    const sessions = await mkdtemp(path.join(tmpdir(), "pi-course-route-sessions-"));
    const overloaded = () =>
      statusReply(529, JSON.stringify({ error: { message: "Overloaded", type: "overloaded_error" } }));
    const text = () => sseReply(fixtureSse("openai-gpt-4o-text-with-usage.sse"));
    try {
      await modelsFile({});
      // run 1: mini overloaded, 4o answers; run 2: the same; run 3: mini answers.
      replay.reply(overloaded()).reply(text()).reply(overloaded()).reply(text()).reply(text());
      const common = ["--base-url", replay.baseUrl, "--no-api-key", "--model", "gpt-4o-mini,gpt-4o"];
      const at = ["--cwd", workspace, "--session-dir", sessions, "--print"];
      let stderr = "";
      const io = {
        stdout: { write: () => true },
        stderr: { write: (t: string) => ((stderr += t), true) },
        env: environment(),
      };
      expect(await runMain([...common, ...at, "one"], io)).toBe(0);
      expect(await runMain([...common, ...at, "--continue", "two"], io)).toBe(0);
      expect(await runMain([...common, ...at, "--continue", "three"], io)).toBe(0);
      expect(stderr.match(/note: fell back from gpt-4o-mini to gpt-4o/g)).toHaveLength(2);
      expect(replay.requests.map((r) => JSON.parse(r.body).model)).toEqual([
        "gpt-4o-mini",
        "gpt-4o",
        "gpt-4o-mini",
        "gpt-4o",
        "gpt-4o-mini",
      ]);
      const [folder] = await readdir(sessions);
      const [file] = await readdir(path.join(sessions, folder!));
      const lines = (await readFile(path.join(sessions, folder!, file!), "utf8"))
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line));
      const shown = lines
        .slice(1)
        .map((e) =>
          e.type === "message"
            ? `${e.message.role}${e.message.role === "assistant" ? ` ${e.message.model}` : ""}`
            : e.type === "model_route"
              ? `route ${e.model} → ${e.provider}/${e.answeredBy} (skipped ${e.skipped.map((s: { model: string }) => s.model).join(",") || "none"})`
              : e.type,
        );
      expect(shown).toEqual([
        "user",
        "route gpt-4o-mini,gpt-4o → openai-compatible/gpt-4o (skipped gpt-4o-mini)",
        "assistant gpt-4o",
        "user",
        "assistant gpt-4o",
        "user",
        "route gpt-4o-mini,gpt-4o → openai-compatible/gpt-4o-mini (skipped none)",
        "assistant gpt-4o-mini",
      ]);
      // Each entry on the path: every line's parent is the line before it.
      for (let i = 2; i < lines.length; i++) expect(lines[i].parentId).toBe(lines[i - 1].id);
      expect(lines[2].skipped[0].error).toMatch(/Overloaded/);
    } finally {
      await replay.close();
      await rm(sessions, { recursive: true, force: true });
    }
  }, 60_000);
});

describe("--continue and the model", () => {
  it("without --model: the session's choice; an explicit --model wins, with a note, and the session goes on with it", async () => {
    const replay = await SseServer.start();
    const sessions = await mkdtemp(path.join(tmpdir(), "pi-course-continue-model-"));
    try {
      await modelsFile({});
      // a session whose user chose gpt-5-mini at thinking high (/model, /thinking)
      const session = await new SessionFolder(sessions, workspace).create();
      let at = await session.append({ type: "message", parentId: null, message: userMessage("one") });
      at = await session.append({ type: "model_change", parentId: at, model: "gpt-5-mini", thinking: "high" });
      await session.append({
        type: "message",
        parentId: at,
        message: assistantMessage([{ type: "text", text: "ok" }], "stop"),
      });
      await session.close();
      for (let i = 0; i < 3; i++) replay.reply(sseReply(fixtureSse("openai-gpt-4o-text-with-usage.sse")));
      let stderr = "";
      const io = {
        stdout: { write: () => true },
        stderr: { write: (t: string) => ((stderr += t), true) },
        env: environment(),
      };
      const common = ["--base-url", replay.baseUrl, "--no-api-key", "--cwd", workspace, "--session-dir", sessions];
      expect(await runMain([...common, "--continue", "--print", "two"], io), stderr).toBe(0);
      expect(JSON.parse(replay.requests[0]!.body)).toMatchObject({ model: "gpt-5-mini", reasoning_effort: "high" });
      expect(await runMain([...common, "--continue", "--model", "gpt-4o-mini", "--print", "three"], io), stderr).toBe(
        0,
      );
      const third = JSON.parse(replay.requests[1]!.body);
      expect(third.model).toBe("gpt-4o-mini");
      expect(third).not.toHaveProperty("reasoning_effort");
      expect(stderr).toContain(
        "note: --model gpt-4o-mini instead of the session's gpt-5-mini · thinking high; the session goes on with it",
      );
      // recorded: the next --continue goes on with gpt-4o-mini
      expect(await runMain([...common, "--continue", "--print", "four"], io), stderr).toBe(0);
      expect(JSON.parse(replay.requests[2]!.body).model).toBe("gpt-4o-mini");
    } finally {
      await replay.close();
      await rm(sessions, { recursive: true, force: true });
    }
  });

  it("without --model and a session that records no model: a usage error says to give one", async () => {
    const sessions = await mkdtemp(path.join(tmpdir(), "pi-course-continue-model-"));
    try {
      const session = await new SessionFolder(sessions, workspace).create();
      await session.append({ type: "message", parentId: null, message: userMessage("one") });
      await session.close();
      let stderr = "";
      const io = {
        stdout: { write: () => true },
        stderr: { write: (t: string) => ((stderr += t), true) },
        env: environment(),
      };
      const args = [
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--no-api-key",
        "--cwd",
        workspace,
        "--session-dir",
        sessions,
      ];
      expect(await runMain([...args, "--continue", "--print", "two"], io)).not.toBe(0);
      expect(stderr).toContain("error: --continue without --model: the session records no model; give --model NAME.");
      expect(() =>
        parseArgs(["--base-url", "http://127.0.0.1:9/v1", "--cwd", workspace, "hi"], environment(), false),
      ).toThrow(
        "--base-url needs --model NAME (the model id the server knows), or --continue / --resume ID to go on with a session's.",
      );
    } finally {
      await rm(sessions, { recursive: true, force: true });
    }
  });
});

describe("--json and cost", () => {
  it("a cost's dollars are rounded once at the edge: no float noise in the events", async () => {
    const replay = await SseServer.start();
    try {
      await modelsFile({});
      replay.reply(sseReply(fixtureSse("openai-gpt-4o-text-with-usage.sse")));
      let stdout = "";
      const io = {
        stdout: { write: (t: string) => ((stdout += t), true) },
        stderr: { write: () => true },
        env: environment(),
      };
      const args = ["--base-url", replay.baseUrl, "--no-api-key", "--model", "gpt-4o", "--cwd", workspace];
      expect(await runMain([...args, "--no-session", "--json", "hi"], io)).toBe(0);
      // 14 prompt tokens at $2.50 and 8 completion tokens at $10 per million
      const end = stdout
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line))
        .find((event) => event.type === "message_end" && event.message.role === "assistant");
      expect(end.message.cost).toEqual({
        input: 0.000035,
        output: 0.00008,
        cacheRead: 0,
        cacheWrite: 0,
        total: 0.000115,
      });
      expect(stdout).not.toMatch(/\d\.\d*0000000000\d/); // e.g. 0.000035000000000000004
    } finally {
      await replay.close();
    }
  });
});

describe("a thinking level on a model that does not reason", () => {
  it("--thinking high on gpt-4o-mini: a note and the banner say it is not sent, and the request has no reasoning_effort", async () => {
    const replay = await SseServer.start();
    try {
      await modelsFile({});
      replay.reply(sseReply(fixtureSse("openai-gpt-4o-text-with-usage.sse")));
      let stderr = "";
      const io = {
        stdout: { write: () => true },
        stderr: { write: (t: string) => ((stderr += t), true) },
        env: environment(),
      };
      const args = ["--base-url", replay.baseUrl, "--no-api-key", "--model", "gpt-4o-mini", "--thinking", "high"];
      expect(await runMain([...args, "--cwd", workspace, "--no-session", "--print", "hi"], io)).toBe(0);
      expect(stderr).toContain(
        'note: thinking level "high" ignored: the model catalogue says gpt-4o-mini does not reason',
      );
      expect(stderr).toContain("gpt-4o-mini (thinking high: not sent, the model does not reason)");
      expect(JSON.parse(replay.requests[0]!.body)).not.toHaveProperty("reasoning_effort");
    } finally {
      await replay.close();
    }
  });
});

describe("--thinking and --codemode are settings", () => {
  it('--thinking, else $PI_COURSE_THINKING, else "thinking" in the config file; a bad level names where it came from; --help lists both settings', async () => {
    await modelsFile({});
    const config = path.join(home, "thinking-config.json");
    const parse = (argv: string[], extra: NodeJS.ProcessEnv = {}) =>
      parseArgs(["--no-session", ...argv], environment(extra), false) as RunOptions;
    expect(parse([]).thinking).toBeUndefined();
    expect(parse(["--thinking", "low"]).thinking).toBe("low");
    expect(parse([], { PI_COURSE_THINKING: "high" }).thinking).toBe("high");
    await writeFile(config, JSON.stringify({ thinking: "medium" }));
    expect(parse(["--config", config]).thinking).toBe("medium");
    expect(parse(["--config", config], { PI_COURSE_THINKING: "minimal" }).thinking).toBe("minimal");
    expect(parse(["--config", config, "--thinking", "off"], { PI_COURSE_THINKING: "minimal" }).thinking).toBe("off");
    expect(() => parse([], { PI_COURSE_THINKING: "lots" })).toThrow(
      '--thinking must be one of off, minimal, low, medium, high, got "lots" (from $PI_COURSE_THINKING).',
    );
    await writeFile(config, JSON.stringify({ thinking: "max" }));
    expect(() => parse(["--config", config])).toThrow(
      `--thinking must be one of off, minimal, low, medium, high, got "max" (from "thinking" in ${config}).`,
    );
    // --help prints the table the code reads: every setting with its variable and its key.
    const help = helpText("pi-course");
    expect(help).toMatch(/^ {2}--codemode +\$PI_COURSE_CODEMODE +"codemode"$/m);
    expect(help).toMatch(/^ {2}--thinking +\$PI_COURSE_THINKING +"thinking"$/m);
    expect(help).toMatch(/^ {2}--context-tokens +\$PI_COURSE_CONTEXT_TOKENS +"contextTokens"$/m);
  });
});
