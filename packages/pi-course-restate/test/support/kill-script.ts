/**
 * The conversation the failover test runs on the workers, with its kill points: every place a
 * worker may be SIGKILLed waits there for the test's word.
 *
 * A kill point is a marker file `<run>.<point>@<pid>` in the run's `markers` folder; the code then
 * waits for `<run>.<point>.go` (the test writes it, or kills the pid instead). Points:
 * `turnN.stream` (after the first delta of model turn N), `<call>.before` and `<call>.after` (an
 * `effect` call, around its effect), `<call>.peek` (a `peek` call, while it runs).
 *
 * - `effect` (not safe to replay): appends `<run> <call id>` to the `effects` file: a line twice
 *   is an effect run twice. Found interrupted, it says `settledText`.
 * - `peek` (`replay: "safe"`): reads the effects file.
 * - the model, by the number of tool results after the prompt (t): t = 0: a text and `effect` c0;
 *   t = 1: two `peek`s (c1a, c1b) in one message; t = 3: a text and `effect` c3; t ≥ 4: `DONE`.
 */
import { existsSync } from "node:fs";
import { appendFile, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import {
  type AgentTool,
  AssistantMessageEventStream,
  type Context,
  defineTool,
  type Model,
  ScriptedModel,
  assistantMessage,
} from "@pi/course";
import { Type } from "typebox";
import type { RunSetups } from "../../src/agent-run.js";

export const DONE = "Both effects are done.";

/** What `effect` says when a call of it is found interrupted. */
export function settledText(toolCallId: string): string {
  return `Nothing of ${toolCallId} is still running.`;
}

/** What a run of the script is given. */
export interface KillScriptOptions {
  /** The folder of kill points (none: the run never waits). */
  markers?: string;
  /** The file each effect appends to. */
  effects: string;
}

/** Waits at kill point `point` of run `runId` until the test says go (or kills this process). */
async function pause(markers: string | undefined, runId: string, point: string): Promise<void> {
  if (markers === undefined) return;
  const name = `${runId}.${point}`;
  await writeFile(path.join(markers, `${name}@${process.pid}`), "");
  const go = path.join(markers, `${name}.go`);
  while (!existsSync(go)) await new Promise((resolve) => setTimeout(resolve, 5));
}

export function scriptTools(runId: string, options: KillScriptOptions, effectName = "effect"): AgentTool<any, any>[] {
  const effect = defineTool({
    name: effectName,
    label: effectName,
    description: "Records that it ran.",
    parameters: Type.Object({ step: Type.String() }),
    execute: async (toolCallId) => {
      await pause(options.markers, runId, `${toolCallId}.before`);
      await appendFile(options.effects, `${runId} ${toolCallId}\n`);
      await pause(options.markers, runId, `${toolCallId}.after`);
      return { content: [{ type: "text", text: `recorded ${toolCallId}` }], details: undefined };
    },
    // what recovery's interrupted text adds (chapter 19's `settleInterrupted`)
    settleInterrupted: (toolCallId) => settledText(toolCallId),
  });
  const peek = defineTool({
    name: "peek",
    label: "peek",
    description: "Reads what has run.",
    parameters: Type.Object({}),
    replay: "safe",
    execute: async (toolCallId) => {
      await pause(options.markers, runId, `${toolCallId}.peek`);
      const mine = (await readFile(options.effects, "utf8").catch(() => ""))
        .split("\n")
        .filter((line) => line.startsWith(`${runId} `)).length;
      return { content: [{ type: "text", text: `effects so far: ${mine}` }], details: undefined };
    },
  });
  return [effect, peek];
}

/** The script's model; it waits at `turnN.stream` after the first delta of each turn. */
export function scriptModel(runId: string, options: KillScriptOptions, effectName = "effect"): Model {
  const inner = new ScriptedModel([], {
    delayMs: 1,
    chunkSize: 6,
    now: () => 0,
    repeat: (context) => answer(context, effectName),
  });
  return {
    provider: inner.provider,
    id: inner.id,
    stream(context, streamOptions) {
      const turn = context.messages.filter((m) => m.role === "assistant").length;
      const out = new AssistantMessageEventStream();
      void (async () => {
        let paused = false;
        for await (const event of inner.stream(context, streamOptions)) {
          out.push(event);
          if (!paused && (event.type === "text_delta" || event.type === "toolcall_delta")) {
            paused = true;
            await pause(options.markers, runId, `turn${turn}.stream`);
          }
        }
      })();
      return out;
    },
  };
}

function answer(context: Context, effectName: string) {
  const roles = context.messages.map((m) => m.role);
  const t = roles.slice(roles.lastIndexOf("user") + 1).filter((r) => r === "toolResult").length;
  const call = (id: string, name: string, args: object) => ({ type: "toolCall" as const, id, name, arguments: args });
  const at = { timestamp: 0 };
  if (t >= 4) return assistantMessage([{ type: "text", text: DONE }], "stop", at);
  if (t === 0) {
    return assistantMessage(
      [{ type: "text", text: "First the first effect." }, call("c0", effectName, { step: "one" })],
      "toolUse",
      at,
    );
  }
  if (t < 3) return assistantMessage([call("c1a", "peek", {}), call("c1b", "peek", {})], "toolUse", at);
  return assistantMessage(
    [{ type: "text", text: "Then the second." }, call("c3", effectName, { step: "two" })],
    "toolUse",
    at,
  );
}

/** The setups of the script whose `effect` tool is named `effectName` (another name: other code, whose replay of an old run diverges). */
export function killScriptSetups(effectName = "effect"): RunSetups {
  return {
    "kill-script": ({ runId, options }) => {
      const given = options as KillScriptOptions;
      return { model: scriptModel(runId, given, effectName), tools: scriptTools(runId, given, effectName) };
    },
  };
}

/** The setups the test's workers are started with. */
export const setups: RunSetups = killScriptSetups();
