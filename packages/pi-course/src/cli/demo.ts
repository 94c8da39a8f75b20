/**
 * The offline demo of the main job: a fresh temporary workspace with a small bug, and a scripted
 * model that fixes it the way a real coding model would: read the file, edit it, run the check,
 * answer. Each turn after the first reads the previous tool result, so the answer reports what
 * really happened (and a failed tool stops the script honestly). In a conversation the model
 * also runs a command it is given (`run: ls`) and answers anything else with an echo.
 */
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { assistantMessage, textOf } from "../messages.js";
import { ScriptedModel, type ScriptedTurn } from "../models/scripted-model.js";
import type { AssistantContent, AssistantMessage, Context } from "../types.js";

/** What the user asks in the demo. */
export const DEMO_TASK =
  "greeting.mjs has a typo, so `node check.mjs` fails. Fix it and show me that the check passes.";

export const DEMO_FILES: Readonly<Record<string, string>> = {
  "greeting.mjs": ["// Says hello.", "export function greet(name) {", '  return "Helo, " + name + "!";', "}", ""].join(
    "\n",
  ),
  "check.mjs": [
    'import { greet } from "./greeting.mjs";',
    "",
    'const got = greet("pi");',
    'if (got !== "Hello, pi!") {',
    '  console.error(`expected "Hello, pi!", got ${JSON.stringify(got)}`);',
    "  process.exit(1);",
    "}",
    "console.log(`ok: ${got}`);",
    "",
  ].join("\n"),
};

/** A new temporary folder holding `DEMO_FILES`. */
export async function createDemoWorkspace(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), "pi-course-demo-"));
  for (const [name, content] of Object.entries(DEMO_FILES)) {
    await writeFile(path.join(dir, name), content);
  }
  return dir;
}

function turn(content: AssistantContent[], stopReason: "stop" | "toolUse"): AssistantMessage {
  return assistantMessage(content, stopReason, { usage: { input: 0, output: 0, totalTokens: 0 } });
}

/** The last tool result's text, or a final answer that stops the run when that tool failed. */
function lastResult(context: Context): { text: string; failed?: AssistantMessage } {
  const last = context.messages[context.messages.length - 1];
  if (last?.role !== "toolResult") {
    return {
      text: "",
      failed: turn([{ type: "text", text: "I expected a tool result here and got none, so I stop." }], "stop"),
    };
  }
  const text = textOf(last);
  if (last.isError) {
    return {
      text,
      failed: turn([{ type: "text", text: `The ${last.toolName} call failed:\n${text}\nI stop here.` }], "stop"),
    };
  }
  return { text };
}

/** The demo's four turns for `DEMO_TASK`: read, edit, run the check, answer. */
function demoTurn(step: number, context: Context): AssistantMessage {
  if (step === 0) {
    return turn(
      [
        { type: "text", text: "Let me look at greeting.mjs first." },
        { type: "toolCall", id: "call_read_1", name: "read", arguments: { path: "greeting.mjs" } },
      ],
      "toolUse",
    );
  }
  const { text, failed } = lastResult(context);
  if (failed) return failed;
  if (step === 1) {
    const line =
      text
        .split("\n")
        .find((l) => l.includes("Helo"))
        ?.split("\t")[0]
        ?.trim() ?? "?";
    return turn(
      [
        { type: "text", text: `Line ${line} says "Helo"; it should say "Hello". Fixing it.` },
        {
          type: "toolCall",
          id: "call_edit_2",
          name: "edit",
          arguments: { path: "greeting.mjs", edits: [{ oldText: '"Helo, "', newText: '"Hello, "' }] },
        },
      ],
      "toolUse",
    );
  }
  if (step === 2) {
    return turn(
      [
        { type: "text", text: "Now the check." },
        { type: "toolCall", id: "call_bash_3", name: "bash", arguments: { command: "node check.mjs" } },
      ],
      "toolUse",
    );
  }
  return turn(
    [
      {
        type: "text",
        text: `Fixed: greeting.mjs now says "Hello, " instead of "Helo, ". \`node check.mjs\` prints:\n${text}`,
      },
    ],
    "stop",
  );
}

/** What the demo model says to anything but its task and `run: COMMAND`. */
export const DEMO_REPLY =
  "I am the offline demo model: I can fix greeting.mjs (the suggested task) and run a command you give me " +
  "as `run: COMMAND`. For a real conversation, start with --base-url URL --model NAME --cwd DIR.";

/**
 * One turn of the demo model, from the context alone: the demo task plays its four turns;
 * `run: COMMAND` runs the command with bash and reports its output; anything else gets an echo
 * and `DEMO_REPLY`. So a conversation of many prompts (and steering) works offline.
 */
function demoResponder(context: Context): AssistantMessage {
  const messages = context.messages;
  let asked = messages.length - 1;
  while (asked >= 0 && messages[asked]!.role !== "user") asked--;
  const prompt = asked >= 0 ? textOf(messages[asked]!) : "";
  const step = messages.slice(asked + 1).filter((m) => m.role === "assistant").length;
  if (prompt === DEMO_TASK && step < 4) return demoTurn(step, context);
  const command = /^run:\s*(.+)$/s.exec(prompt.trim())?.[1];
  if (command !== undefined && step === 0) {
    const id = `call_run_${messages.length}`;
    return turn([{ type: "toolCall", id, name: "bash", arguments: { command } }], "toolUse");
  }
  if (command !== undefined && step === 1) {
    const { text, failed } = lastResult(context);
    return failed ?? turn([{ type: "text", text: `\`${command}\` printed:\n${text}` }], "stop");
  }
  return turn([{ type: "text", text: `You said: "${prompt}". ${DEMO_REPLY}` }], "stop");
}

/**
 * The scripted model of the demo. `delayMs` slows the deltas down so a person can watch them
 * arrive (the main job uses it on a terminal).
 */
export function createDemoModel(options: { delayMs?: number } = {}): ScriptedModel {
  // One responder per call: a long conversation never runs out of turns.
  const turns: ScriptedTurn[] = Array.from({ length: 10_000 }, () => demoResponder);
  return new ScriptedModel(turns, {
    provider: "scripted",
    id: "scripted-demo",
    ...(options.delayMs !== undefined && { delayMs: options.delayMs }),
  });
}
