/**
 * A setup for `restate.attacks.worker.test.ts`: `child-env`, whose one tool starts a child process
 * (as a bash call, a case's check or any tool would) that prints the worker's credential variable,
 * or `unset`; the model answers with what it printed.
 */
import { execFileSync } from "node:child_process";
import { assistantMessage, defineTool, ScriptedModel } from "@pi/course";
import { Type } from "typebox";
import type { RunSetups } from "../../src/agent-run.js";

export const setups: RunSetups = {
  "child-env": () => {
    const printenv = defineTool({
      name: "printenv",
      label: "printenv",
      description: "Prints PI_RESTATE_IDENTITY_KEYS from a child process.",
      parameters: Type.Object({}),
      execute: async () => {
        const text = execFileSync("sh", ["-c", 'printf %s "${PI_RESTATE_IDENTITY_KEYS:-unset}"'], { encoding: "utf8" });
        return { content: [{ type: "text", text }], details: undefined };
      },
    });
    const model = ScriptedModel.repeat(({ messages }) => {
      const result = messages.find((m) => m.role === "toolResult");
      if (result === undefined)
        return assistantMessage([{ type: "toolCall", id: "c1", name: "printenv", arguments: {} }], "toolUse");
      const said = result.role === "toolResult" ? result.content.map((c) => ("text" in c ? c.text : "")).join("") : "";
      return assistantMessage([{ type: "text", text: `a child sees: ${said}` }], "stop");
    });
    return { model, tools: [printenv] };
  },
};
