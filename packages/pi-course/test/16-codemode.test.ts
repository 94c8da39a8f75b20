import { getEventListeners } from "node:events";
import { Type } from "typebox";
import { afterAll, describe, expect, it, vi } from "vitest";
import {
  CodeSandbox,
  MAX_STACK_BYTES,
  STOP_GRACE_MS,
  agentLoop,
  assistantMessage,
  createCodeTool,
  defineTool,
  sharedSandbox,
  textOf,
  toTypeScript,
  toolDeclarations,
  userMessage,
} from "../src/index.js";
import type {
  AgentEvent,
  AgentMessage,
  AgentTool,
  AssistantMessage,
  ScriptOutcome,
  ToolCall,
  ToolExecutionContext,
  ToolExposure,
  ToolResultMessage,
} from "../src/index.js";
import { finish, grammarViolations } from "./support/agent-run.js";
import { call, says, scripted } from "./support/messages.js";

type AnyTool = AgentTool<any, any>;

/**
 * Every worker thread the sandbox starts, counted (starting one is what a warm worker saves); the
 * last one started, for tests that crash or stop it; and the workers whose messages to the host
 * are dropped (a worker stuck where the interrupt flag cannot reach it answers nothing).
 */
const workers = vi.hoisted(() => ({
  started: 0,
  last: undefined as import("node:worker_threads").Worker | undefined,
  silenced: new Set<object>(),
}));
vi.mock("node:worker_threads", async (importOriginal) => {
  const original = await importOriginal<typeof import("node:worker_threads")>();
  class CountedWorker extends original.Worker {
    constructor(...args: ConstructorParameters<typeof original.Worker>) {
      super(...args);
      workers.started++;
      workers.last = this;
    }
    override emit(event: string | symbol, ...args: unknown[]): boolean {
      if (event === "message" && workers.silenced.has(this)) return false;
      return super.emit(event, ...args);
    }
  }
  return { ...original, Worker: CountedWorker };
});

const calls = (...list: ToolCall[]): AssistantMessage => assistantMessage(list, "toolUse");

const ran: string[] = [];
const add: AnyTool = defineTool({
  name: "add",
  label: "Add",
  description: "Adds two numbers.",
  parameters: Type.Object({ a: Type.Number(), b: Type.Number() }),
  execute: async (_id, { a, b }) => {
    ran.push(`add ${a} ${b}`);
    return { content: [{ type: "text", text: String(a + b) }], details: undefined };
  },
});
const tool = (name: string, exposure?: ToolExposure, fail = false): AnyTool =>
  defineTool({
    name,
    label: name,
    description: `the ${name} tool`,
    parameters: Type.Object({}),
    ...(exposure !== undefined && { exposure }),
    execute: async () => {
      ran.push(name);
      return { content: [{ type: "text", text: `${name} ran` }], details: undefined, ...(fail && { isError: true }) };
    },
  });

/** A tool that calls other tools through its ToolExecutionContext, as the code tool does. */
const caller = (plan: [string, unknown][]): AnyTool => ({
  ...tool("caller"),
  execute: async (_id, _args, _signal, _onUpdate, context) => {
    const answers: string[] = [];
    for (const [name, args] of plan) {
      const { result, isError } = await context!.callTool(name, args);
      answers.push(
        `${name}: ${isError ? "error " : ""}${result.content.map((b) => (b.type === "text" ? b.text : "")).join("")}`,
      );
    }
    return { content: [{ type: "text", text: JSON.stringify(answers) }], details: undefined };
  },
});

const toolEvents = (events: readonly AgentEvent[]): string[] =>
  events.flatMap((event) =>
    event.type === "tool_execution_start" || event.type === "tool_execution_end"
      ? [
          `${event.type.slice(15)} ${event.toolCallId} ${event.toolName}${event.parentToolCallId ? ` ⊂ ${event.parentToolCallId}` : ""}`,
        ]
      : [],
  );
const resultText = (messages: readonly AgentMessage[], id: string): string => {
  const found = messages.find((m): m is ToolResultMessage => m.role === "toolResult" && m.toolCallId === id);
  if (found === undefined) throw new Error(`no result for ${id}`);
  return textOf(found);
};

const sandbox = new CodeSandbox();
afterAll(() => sandbox.close());
const noTools = async () => ({ text: "", isError: true });
/** Runs a script; a construction site hit inside the sandbox's host (a practice folder) is thrown, not returned. */
async function run(code: string, extra: Partial<Parameters<CodeSandbox["run"]>[0]> = {}): Promise<ScriptOutcome> {
  const outcome = await sandbox.run({ code, tools: [], callTool: noTools, ...extra });
  if (outcome.error?.message.includes("(not implemented yet)")) throw new Error(outcome.error.message);
  return outcome;
}

