/**
 * Setups for the operations tests (`runs.test.ts`):
 *
 * - `hold`: the model asks for `wait` (not safe to replay), which writes `<dir>/<run>.waiting` and
 *   then waits until `<dir>/<run>.go` exists, paying no heed to its abort signal; then answers
 *   `released`. With `options.stall` it never finishes (and still ignores its signal): only a
 *   time limit ends it.
 */
import { existsSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { assistantMessage, defineTool, ScriptedModel } from "@pi/course";
import { Type } from "typebox";
import type { RunSetups } from "../../src/agent-run.js";

interface HoldOptions {
  dir: string;
  stall?: boolean;
}

export const setups: RunSetups = {
  hold: ({ runId, options }) => {
    const { dir, stall = false } = options as HoldOptions;
    const wait = defineTool({
      name: "wait",
      label: "wait",
      description: "Waits for the test's word.",
      parameters: Type.Object({}),
      execute: async () => {
        await writeFile(path.join(dir, `${runId}.waiting`), "");
        const go = path.join(dir, `${runId}.go`);
        while (stall || !existsSync(go)) await new Promise((resolve) => setTimeout(resolve, 10));
        return { content: [{ type: "text", text: "went" }], details: undefined };
      },
    });
    const model = ScriptedModel.repeat(({ messages }) => {
      const result = messages.find((m) => m.role === "toolResult");
      if (result === undefined)
        return assistantMessage([{ type: "toolCall", id: "c1", name: "wait", arguments: {} }], "toolUse");
      const said = result.role === "toolResult" ? result.content.map((c) => ("text" in c ? c.text : "")).join("") : "";
      return assistantMessage([{ type: "text", text: `released: ${said}` }], "stop");
    });
    return { model, tools: [wait] };
  },
};
