/**
 * What durable.hooks.test.ts and its child share: `reveal`, a tool that reads a secret (and
 * records in the effects file that it ran), and the `beforeToolCall` that blocks it.
 */
import { appendFile } from "node:fs/promises";
import { Type } from "typebox";
import type { BeforeToolCallContext, BeforeToolCallResult } from "../../src/agent/types.js";
import { defineTool } from "../../src/agent/tools.js";
import type { AgentTool } from "../../src/types.js";

export const SECRET = "sk-the-secret";
export const BLOCKED = "secrets stay closed";

export function secretTools(effects: string): AgentTool<any, any>[] {
  return [
    defineTool({
      name: "reveal",
      label: "reveal",
      description: "Reads the secret.",
      parameters: Type.Object({}),
      execute: async (toolCallId) => {
        await appendFile(effects, `${toolCallId}\n`);
        return { content: [{ type: "text", text: SECRET }], details: undefined };
      },
    }),
  ];
}

export const blockReveal = (ctx: BeforeToolCallContext): BeforeToolCallResult | undefined =>
  ctx.toolCall.name === "reveal" ? { block: true, reason: BLOCKED } : undefined;
