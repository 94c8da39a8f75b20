/**
 * Codemode's nested calls (chapter 16): the `ToolExecutionContext` a tool's `execute` receives,
 * whose `callTool` runs another tool of the run through the same pipeline as a model's call
 * (exposure, prepare, validate, hooks, execute, the events with `parentToolCallId`). Nested call
 * ids are the parent's id with `.1`, `.2`, … appended; they are answered by no result message
 * (the parent's result reports them).
 */
import type { ToolCall, ToolExecutionContext } from "../types.js";
import type { NestedCallRunner, ToolMiddleware } from "./types.js";

/** The middleware: every call's `execute` gets a context for its nested calls. */
export function nestedCalls(): ToolMiddleware {
  return { context: callsOf };
}

/** The `ToolExecutionContext` of one call: `nested` runs each call it makes. */
function callsOf(parent: ToolCall, nested: NestedCallRunner): ToolExecutionContext {
  let count = 0;
  return {
    async callTool(name, args, options) {
      // #region lab 16.1 callTool
      count++;
      const call: ToolCall = {
        type: "toolCall",
        id: `${parent.id}.${count}`,
        name: String(name),
        arguments: args as ToolCall["arguments"],
      };
      const { result, isError } = await nested(call, options?.signal);
      return { result, isError };
      // #endregion
    },
  };
}
