/**
 * A minimal `Model` that replays finished assistant messages exactly as given (every field,
 * `argumentsError` included): `start`, one `toolcall_end` per call, then `done`/`error`, each
 * after one microtask. For tests that need a message the ScriptedModel would not produce, and
 * for benchmarks that want the cheapest honest model.
 */
import { AssistantMessageEventStream } from "../../src/index.js";
import type { AssistantMessage, Context, Model, StreamOptions } from "../../src/index.js";

export class ReplayModel implements Model {
  readonly provider = "replay";
  readonly id = "replay-model";
  readonly requests: Context[] = [];
  private next = 0;

  constructor(private readonly turns: readonly AssistantMessage[]) {}

  stream(context: Context, options: StreamOptions = {}): AssistantMessageEventStream {
    this.requests.push(context);
    const stream = new AssistantMessageEventStream();
    const turn = this.turns[this.next++];
    void (async () => {
      await Promise.resolve();
      const fail = (reason: "error" | "aborted", errorMessage: string): void => {
        const error: AssistantMessage = {
          role: "assistant",
          content: [],
          provider: this.provider,
          model: this.id,
          usage: { input: 0, output: 0, totalTokens: 0 },
          stopReason: reason,
          errorMessage,
          timestamp: 0,
        };
        stream.push({ type: "error", reason, error });
      };
      if (options.signal?.aborted) return fail("aborted", "Request was aborted");
      if (turn === undefined) return fail("error", "ReplayModel: no more turns");
      const message = structuredClone(turn);
      stream.push({ type: "start", partial: message });
      for (let i = 0; i < message.content.length; i++) {
        const block = message.content[i]!;
        if (block.type === "toolCall") {
          stream.push({ type: "toolcall_end", contentIndex: i, toolCall: block, partial: message });
        }
      }
      if (message.stopReason === "error" || message.stopReason === "aborted") {
        stream.push({ type: "error", reason: message.stopReason, error: message });
      } else {
        stream.push({ type: "done", reason: message.stopReason, message });
      }
    })();
    return stream;
  }
}
