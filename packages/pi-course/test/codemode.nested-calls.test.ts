/**
 * Issue 41, item 8: no call of a script outlives the script. A script may start calls without
 * awaiting them, or be stopped by its time limit while a call runs; either way every call still in
 * flight is cancelled when the script ends (its tool sees the abort signal, the loop answers it as
 * aborted), the code tool's result comes after every nested call has ended, and nothing a
 * cancelled call would have done happens after that result.
 */
import { Type } from "typebox";
import { afterAll, describe, expect, it } from "vitest";
import { agentLoop } from "../src/agent/agent-loop.js";
import { defineTool } from "../src/agent/tools.js";
import { createCodeTool } from "../src/codemode/code-tool.js";
import { CodeSandbox } from "../src/codemode/sandbox.js";
import { userMessage } from "../src/messages.js";
import type { AgentEvent } from "../src/agent/types.js";
import type { AgentMessage, AgentToolResult, ToolResultMessage } from "../src/types.js";
import { finish } from "./support/agent-run.js";
import { call, says, scripted, turn } from "./support/messages.js";

const sandbox = new CodeSandbox();
afterAll(() => sandbox.close());

/** A tool that waits `ms` and then writes (pushes to `writes`), unless its signal fires first. */
function slowWriter(writes: number[], aborted: number[]) {
  return defineTool({
    name: "write",
    label: "Write",
    description: "Writes after a while.",
    parameters: Type.Object({ i: Type.Number(), ms: Type.Number() }),
    execute: (_id, { i, ms }, signal) =>
      new Promise<AgentToolResult<undefined>>((resolve, reject) => {
        const timer = setTimeout(() => {
          writes.push(i);
          resolve({ content: [{ type: "text", text: `wrote ${i}` }], details: undefined });
        }, ms);
        signal?.addEventListener("abort", () => {
          clearTimeout(timer);
          aborted.push(i);
          reject(new Error("aborted"));
        });
      }),
  });
}

const ends = (events: readonly AgentEvent[]) =>
  events.flatMap((event) =>
    event.type === "tool_execution_end" ? [`${event.toolCallId}${event.isError ? " error" : ""}`] : [],
  );

const resultText = (messages: readonly AgentMessage[], id: string): string => {
  const found = messages.find((m): m is ToolResultMessage => m.role === "toolResult" && m.toolCallId === id);
  return found?.content.map((block) => (block.type === "text" ? block.text : "")).join("") ?? "(no result)";
};

describe("a script's calls end with the script", () => {
  it("calls started without await are cancelled when the script returns; none writes after the answer", async () => {
    const writes: number[] = [];
    const aborted: number[] = [];
    const write = slowWriter(writes, aborted);
    const code = createCodeTool({ tools: [write], sandbox });
    const script = "for (let i = 0; i < 20; i++) tools.write({ i, ms: 300 });\nreturn 'started';";
    const model = scripted([turn([call("s1", "code", { code: script })]), says("done")]);
    let writesAtAnswer = -1;
    const { events, result } = await finish(
      agentLoop([userMessage("go")], { messages: [], tools: [code, write] }, { model }),
      (event) => {
        if (event.type === "tool_execution_end" && event.toolCallId === "s1") writesAtAnswer = writes.length;
      },
      20_000,
    );
    await new Promise((resolve) => setTimeout(resolve, 600)); // long past every write's 300 ms
    expect(writesAtAnswer).toBe(0);
    expect(writes).toEqual([]);
    expect(aborted).toHaveLength(20);
    // every nested call ended (as an error: aborted) before the code tool's own end
    const order = ends(events);
    expect(order.at(-1)).toBe("s1");
    expect(order.slice(0, -1).sort()).toEqual(Array.from({ length: 20 }, (_, i) => `s1.${i + 1} error`).sort());
    expect(resultText(result, "s1")).toBe(
      'Result: "started"\nTool calls: 20; 20 still running when the script returned were cancelled ' +
        `(${Array(20).fill("write").join(", ")}): await every call whose result you need.`,
    );
  }, 30_000);

  it("a script stopped by its time limit cancels the call it was waiting for", async () => {
    const writes: number[] = [];
    const aborted: number[] = [];
    const write = slowWriter(writes, aborted);
    const code = createCodeTool({ tools: [write], sandbox, limits: { timeoutMs: 300 } });
    const script = "await tools.write({ i: 1, ms: 5000 });\nreturn 'never';";
    const model = scripted([turn([call("s1", "code", { code: script })]), says("done")]);
    const started = Date.now();
    const { events, result } = await finish(
      agentLoop([userMessage("go")], { messages: [], tools: [code, write] }, { model }),
      () => {},
      20_000,
    );
    expect(Date.now() - started).toBeLessThan(4000);
    expect(aborted).toEqual([1]);
    expect(writes).toEqual([]);
    expect(ends(events)).toEqual(["s1.1 error", "s1 error"]);
    expect(resultText(result, "s1")).toBe(
      "The script failed (timeout): the script ran longer than 300 ms (timeoutMs) and was stopped.\n" +
        'Tool calls made before the failure (they are not undone):\n1. write {"i":1,"ms":5000} → cancelled',
    );
  }, 30_000);

  it("a call the script awaited is not cancelled: it finishes and is reported", async () => {
    const writes: number[] = [];
    const aborted: number[] = [];
    const write = slowWriter(writes, aborted);
    const code = createCodeTool({ tools: [write], sandbox });
    const model = scripted([
      turn([call("s1", "code", { code: "return await tools.write({ i: 7, ms: 50 });" })]),
      says("done"),
    ]);
    const { result } = await finish(
      agentLoop([userMessage("go")], { messages: [], tools: [code, write] }, { model }),
      () => {},
      20_000,
    );
    expect(writes).toEqual([7]);
    expect(aborted).toEqual([]);
    expect(resultText(result, "s1")).toBe('Result: "wrote 7"\nTool calls: 1');
  }, 30_000);
});
