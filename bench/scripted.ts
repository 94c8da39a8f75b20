/**
 * The scripted agent workload of bench/07 (the loop) and bench/09 (the `Agent`) on both sides.
 *
 * The model is scripted the same way on both sides, with each library's own event stream, every
 * event pushed before `stream()` returns: `start`, then either one call of the no-op tool (its
 * argument text as one delta, `toolcall_end`, `done` with `toolUse`; pi-ai adds the
 * `toolcall_start` its loop expects) or one text block (`text_delta`, `done` with `stop`). The
 * tool has the same plain JSON Schema on both sides and resolves at once.
 */
import { AssistantMessageEventStream as OursStream } from "@pi/course";
import type { AgentTool as OursTool, AssistantMessage as OursMessage, Model } from "@pi/course";
import type { AgentTool as UpstreamTool } from "@earendil-works/pi-agent-core";
import { createAssistantMessageEventStream } from "@earendil-works/pi-ai";

/** The same plain JSON Schema for both tools: an object with one optional string. */
const schema = { type: "object", properties: { note: { type: "string" } }, required: [] } as const;
const ARGS_JSON = "{}";

export const oursNoopTool: OursTool<any, undefined> = {
  name: "noop",
  label: "No-op",
  description: "Does nothing.",
  parameters: schema as never,
  execute: async () => ({ content: [{ type: "text", text: "ok" }], details: undefined }),
};

export const upstreamNoopTool: UpstreamTool<any> = {
  name: "noop",
  label: "No-op",
  description: "Does nothing.",
  parameters: schema as never,
  execute: async () => ({ content: [{ type: "text", text: "ok" }], details: undefined }),
};

/** Our scripted model: calls the no-op tool on its first `toolTurns` calls, then answers with text. */
export function oursScriptedModel(toolTurns: number): Model {
  let turn = 0;
  return {
    provider: "bench",
    id: "scripted",
    stream() {
      const stream = new OursStream();
      const n = turn++;
      const partial: OursMessage = {
        role: "assistant",
        content: [],
        provider: "bench",
        model: "scripted",
        usage: { input: 0, output: 0, totalTokens: 0 },
        stopReason: "stop",
        timestamp: 0,
      };
      stream.push({ type: "start", partial });
      if (n < toolTurns) {
        const call = { type: "toolCall" as const, id: `call_${n}`, name: "noop", arguments: {} as unknown };
        partial.content.push(call);
        stream.push({ type: "toolcall_delta", contentIndex: 0, delta: ARGS_JSON, partial });
        stream.push({ type: "toolcall_end", contentIndex: 0, toolCall: call, partial });
        partial.stopReason = "toolUse";
        stream.push({ type: "done", reason: "toolUse", message: partial });
      } else {
        partial.content.push({ type: "text", text: "done" });
        stream.push({ type: "text_delta", contentIndex: 0, delta: "done", partial });
        stream.push({ type: "done", reason: "stop", message: partial });
      }
      return stream;
    },
  };
}

/** pi-agent-core's `streamFn` with the same script as `oursScriptedModel(toolTurns)`. */
export function upstreamScriptedStreamFn(toolTurns: number) {
  let turn = 0;
  return (_model: unknown, _context: unknown) => {
    const stream = createAssistantMessageEventStream();
    const n = turn++;
    const partial: any = {
      role: "assistant",
      content: [],
      api: "openai-completions",
      provider: "bench",
      model: "scripted",
      usage: {
        input: 0,
        output: 0,
        cacheRead: 0,
        cacheWrite: 0,
        totalTokens: 0,
        cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
      },
      stopReason: "stop",
      timestamp: 0,
    };
    stream.push({ type: "start", partial });
    if (n < toolTurns) {
      const call = { type: "toolCall" as const, id: `call_${n}`, name: "noop", arguments: {} };
      partial.content.push(call);
      stream.push({ type: "toolcall_start", contentIndex: 0, partial });
      stream.push({ type: "toolcall_delta", contentIndex: 0, delta: ARGS_JSON, partial });
      stream.push({ type: "toolcall_end", contentIndex: 0, toolCall: call, partial });
      partial.stopReason = "toolUse";
      stream.push({ type: "done", reason: "toolUse", message: partial });
    } else {
      partial.content.push({ type: "text", text: "done" });
      stream.push({ type: "text_delta", contentIndex: 0, delta: "done", partial });
      stream.push({ type: "done", reason: "stop", message: partial });
    }
    return stream as any;
  };
}

/**
 * Both sides must have done the whole work: `value` is messages × 1,000,000 + events (as the
 * workloads return it); pi-agent-core may add one message (a system message declaring the tools).
 */
export function checkWork(workload: string, name: string, value: number, expected: number): void {
  const messages = Math.floor(value / 1_000_000);
  if (messages !== expected && messages !== expected + 1) {
    throw new Error(
      `${workload}, ${name}: expected ${expected} messages, got ${messages} (events ${value % 1_000_000})`,
    );
  }
  console.log(`${workload}, ${name}: ${messages} messages, ${value % 1_000_000} events per run`);
}
