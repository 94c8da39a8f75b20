/**
 * Chapter 16 bench: the codemode sandbox of @pi/course against `@earendil-works/pi-codemode`
 * 1.6.0's `CodemodeSandbox` (installed here only: it declares Node >= 22 but runs on 20), both
 * running QuickJS (quickjs-wasi 3.6.2) in a worker thread, on the same no-op tool.
 * Bar (issue 37): ours >= 3x faster than pi-codemode on
 *
 * (a) one script with 1 nested call, (b) one script with 100 nested calls.
 *
 * pi starts a worker for every script; ours keeps one warm worker and gives each script a fresh
 * VM. Both are measured at the sandbox (the tool is called directly, no agent pipeline), and
 * the per-call cost is (b − a) / 99. A third case runs (b) through our whole pipeline: the code
 * tool inside the agent loop, each nested call with its exposure check, validation and events.
 */
import { CodemodeSandbox } from "@earendil-works/pi-codemode";
import {
  CodeSandbox,
  ScriptedModel,
  agentLoop,
  assistantMessage,
  createCodeTool,
  defineTool,
  userMessage,
} from "@pi/course";
import { Type } from "typebox";
import { measure, printTable } from "./harness.js";

const RUNS = Number(process.env.BENCH_RUNS ?? 15);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 3);

const ONE = "return await tools.noop({ i: 0 });";
const HUNDRED = "let last;\nfor (let i = 0; i < 100; i++) last = await tools.noop({ i });\nreturn last;";

const ours = new CodeSandbox();
const oursRun = async (code: string) => {
  const outcome = await ours.run({
    code,
    tools: ["noop"],
    callTool: async () => ({ text: "ok", isError: false }),
  });
  if (!outcome.ok) throw new Error(`ours failed: ${outcome.error?.message}`);
  return outcome.value;
};

const pi = new CodemodeSandbox({
  timeoutMs: 60_000,
  tools: [{ name: "noop", execute: async () => "ok" }],
});
const piRun = async (code: string) => {
  const result = await pi.execute(code);
  if (!result.ok) throw new Error(`pi-codemode failed: ${result.error.message}`);
  return result.value;
};

// the whole pipeline: the code tool in the agent loop, one model turn with the script, one answer
const noop = defineTool({
  name: "noop",
  label: "noop",
  description: "Does nothing.",
  parameters: Type.Object({ i: Type.Number() }),
  execute: async () => ({ content: [{ type: "text", text: "ok" }], details: undefined }),
});
const codeTool = createCodeTool({ tools: [noop], sandbox: ours });
const loopRun = async (code: string) => {
  const model = new ScriptedModel(
    [
      assistantMessage([{ type: "toolCall", id: "s1", name: "code", arguments: { code } }], "toolUse"),
      assistantMessage([{ type: "text", text: "done" }], "stop"),
    ],
    { chunkSize: 100_000 },
  );
  const messages = await agentLoop([userMessage("go")], { messages: [], tools: [codeTool, noop] }, { model }).result();
  const result = messages.find((m) => m.role === "toolResult");
  if (result === undefined || (result as { isError: boolean }).isError) throw new Error("the loop's script failed");
  return messages.length;
};

try {
  await ours.warm();
  const results: Record<string, Awaited<ReturnType<typeof measure>>> = {};
  for (const [label, code] of [
    ["1 nested call", ONE],
    ["100 nested calls", HUNDRED],
  ] as const) {
    const measured = await measure(
      [
        { name: "ours", run: () => oursRun(code) },
        { name: "pi-codemode 1.6", run: () => piRun(code) },
        { name: "ours, in the loop", run: () => loopRun(code) },
      ],
      { warmup: WARMUP, runs: RUNS },
    );
    results[label] = measured;
    printTable(`one script with ${label} to a no-op tool`, measured, [
      { label: "pi-codemode / ours", num: "pi-codemode 1.6", den: "ours", bar: ">=", value: 3 },
      { label: "ours, in the loop / ours", num: "ours, in the loop", den: "ours" },
    ]);
  }
  console.log("\nper nested call, (100 calls − 1 call) / 99:");
  for (const name of ["ours", "pi-codemode 1.6", "ours, in the loop"]) {
    const one = results["1 nested call"]!.find((r) => r.name === name)!.median;
    const hundred = results["100 nested calls"]!.find((r) => r.name === name)!.median;
    console.log(`  ${name.padEnd(18)} ${(((hundred - one) / 99) * 1000).toFixed(0).padStart(6)} µs`);
  }
} finally {
  await Promise.all([ours.close(), pi.close()]);
}
