/**
 * Chapter 19: the tool hooks under recovery. A call that recovery runs (one that never started,
 * or one safe to replay) passes `beforeToolCall` and `afterToolCall` as the loop's run would have
 * passed it, so recovery runs nothing the hooks would not let through: a blocked call gets the
 * hook's reason as its error result and has no effect, and an override changes the result.
 */
import { guardToolHooks } from "../agent/guards.js";
import type { AgentLoopConfig, BeforeToolCallContext } from "../agent/types.js";
import { transcriptOf } from "../session/context.js";
import type { AgentTool, AgentToolResult, AssistantMessage } from "../types.js";
import type { DurableStore } from "./store.js";

/** The hooks a recovery runs calls under: the agent's (`Agent.toolHooks`). */
export type RecoveryHooks = Pick<AgentLoopConfig, "beforeToolCall" | "afterToolCall" | "hookTimeoutMs">;

/**
 * `tools`, each under `hooks` for the calls of the last assistant message on the path to
 * `leafId` (the message recovery answers). A blocked call, or one whose `beforeToolCall` fails,
 * throws before `execute` with the text the loop would have answered it with; `tools` as they
 * are when no hook is set.
 */
export function underToolHooks(
  tools: readonly AgentTool<any, any>[],
  hooks: RecoveryHooks,
  store: DurableStore,
  leafId: string | undefined,
  signal: AbortSignal | undefined,
): readonly AgentTool<any, any>[] {
  const guarded = guardToolHooks(hooks, signal);
  if ((guarded.before === undefined && guarded.after === undefined) || leafId === undefined) return tools;
  const messages = transcriptOf(store.pathToLeaf(leafId)).messages;
  const assistantMessage = [...messages]
    .reverse()
    .find((m): m is AssistantMessage => "role" in m && m.role === "assistant");
  if (assistantMessage === undefined) return tools;
  const context = { messages, tools: [...tools] };
  return tools.map((tool) => {
    const hooked: AgentTool<any, any> = Object.create(tool);
    hooked.execute = async (toolCallId, args, ...rest) => {
      const toolCall = assistantMessage.content.find(
        (b: AssistantMessage["content"][number]) => b.type === "toolCall" && b.id === toolCallId,
      );
      if (toolCall?.type !== "toolCall") return tool.execute(toolCallId, args, ...rest);
      const scene: BeforeToolCallContext = { assistantMessage, toolCall, args, tool, context };
      const before = await guarded.before?.(scene);
      if (before?.kind === "aborted") throw new Error("recovery was stopped");
      if (before?.kind === "failed") throw new Error(before.failure);
      if (before !== undefined && before.value !== undefined) {
        throw new Error(before.value ?? `Tool call "${toolCall.name}" was blocked.`);
      }
      const result: AgentToolResult<unknown> = await tool.execute(toolCallId, args, ...rest);
      const after = await guarded.after?.({ ...scene, result, isError: result.isError === true });
      if (after?.kind === "failed")
        return { content: [{ type: "text", text: after.failure }], details: undefined, isError: true };
      if (after?.kind !== "value" || after.value === undefined) return result;
      const override = after.value;
      return {
        ...result,
        ...(override.content !== undefined && { content: override.content }),
        ...("details" in override && { details: override.details }),
        ...(override.isError !== undefined && { isError: override.isError }),
      };
    };
    return hooked;
  });
}