describe("nested calls", () => {
  it("Lab 16.1 · a tool's nested calls go through the pipeline: ids, parentToolCallId, exposure, validation, hooks", async () => {
    ran.length = 0;
    const model = scripted([calls(call("c1", "caller", {})), says("done")]);
    const plan: [string, unknown][] = [
      ["add", { a: 1, b: 2 }],
      ["add", { a: "x" }],
      ["secret", {}],
      ["only_code", {}],
      ["later", {}],
      ["blocked", {}],
      ["caller", {}],
    ];
    const tools = [
      caller(plan),
      add,
      tool("secret", "hidden"),
      tool("only_code", "codemode"),
      tool("later", "deferred"),
      tool("blocked"),
    ];
    const seen: string[] = [];
    const hooked: ToolCall[] = [];
    const { events, result } = await finish(
      agentLoop(
        [userMessage("go")],
        { messages: [], tools },
        {
          model,
          beforeToolCall: ({ toolCall }) => {
            seen.push(toolCall.id);
            hooked.push(toolCall);
            return toolCall.name === "blocked" ? { block: true, reason: "blocked by policy" } : undefined;
          },
        },
      ),
    );
    expect(grammarViolations(events, result)).toEqual([]);
    expect(toolEvents(events)).toEqual([
      "start c1 caller",
      "start c1.1 add ⊂ c1",
      "end c1.1 add ⊂ c1",
      "start c1.2 add ⊂ c1",
      "end c1.2 add ⊂ c1",
      "start c1.3 secret ⊂ c1",
      "end c1.3 secret ⊂ c1",
      "start c1.4 only_code ⊂ c1",
      "end c1.4 only_code ⊂ c1",
      "start c1.5 later ⊂ c1",
      "end c1.5 later ⊂ c1",
      "start c1.6 blocked ⊂ c1",
      "end c1.6 blocked ⊂ c1",
      "start c1.7 caller ⊂ c1",
      "end c1.7 caller ⊂ c1",
      "end c1 caller",
    ]);
    // invalid arguments (c1.2) and refusals (c1.3, c1.7) are answered before the hook
    expect(seen).toEqual(["c1", "c1.1", "c1.4", "c1.5", "c1.6"]);
    // a nested call is a tool call block like the model's: hooks read it the same way
    expect(hooked[1]).toEqual({ type: "toolCall", id: "c1.1", name: "add", arguments: { a: 1, b: 2 } });
    expect(ran).toEqual(["add 1 2", "only_code", "later"]);
    const text = JSON.parse(resultText(result, "c1")) as string[];
    expect(text[0]).toBe("add: 3");
    expect(text[1]).toMatch(/^add: error /);
    expect(text[2]).toBe(
      'secret: error Tool "secret" is not callable from a script. Callable tools: add, only_code, later, blocked.',
    );
    expect(text.slice(3, 6)).toEqual([
      "only_code: only_code ran",
      "later: later ran",
      "blocked: error blocked by policy",
    ]);
    expect(text[6]).toBe(
      'caller: error Tool "caller" is not callable from a script. Callable tools: add, only_code, later, blocked.',
    );
    // nested calls get no result messages of their own
    expect(result.filter((m) => m.role === "toolResult").map((m) => (m as ToolResultMessage).toolCallId)).toEqual([
      "c1",
    ]);
  });
  it("Lab 16.1 · a nested call's own signal aborts that call alone; the tool's next call runs", async () => {
    const seen: string[] = [];
    const waiter: AnyTool = {
      ...tool("waiter"),
      execute: (_id, _args, signal) =>
        new Promise((_resolve, reject) =>
          signal?.addEventListener("abort", () => {
            seen.push("waiter saw the abort");
            reject(new Error("stopped"));
          }),
        ),
    };
    const impatient: AnyTool = {
      ...tool("impatient"),
      execute: async (_id, _args, _signal, _onUpdate, context) => {
        const giveUp = new AbortController();
        setTimeout(() => giveUp.abort(), 20);
        const first = await context!.callTool("waiter", {}, { signal: giveUp.signal });
        const second = await context!.callTool("add", { a: 2, b: 3 });
        const text = (answer: typeof first) =>
          answer.result.content.map((b) => (b.type === "text" ? b.text : "")).join("");
        return {
          content: [{ type: "text", text: `${first.isError} ${text(first)} | ${text(second)}` }],
          details: undefined,
        };
      },
    };
    const model = scripted([calls(call("c1", "impatient", {})), says("done")]);
    const { events, result } = await finish(
      agentLoop([userMessage("go")], { messages: [], tools: [impatient, waiter, add] }, { model }),
    );
    expect(grammarViolations(events, result)).toEqual([]);
    expect(seen).toEqual(["waiter saw the abort"]);
    expect(resultText(result, "c1")).toBe(
      'true Tool call "waiter" was aborted: the run was stopped before it finished. | 5',
    );
    expect(events.at(-1)?.type).toBe("agent_end");
  });

  it("Lab 16.1 · each parent counts its own nested calls: two callers in one batch both get <id>.1 and <id>.2", async () => {
    const twice: AnyTool = {
      ...tool("twice"),
      execute: async (_id, _args, _signal, _onUpdate, context) => {
        await context!.callTool("add", { a: 1, b: 1 });
        await context!.callTool("add", { a: 2, b: 2 });
        return { content: [{ type: "text", text: "twice" }], details: undefined };
      },
    };
    const model = scripted([calls(call("p1", "twice", {}), call("p2", "twice", {})), says("done")]);
    const { events } = await finish(agentLoop([userMessage("go")], { messages: [], tools: [twice, add] }, { model }));
    const nested = events.flatMap((e) =>
      e.type === "tool_execution_start" && e.parentToolCallId !== undefined
        ? [`${e.parentToolCallId}>${e.toolCallId}`]
        : [],
    );
    expect(nested.sort(), "a nested id is <parent id>.<n>, n counted per parent from 1").toEqual([
      "p1>p1.1",
      "p1>p1.2",
      "p2>p2.1",
      "p2>p2.2",
    ]);
  });
});

