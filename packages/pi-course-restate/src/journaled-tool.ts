/**
 * A tool call as journaled steps of the engine, with the tool's `replay` contract as the rule for
 * running a step again (chapter 19's rules, on Restate's journal instead of the session file).
 *
 * - A tool with `replay: "safe"` is one step (`<call id> result`): a worker killed while it runs
 *   left no result, so the next worker simply runs it again.
 * - Any other tool is two steps, as chapter 19's `tool_intent` and `tool_outcome`:
 *   `<call id> intent` (the tool's name and arguments) is recorded by the engine before the tool
 *   runs — Restate starts no step while the one before it is not yet durable — then
 *   `<call id> result` runs the tool and records what it returned. When a worker replays the
 *   handler and finds the intent recorded by an earlier attempt but no result, the call started and
 *   did not finish: it is not run again; its result is chapter 19's interrupted text
 *   (`uncertainText`, with what the tool's `settleInterrupted` says), recorded as the step's result
 *   so every later attempt agrees.
 *
 * How "recorded by an earlier attempt" is known: the intent step's action runs only when the
 * engine has no result for it, so the action sets a flag; a replayed intent leaves it unset.
 *
 * A call past its step's time limit (run-limits.ts) gets the limit's signal and is not waited for
 * after it: its result is the limit's error (a tool that is not replay-safe may have taken effect).
 *
 * A tool that throws is a recorded error (the step succeeds with the error's text and the call
 * throws it again outside the step): the engine's retry is for crashes, the model answers errors.
 * A step the engine rejects (a cancelled invocation) is no tool error: `Steps` fails the run with it.
 */
import { type AgentTool, type AgentToolResult, uncertainText } from "@pi/course";
import { untilAborted } from "./run-limits.js";
import type { Steps } from "./steps.js";

/** What the result step records. */
type Outcome = { result: AgentToolResult<unknown> } | { error: string };

/** `tools`, each wrapped by `journaledTool`. */
export function journaledTools(steps: Steps, tools: readonly AgentTool<any, any>[]): AgentTool<any, any>[] {
  return tools.map((tool) => journaledTool(steps, tool));
}

/** `tool`, its `execute` run as steps of `steps` (see the module comment); every other field inherited. */
export function journaledTool<T extends AgentTool<any, any>>(steps: Steps, tool: T): T {
  const wrapped = Object.create(tool) as T;
  const inner: AgentTool<any, any> = tool;
  wrapped.execute = async (...args: Parameters<AgentTool<any, any>["execute"]>) => {
    const [toolCallId, params] = args;
    let fresh = tool.replay === "safe";
    if (!fresh) {
      await steps.run(`${toolCallId} intent`, () => {
        fresh = true;
        return { toolName: tool.name, arguments: params as unknown };
      });
    }
    const outcome = await steps.run(`${toolCallId} result`, async (limit): Promise<Outcome> => {
      if (!fresh) return { result: await interrupted(tool, toolCallId, params) };
      try {
        const [, , signal, ...rest] = args;
        const both = limit === undefined ? signal : signal === undefined ? limit : AbortSignal.any([signal, limit]);
        return { result: await untilAborted(Promise.resolve(inner.execute(toolCallId, params, both, ...rest)), limit) };
      } catch (error) {
        return { error: error instanceof Error ? error.message || error.name : String(error) };
      }
    });
    if ("error" in outcome) throw new Error(outcome.error);
    return outcome.result;
  };
  return wrapped;
}

/** Chapter 19's result for a call that started and may or may not have taken effect. */
async function interrupted(
  tool: AgentTool<any, any>,
  toolCallId: string,
  params: unknown,
): Promise<AgentToolResult<unknown>> {
  let settled: string | undefined;
  try {
    const said = await tool.settleInterrupted?.(toolCallId, params);
    if (typeof said === "string" && said !== "") settled = said;
  } catch {
    // nothing to say
  }
  return { content: [{ type: "text", text: uncertainText(tool.name, settled) }], details: undefined, isError: true };
}
