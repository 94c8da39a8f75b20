/**
 * The conversation of chapter 19's crash tests, shared by the child that is killed and the test
 * that recovers it: two tools and a scripted model that answers by the transcript.
 *
 * - `effect` (not safe to replay): waits a little, appends its call id to the effects file, then
 *   waits a little again (so a kill can land before its effect and after it, while it runs): a
 *   line twice in that file is an effect run twice.
 * - `peek` (`replay: "safe"`): reads the effects file; running it again changes nothing.
 * - the model, by the number of tool results after the last user message (t): t = 0: a text and
 *   `effect`; t = 1: two `peek`s in one message; t = 3: `effect`; t ≥ 4: the final answer.
 *   Later user messages get the final answer at once.
 */
import { appendFile, readFile } from "node:fs/promises";
import { Type } from "typebox";
import { defineTool } from "../../src/agent/tools.js";
import { assistantMessage } from "../../src/messages.js";
import { ScriptedModel } from "../../src/models/scripted-model.js";
import type { AgentTool, Context } from "../../src/types.js";

export const DONE = "Both effects ran, once each.";

export function scriptTools(effects: string): AgentTool<any, any>[] {
  const effect = defineTool({
    name: "effect",
    label: "effect",
    description: "Records that it ran.",
    parameters: Type.Object({ step: Type.String() }),
    execute: async (toolCallId) => {
      await new Promise((resolve) => setTimeout(resolve, 30));
      await appendFile(effects, `${toolCallId}\n`);
      await new Promise((resolve) => setTimeout(resolve, 30));
      return { content: [{ type: "text", text: `recorded ${toolCallId}` }], details: undefined };
    },
  });
  const peek = defineTool({
    name: "peek",
    label: "peek",
    description: "Reads what has run.",
    parameters: Type.Object({}),
    replay: "safe",
    execute: async () => {
      const text = await readFile(effects, "utf8").catch(() => "");
      return { content: [{ type: "text", text: `ran: ${text.trim().split("\n").join(", ")}` }], details: undefined };
    },
  });
  return [effect, peek];
}

/** The model of the script; `delayMs` between events (so a kill can land mid-stream). */
export function scriptModel(delayMs: number): ScriptedModel {
  return new ScriptedModel([], { delayMs, chunkSize: 6, repeat: (context) => answer(context) });
}

function answer(context: Context) {
  const roles = context.messages.map((m) => m.role);
  const users = roles.filter((r) => r === "user").length;
  const t = roles.slice(roles.lastIndexOf("user") + 1).filter((r) => r === "toolResult").length;
  const call = (id: string, name: string, args: object) => ({ type: "toolCall" as const, id, name, arguments: args });
  if (users > 1 || t >= 4) return assistantMessage([{ type: "text", text: DONE }], "stop");
  if (t === 0)
    return assistantMessage(
      [{ type: "text", text: "First the first effect." }, call("c0", "effect", { step: "one" })],
      "toolUse",
    );
  if (t < 3) return assistantMessage([call("c1a", "peek", {}), call("c1b", "peek", {})], "toolUse");
  return assistantMessage(
    [{ type: "text", text: "Then the second." }, call("c3", "effect", { step: "two" })],
    "toolUse",
  );
}