describe("the sandbox", () => {
  it("Lab 16.2 · a script returns JSON, logs, and calls tools through the host", async () => {
    const asked: [string, unknown][] = [];
    const outcome = await run(
      "const a = await tools.add({ a: 1, b: 2 });\nconsole.log('sum', a, { n: 1 });\nconsole.warn('careful');\n" +
        "try { await tools.fail({}) } catch (e) { console.error(e.message) }\nreturn { a, list: [1, 'two'] };",
      {
        tools: ["add", "fail"],
        callTool: async (name, args) => {
          asked.push([name, args]);
          return name === "add" ? { text: "3", isError: false } : { text: "it broke", isError: true };
        },
      },
    );
    expect(outcome).toEqual({
      ok: true,
      value: { a: "3", list: [1, "two"] },
      logs: ['sum 3 {"n":1}', "warn: careful", "error: it broke"],
      calls: [
        { name: "add", args: { a: 1, b: 2 }, isError: false },
        { name: "fail", args: {}, isError: true },
      ],
    });
    expect(asked).toEqual([
      ["add", { a: 1, b: 2 }],
      ["fail", {}],
    ]);
  });

  it("Lab 16.2 · one warm worker runs script after script: a sandbox starts a worker once, not per script", async () => {
    const own = new CodeSandbox();
    try {
      const before = workers.started;
      for (let i = 0; i < 4; i++) {
        const outcome = await own.run({ code: `return ${i}`, tools: [], callTool: noTools });
        if (outcome.error?.message.includes("(not implemented yet)")) throw new Error(outcome.error.message);
        expect(outcome.value).toBe(i);
      }
      expect(workers.started - before, "workers started for four scripts (the worker is kept between scripts)").toBe(1);
    } finally {
      await own.close();
    }
  });

  it("Lab 16.2 · nothing but tools and console: no timers, network, process or modules; nothing kept between scripts", async () => {
    const globals = await run(
      "globalThis.kept = 42;\nreturn [typeof setTimeout, typeof setInterval, typeof fetch, typeof process, typeof require, typeof XMLHttpRequest];",
    );
    expect(globals.value).toEqual(Array(6).fill("undefined"));
    expect((await run("return typeof globalThis.kept")).value).toBe("undefined");
    expect((await run("return typeof tools.add", { tools: [] })).value).toBe("undefined");
    const imported = await run("const fs = await import('node:fs'); return 1");
    expect(imported.ok).toBe(false);
    expect(imported.error?.kind).toBe("script");
    const syntax = await run("this is not javascript(");
    expect(syntax).toMatchObject({ ok: false, error: { kind: "script" } });
    expect(syntax.error?.message).toMatch(/^SyntaxError: /);
    const thrown = await run("throw new TypeError('nope')");
    expect(thrown.error).toEqual({ kind: "script", message: "TypeError: nope" });
  });

  it("Lab 16.2 · the time limit stops a busy loop and a script that waits forever; the next script runs", async () => {
    await sandbox.warm();
    const before = workers.started;
    const busy = await run("while (true) {}", { limits: { timeoutMs: 300 } });
    expect(busy.error).toEqual({
      kind: "timeout",
      message: "the script ran longer than 300 ms (timeoutMs) and was stopped",
    });
    const waiting = await run("await new Promise(() => {})", { limits: { timeoutMs: 200 } });
    expect(waiting.error?.kind).toBe("timeout");
    expect((await run("return 'alive'")).value).toBe("alive");
    expect(workers.started, "workers started: both stopped scripts answered, the worker is kept").toBe(before);
  });

  it("Lab 16.2 · memory and stack limits end the script, not the worker", async () => {
    const memory = await run("const a = []; while (true) a.push('x'.repeat(1000) + a.length);", {
      limits: { memoryBytes: 8 * 1024 * 1024 },
    });
    expect(memory.error).toEqual({ kind: "limit", message: "InternalError: out of memory" });
    const deep = await run("function f(n) { return f(n + 1) + 1 }\nreturn f(0)");
    expect(deep.error, "deep recursion ends at QuickJS's stack limit (without one the VM crashes)").toEqual({
      kind: "limit",
      message: "RangeError: Maximum call stack size exceeded",
    });
    expect((await run("return 1 + 1")).value).toBe(2);
  });

  it("Lab 16.2 · call count, argument size and output size are limited; the calls made are listed", async () => {
    const callTool = async () => ({ text: "ok", isError: false });
    const many = await run("for (let i = 0; i < 10; i++) await tools.t({ i });", {
      tools: ["t"],
      callTool,
      limits: { maxCalls: 3 },
    });
    expect(many.error).toEqual({
      kind: "limit",
      message: "the script made more than 3 tool calls (maxCalls) and was stopped",
    });
    expect(many.calls.map((c) => c.args)).toEqual([{ i: 0 }, { i: 1 }, { i: 2 }]);
    const big = await run("await tools.t({ s: 'x'.repeat(100) })", {
      tools: ["t"],
      callTool,
      limits: { maxArgChars: 50 },
    });
    expect(big.error).toEqual({
      kind: "limit",
      message: "the arguments of tools.t are 108 characters long, more than 50 (maxArgChars); the script was stopped",
    });
    const exact = await run("return await tools.t({ s: 'x'.repeat(100) })", {
      tools: ["t"],
      callTool,
      limits: { maxArgChars: 108 },
    });
    expect(exact.value, "arguments of exactly maxArgChars characters are allowed").toBe("ok");
    const loud = await run("for (let i = 0; i < 100; i++) console.log('line ' + i); return 'x'.repeat(500)", {
      limits: { maxOutputChars: 100 },
    });
    expect(loud.error?.kind).toBe("limit");
    expect(loud.logs.at(-1)).toMatch(/^\[\d+ more console lines cut: output limit reached\]$/);
    expect(loud.logs.join("\n").length).toBeLessThan(200);
  });

  it("Lab 16.2 · an abort stops the script at once, also while a nested call is pending", async () => {
    await sandbox.warm();
    const workersBefore = workers.started;
    const controller = new AbortController();
    const started = Date.now();
    const outcome = run("await tools.slow({}); return 'finished'", {
      tools: ["slow"],
      signal: controller.signal,
      callTool: () => {
        setTimeout(() => controller.abort(), 20);
        return new Promise(() => {});
      },
    });
    expect(await outcome).toMatchObject({
      ok: false,
      error: { kind: "aborted", message: "the run was aborted; the script was stopped" },
      calls: [{ name: "slow", args: {} }],
    });
    expect(Date.now() - started).toBeLessThan(10_000);
    const before = new AbortController();
    before.abort();
    expect(await run("return 1", { signal: before.signal })).toEqual({
      ok: false,
      error: { kind: "aborted", message: "the run was aborted before the script started" },
      logs: [],
      calls: [],
    });
    expect((await run("return 'next'")).value).toBe("next");
    expect(workers.started, "workers started: the cancel message ends a waiting script, the worker is kept").toBe(
      workersBefore,
    );
  });

  it("Lab 16.2 · a call still running when the script returns is cancelled: its signal fires, the outcome waits for its answer", async () => {
    let told = false;
    const outcome = await run("tools.slow({}); return 1", {
      tools: ["slow"],
      callTool: (_name, _args, signal) =>
        new Promise((resolve) =>
          signal.addEventListener("abort", () => {
            told = true;
            setTimeout(() => resolve({ text: "stopped", isError: true }), 30);
          }),
        ),
    });
    expect(told).toBe(true);
    expect(outcome).toEqual({
      ok: true,
      value: 1,
      logs: [],
      calls: [{ name: "slow", args: {}, isError: true, cancelled: true }],
    });
  });

  it("Lab 16.2 · without a stack limit deep recursion crashes the VM: a sandbox error, and the next script runs", async () => {
    const crashed = await run("function f(n) { return f(n + 1) + 1 }\nreturn f(0)", { limits: { maxStackBytes: 0 } });
    expect(crashed.ok).toBe(false);
    expect(crashed.error).toEqual({
      kind: "sandbox",
      message: "the sandbox crashed: RuntimeError: memory access out of bounds",
    });
    expect((await run("return 'again'")).value).toBe("again");
  });

  it("Lab 16.2 · maxStackBytes is capped at MAX_STACK_BYTES (512 KiB) before it is posted: 8 MiB still runs scripts and stops deep recursion", async () => {
    expect(MAX_STACK_BYTES).toBe(512 * 1024);
    const big = { maxStackBytes: 8 * 1024 * 1024 };
    expect(await run("return 1", { limits: big }), "an 8 MiB stack limit must be capped, not posted as it is").toEqual({
      ok: true,
      value: 1,
      logs: [],
      calls: [],
    });
    const deep = await run("function f(n) { return f(n + 1) + 1 }\nreturn f(0)", { limits: big });
    expect(deep.error).toEqual({ kind: "limit", message: "RangeError: Maximum call stack size exceeded" });
  });

  it("Lab 16.2 · once the outcome is given, no timer of the run is left: a short script does not keep the process alive for timeoutMs", async () => {
    // The run's own timer is the one set for timeoutMs (30 000 ms): watch it being set and cleared.
    const realSet = globalThis.setTimeout;
    const realClear = globalThis.clearTimeout;
    const open = new Set<unknown>();
    const set = vi.spyOn(globalThis, "setTimeout").mockImplementation(((fn: () => void, ms?: number) => {
      const timer = realSet(fn, ms);
      if (ms === 30_000) open.add(timer);
      return timer;
    }) as typeof setTimeout);
    const clear = vi.spyOn(globalThis, "clearTimeout").mockImplementation(((timer?: NodeJS.Timeout) => {
      open.delete(timer);
      realClear(timer);
    }) as typeof clearTimeout);
    try {
      expect((await run("return 1", { limits: { timeoutMs: 30_000 } })).value).toBe(1);
    } finally {
      set.mockRestore();
      clear.mockRestore();
    }
    for (const timer of open) realClear(timer as NodeJS.Timeout);
    expect(open.size, "timers left after the run: the run's timer must be cleared when its outcome is given").toBe(0);
  });

  it("Lab 16.2 · a run whose signal is already aborted starts no worker", async () => {
    const own = new CodeSandbox();
    try {
      const before = workers.started;
      const aborted = new AbortController();
      aborted.abort();
      const outcome = await own.run({ code: "return 1", tools: [], callTool: noTools, signal: aborted.signal });
      expect(outcome.error).toEqual({ kind: "aborted", message: "the run was aborted before the script started" });
      expect(workers.started - before, "workers started for a run aborted before it began").toBe(0);
    } finally {
      await own.close();
    }
  });

  it("Lab 16.2 · a worker that stays silent after a stop is terminated after STOP_GRACE_MS and replaced; the next script runs", async () => {
    const own = new CodeSandbox();
    try {
      await own.warm();
      const stuck = workers.last!;
      workers.silenced.add(stuck);
      const before = workers.started;
      const first = own.run({ code: "while (true) {}", tools: [], callTool: noTools, limits: { timeoutMs: 50 } });
      const next = own.run({ code: "return 'next'", tools: [], callTool: noTools });
      expect((await first).error).toEqual({
        kind: "timeout",
        message: "the script ran longer than 50 ms (timeoutMs) and was stopped",
      });
      expect(await next, "the next script runs in a new worker once the silent one is terminated").toEqual({
        ok: true,
        value: "next",
        logs: [],
        calls: [],
      });
      expect(workers.started - before, "workers started to replace the silent one").toBe(1);
      expect(stuck.threadId, "the silent worker was terminated").toBe(-1);
    } finally {
      await own.close();
    }
  });

  it("Lab 16.2 · a worker that crashes or exits ends the script as a sandbox error; the next script gets a new worker", async () => {
    const own = new CodeSandbox();
    /** A nested call that breaks the worker while the script waits for it; it answers when it is cancelled. */
    const breaking =
      (breakIt: () => void) =>
      (_name: string, _args: unknown, signal: AbortSignal): Promise<{ text: string; isError: boolean }> => {
        breakIt();
        return new Promise((resolve) => signal.addEventListener("abort", () => resolve({ text: "", isError: true })));
      };
    try {
      const before = workers.started;
      // a message the worker cannot read throws in its thread: an uncaught error, the worker dies
      const readingNull = ((message: unknown): string => {
        try {
          return (message as { type: string }).type; // what the worker does with each message
        } catch (error) {
          return (error as Error).message;
        }
      })(null);
      const crashed = own.run({
        code: "await tools.t({}); return 'never'",
        tools: ["t"],
        callTool: breaking(() => workers.last!.postMessage(null)),
      });
      const afterCrash = own.run({ code: "return 'after the crash'", tools: [], callTool: noTools });
      expect(await crashed).toEqual({
        ok: false,
        error: {
          kind: "sandbox",
          message: `the sandbox's worker crashed: ${readingNull}`,
        },
        logs: [],
        calls: [{ name: "t", args: {}, isError: true, cancelled: true }],
      });
      expect((await afterCrash).value).toBe("after the crash");
      expect(workers.started - before, "workers started: the first, and one after the crash").toBe(2);
      const exited = await own.run({
        code: "await tools.t({}); return 'never'",
        tools: ["t"],
        callTool: breaking(() => void workers.last!.terminate()),
      });
      expect(exited).toEqual({
        ok: false,
        error: { kind: "sandbox", message: "the sandbox's worker exited" },
        logs: [],
        calls: [{ name: "t", args: {}, isError: true, cancelled: true }],
      });
      expect((await own.run({ code: "return 'after the exit'", tools: [], callTool: noTools })).value).toBe(
        "after the exit",
      );
      expect(workers.started - before, "workers started: one more after the exit").toBe(3);
    } finally {
      await own.close();
    }
  });

  it("Lab 16.2 · a finished run leaves no listener behind, on the worker or on the caller's signal", async () => {
    const own = new CodeSandbox();
    try {
      await own.warm();
      const worker = workers.last!;
      const listening = () => ["message", "error", "exit"].map((event) => worker.listenerCount(event));
      const idle = listening();
      const signal = new AbortController().signal;
      const callTool = async () => ({ text: "ok", isError: false });
      const request = { tools: ["t"], callTool, signal };
      const first = await own.run({ ...request, code: "return await tools.t({})" });
      if (first.error?.message.includes("(not implemented yet)")) throw new Error(first.error.message);
      expect(first.value).toBe("ok");
      expect((await own.run({ ...request, code: "while (true) {}", limits: { timeoutMs: 50 } })).error?.kind).toBe(
        "timeout",
      );
      const limited = await own.run({
        ...request,
        code: "await tools.t({}); await tools.t({})",
        limits: { maxCalls: 1 },
      });
      expect(limited.error?.kind).toBe("limit");
      expect((await own.run({ ...request, code: "return 'last'" })).value).toBe("last");
      expect(workers.last, "the same worker ran every script").toBe(worker);
      expect(listening(), "listeners on the worker (message, error, exit)").toEqual(idle);
      expect(getEventListeners(signal, "abort"), "abort listeners left on the caller's signal").toEqual([]);
    } finally {
      await own.close();
    }
  });

  it("Lab 16.2 · a run already stopped is not stopped again: an abort right after a limit leaves the worker alone", async () => {
    const own = new CodeSandbox();
    try {
      await own.warm();
      const worker = workers.last!;
      let exited = false;
      worker.on("exit", () => {
        exited = true;
      });
      const controller = new AbortController();
      const limited = await own.run({
        code: "tools.a({});\nawait tools.b({});",
        tools: ["a", "b"],
        limits: { maxCalls: 1 },
        signal: controller.signal,
        // the limit stop cancels this call; the caller aborts the run at that very moment
        callTool: (_name, _args, signal) =>
          new Promise((resolve) =>
            signal.addEventListener("abort", () => {
              controller.abort();
              resolve({ text: "cancelled", isError: true });
            }),
          ),
      });
      expect(limited.error).toEqual({
        kind: "limit",
        message: "the script made more than 1 tool calls (maxCalls) and was stopped",
      });
      expect(controller.signal.aborted).toBe(true);
      expect((await own.run({ code: "return 'next'", tools: [], callTool: noTools })).value).toBe("next");
      // no timer of the stopped run may still terminate the worker: wait past its grace
      await new Promise((resolve) => setTimeout(resolve, STOP_GRACE_MS + 100));
      expect(exited, "the worker was terminated after the run had ended").toBe(false);
      expect(workers.last).toBe(worker);
    } finally {
      await own.close();
    }
  });

  it("Lab 16.2 · once the script is stopped, the calls it had already sent are not run", async () => {
    const asked: unknown[] = [];
    const outcome = await run(
      "tools.t({ s: 'x'.repeat(100) });\ntools.t({ small: true });\nawait tools.t({ last: 1 });",
      {
        tools: ["t"],
        limits: { maxArgChars: 50 },
        callTool: async (_name, args) => {
          asked.push(args);
          return { text: "ok", isError: false };
        },
      },
    );
    expect(outcome.error?.kind).toBe("limit");
    // the next script starts once the worker has answered the stop: every message of the stopped one has arrived
    expect((await run("return 'next'")).value).toBe("next");
    expect(asked, "calls run after the stop").toEqual([]);
    expect(outcome.calls).toEqual([]);
  });

  it("Lab 16.2 · a limit that is no duration is refused, naming the setting", async () => {
    expect(await run("return 1", { limits: { timeoutMs: -1 } })).toEqual({
      ok: false,
      error: {
        kind: "sandbox",
        message:
          "the sandbox failed: RangeError: codemode timeoutMs must be a finite number of milliseconds ≥ 0, got -1",
      },
      logs: [],
      calls: [],
    });
  });

  it("Lab 16.2 · a call's arguments arrive as sent: JSON parsed, other text as it is; a callTool that rejects anyway is an error the script catches", async () => {
    const asked: unknown[] = [];
    const outcome = await run(
      "const sent = await tools.t({ a: [1] });\nconst stringify = JSON.stringify;\nJSON.stringify = () => 'not json';\n" +
        "const raw = await tools.t({ a: 2 });\nJSON.stringify = stringify;\n" +
        "let caught = 'no error';\ntry { await tools.broken({}) } catch (e) { caught = 'threw ' + e.message }\n" +
        "return sent + ' ' + raw + ' ' + caught;",
      {
        tools: ["t", "broken"],
        callTool: async (name, args) => {
          asked.push(args);
          if (name === "broken") throw new Error("boom");
          return { text: "ok", isError: false };
        },
      },
    );
    expect(asked).toEqual([{ a: [1] }, "not json", {}]);
    expect(outcome.calls).toEqual([
      { name: "t", args: { a: [1] }, isError: false },
      { name: "t", args: "not json", isError: false },
      { name: "broken", args: {}, isError: true },
    ]);
    expect(outcome.value).toBe("ok ok threw Error: boom");
  });
});

describe("declarations", () => {
  it("Lab 16.3 · JSON Schema as TypeScript", () => {
    expect(toTypeScript(add.parameters)).toBe("{ a: number; b: number }");
    expect(
      toTypeScript(
        Type.Object({
          path: Type.String(),
          mode: Type.Optional(Type.Union([Type.Literal("r"), Type.Literal("w")])),
          lines: Type.Array(Type.Integer()),
          tags: Type.Optional(Type.Array(Type.Union([Type.String(), Type.Null()]))),
          "odd-key": Type.Boolean(),
          meta: Type.Object({}),
        }),
      ),
    ).toBe(
      '{ path: string; mode?: "r" | "w"; lines: number[]; tags?: Array<string | null>; "odd-key": boolean; meta: Record<string, unknown> }',
    );
    expect(toTypeScript({ enum: ["a", 1] })).toBe('"a" | 1');
    expect(toTypeScript({})).toBe("unknown");
  });

  it("Lab 16.3 · no schema, empty unions, type arrays, closed objects, and a schema that contains itself", () => {
    // JSON Schema allows `true` as a schema; what is not an object says nothing about the type
    expect([null, true, "string", { const: undefined }].map((schema) => toTypeScript(schema))).toEqual(
      Array(4).fill("unknown"),
    );
    expect([{ enum: [] }, { anyOf: [] }, { oneOf: [] }].map((schema) => toTypeScript(schema))).toEqual(
      Array(3).fill("never"),
    );
    expect(toTypeScript({ type: ["string", "null"] })).toBe("string | null");
    expect(toTypeScript({ type: ["integer", "array"], items: { type: "string" } })).toBe("number | string[]");
    expect(toTypeScript({ type: "object", additionalProperties: false })).toBe("{}");
    expect(toTypeScript({ type: "object", additionalProperties: true })).toBe("Record<string, unknown>");
    // a schema built in code may contain itself: below 6 levels of nesting everything is unknown
    const list: Record<string, unknown> = { type: "array" };
    list.items = list;
    expect(toTypeScript(list)).toBe("unknown[][][][][][][]");
    const node: Record<string, unknown> = { type: "object", properties: {} };
    (node.properties as Record<string, unknown>).next = node;
    expect(toTypeScript(node)).toBe(
      "{ next?: { next?: { next?: { next?: { next?: { next?: { next?: unknown } } } } } } }",
    );
    const either: Record<string, unknown> = { anyOf: [{ type: "string" }] };
    (either.anyOf as unknown[]).push(either);
    expect(toTypeScript(either)).toBe("string | string | string | string | string | string | unknown | unknown");
    const nullable: Record<string, unknown> = { type: ["null", "array"] };
    nullable.items = nullable;
    expect(toTypeScript(nullable)).toBe("null | Array<null | Array<null | Array<unknown | unknown>>>");
  });

  it("Lab 16.3 · the declarations stay within the token budget and name the tools left out", () => {
    const tools = [add, tool("b"), tool("c")];
    expect(toolDeclarations(tools)).toBe(
      "declare const tools: {\n" +
        "  /** Adds two numbers. */\n  add(args: { a: number; b: number }): Promise<string>;\n" +
        "  /** the b tool */\n  b(args: Record<string, unknown>): Promise<string>;\n" +
        "  /** the c tool */\n  c(args: Record<string, unknown>): Promise<string>;\n" +
        "};",
    );
    const small = toolDeclarations(tools, 30);
    expect(small).toContain("add(args: { a: number; b: number }): Promise<string>;");
    expect(small).not.toContain("b(args");
    expect(small).toContain("  // also callable, same way: b, c\n");
  });
});

describe("the code tool", () => {
  it("Lab 16.4 · one script calls several tools in one turn, each through the pipeline, reported under the script", async () => {
    ran.length = 0;
    const tools: AnyTool[] = [add, tool("note", "codemode"), tool("secret", "hidden")];
    const code = createCodeTool({ tools, sandbox });
    expect(code.description).toContain("Runs JavaScript as the body of an async function in a QuickJS sandbox");
    expect(code.description).toContain("add(args: { a: number; b: number }): Promise<string>;");
    expect(code.description).toContain("note(args: Record<string, unknown>): Promise<string>;");
    expect(code.description).not.toContain("secret");
    const script =
      "const x = await tools.add({ a: 1, b: 2 });\nconst y = await tools.add({ a: Number(x), b: 10 });\n" +
      "await tools.note({});\nconsole.log('x', x);\nreturn { y };";
    const model = scripted([calls(call("s1", "code", { code: script })), says("13")]);
    const { events, result } = await finish(
      agentLoop([userMessage("add")], { messages: [], tools: [code, ...tools] }, { model }),
      () => {},
      20_000,
    );
    expect(grammarViolations(events, result)).toEqual([]);
    expect((model.requests[0]?.tools ?? []).map((t) => t.name)).toEqual(["code", "add"]);
    expect(toolEvents(events)).toEqual([
      "start s1 code",
      "start s1.1 add ⊂ s1",
      "end s1.1 add ⊂ s1",
      "start s1.2 add ⊂ s1",
      "end s1.2 add ⊂ s1",
      "start s1.3 note ⊂ s1",
      "end s1.3 note ⊂ s1",
      "end s1 code",
    ]);
    expect(ran).toEqual(["add 1 2", "add 3 10", "note"]);
    expect(resultText(result, "s1")).toBe('Result: {"y":"13"}\nConsole:\nx 3\nTool calls: 3');
  });

  it("Lab 16.4 · a nested result of several text blocks reaches the script whole; details holds the outcome with its calls", async () => {
    const two: AnyTool = {
      ...tool("two", "codemode"),
      execute: async () => ({
        content: [
          { type: "text", text: "first" },
          { type: "text", text: "second" },
        ],
        details: undefined,
      }),
    };
    const code = createCodeTool({ tools: [two], sandbox });
    const model = scripted([calls(call("s1", "code", { code: "return await tools.two({ n: 1 });" })), says("ok")]);
    const { result } = await finish(
      agentLoop([userMessage("go")], { messages: [], tools: [code, two] }, { model }),
      () => {},
      20_000,
    );
    expect(resultText(result, "s1"), "every text block of the nested result, joined by textOfContent").toBe(
      'Result: "first\\nsecond"\nTool calls: 1',
    );
    const message = result.find((m): m is ToolResultMessage => m.role === "toolResult" && m.toolCallId === "s1");
    expect(message?.details, "details is the whole outcome, the list of calls included").toEqual({
      ok: true,
      value: "first\nsecond",
      logs: [],
      calls: [{ name: "two", args: { n: 1 }, isError: false }],
    });
  });

  it("Lab 16.4 · a failed script is an error result listing the calls already made: they are not undone", async () => {
    const code = createCodeTool({ tools: [add], sandbox, limits: { timeoutMs: 400 } });
    const model = scripted([
      calls(call("s1", "code", { code: "await tools.add({ a: 1, b: 1 });\nawait tools.add({ a: 'no' });" })),
      calls(call("s2", "code", { code: "await tools.add({ a: 2, b: 2 });\nwhile (true) {}" })),
      says("ok"),
    ]);
    const { result } = await finish(
      agentLoop([userMessage("go")], { messages: [], tools: [code, add] }, { model }),
      () => {},
      20_000,
    );
    const first = resultText(result, "s1").split("\n");
    expect(first[0]).toMatch(/^The script failed \(script\): Error: /);
    expect(first.slice(-3)).toEqual([
      "Tool calls made before the failure (they are not undone):",
      '1. add {"a":1,"b":1} → ok',
      '2. add {"a":"no"} → error',
    ]);
    expect(resultText(result, "s2")).toBe(
      "The script failed (timeout): the script ran longer than 400 ms (timeoutMs) and was stopped.\n" +
        "Tool calls made before the failure (they are not undone):\n" +
        '1. add {"a":2,"b":2} → ok',
    );
    expect(result.find((m) => m.role === "toolResult" && m.toolCallId === "s2")).toMatchObject({ isError: true });
  });

  it("Lab 16.4 · the script runs in the sandbox given, else in the process's shared one", async () => {
    const context: ToolExecutionContext = {
      callTool: async () => ({
        result: { content: [{ type: "text", text: "unused" }], details: undefined },
        isError: true,
      }),
    };
    const closed = new CodeSandbox();
    await closed.close();
    const refused = await createCodeTool({ tools: [add], sandbox: closed }).execute(
      "s1",
      { code: "return 1" },
      undefined,
      undefined,
      context,
    );
    expect(refused.content).toEqual([
      {
        type: "text",
        text: "The script failed (sandbox): the sandbox failed: Error: the sandbox is closed.\nNo tool calls were made.",
      },
    ]);
    expect(refused.isError).toBe(true);
    try {
      const shared = await createCodeTool({ tools: [add] }).execute(
        "s2",
        { code: "return 1 + 1" },
        undefined,
        undefined,
        context,
      );
      expect(shared.content).toEqual([{ type: "text", text: "Result: 2\nTool calls: 0" }]);
      expect(shared.isError).toBe(false);
    } finally {
      await sharedSandbox().close();
    }
  });

  it("Lab 16.4 · the tool's signal stops the script; a nested call still running when the script returns gets its own signal", async () => {
    const code = createCodeTool({ tools: [add], sandbox, limits: { timeoutMs: 3000 } });
    const controller = new AbortController();
    const context: ToolExecutionContext = {
      callTool: async () => ({
        result: { content: [{ type: "text", text: "unused" }], details: undefined },
        isError: true,
      }),
    };
    setTimeout(() => controller.abort(), 50);
    const aborted = await code.execute("s1", { code: "while (true) {}" }, controller.signal, undefined, context);
    expect(aborted.content).toEqual([
      {
        type: "text",
        text: "The script failed (aborted): the run was aborted; the script was stopped.\nNo tool calls were made.",
      },
    ]);
    const seen: string[] = [];
    const slow: AnyTool = {
      ...tool("slow", "codemode"),
      execute: (_id, _args, signal) =>
        new Promise((resolve) =>
          signal?.addEventListener("abort", () => {
            seen.push("slow was told to stop");
            resolve({ content: [{ type: "text", text: "stopped" }], details: undefined });
          }),
        ),
    };
    const withSlow = createCodeTool({ tools: [slow], sandbox });
    const model = scripted([calls(call("s2", "code", { code: "tools.slow({}); return 1" })), says("ok")]);
    const { events, result } = await finish(
      agentLoop([userMessage("go")], { messages: [], tools: [withSlow, slow] }, { model }),
      () => {},
      20_000,
    );
    expect(grammarViolations(events, result)).toEqual([]);
    expect(seen).toEqual(["slow was told to stop"]);
    expect(toolEvents(events)).toEqual(["start s2 code", "start s2.1 slow ⊂ s2", "end s2.1 slow ⊂ s2", "end s2 code"]);
    expect(resultText(result, "s2")).toBe(
      "Result: 1\nTool calls: 1; 1 still running when the script returned were cancelled (slow): await every call whose result you need.",
    );
  });

  it("Lab 16.4 · aborting the run stops the script; outside the loop the tool refuses", async () => {
    const code = createCodeTool({ tools: [add], sandbox });
    const stream = agentLoop(
      [userMessage("go")],
      { messages: [], tools: [code, add] },
      { model: scripted([calls(call("s1", "code", { code: "while (true) {}" })), says("never")]) },
    );
    const { result } = await finish(
      stream,
      (event) => {
        if (event.type === "tool_execution_start") setTimeout(() => stream.abort(), 50);
      },
      20_000,
    );
    expect(resultText(result, "s1")).toContain("aborted");
    const alone = await code.execute("x", { code: "return 1" });
    expect(alone.isError).toBe(true);
    expect(alone.content).toEqual([
      { type: "text", text: "The code tool runs only inside the agent loop, which hands it the ToolExecutionContext." },
    ]);
  });
});
