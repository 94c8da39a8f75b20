/**
 * Keep-alive frames are not progress (issue 31, item 6): a server over real HTTP that, after some
 * content, sends only Anthropic `ping` events or OpenAI chunks with empty deltas (well within
 * `idleTimeoutMs` of each other) ends the turn as a stall with the partial content kept, in both
 * adapters; a server that keeps sending content within the limit is never cut.
 */
import type { ServerResponse } from "node:http";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createAnthropicModel } from "../src/models/anthropic/anthropic.js";
import { createOpenAICompatibleModel } from "../src/models/openai/openai-compatible.js";
import type { Model } from "../src/model.js";
import type { AssistantMessage } from "../src/types.js";
import { type Reply, SseServer, startSse } from "./support/sse-server.js";

const IDLE = 1000;
const EVERY = 100;
/** How long the pinging server keeps going if nothing stops it (the test would fail then). */
const GIVE_UP = 8000;

const frame = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
const chunk = (data: unknown) => `data: ${JSON.stringify(data)}\n\n`;

/** Writes `head`, then `beat()` every EVERY ms until the client goes away or GIVE_UP passes. */
function beating(head: string, beat: (n: number) => string): Reply {
  return (res: ServerResponse) =>
    new Promise<void>((resolve) => {
      startSse(res);
      res.write(head);
      let n = 0;
      const started = Date.now();
      const timer = setInterval(() => {
        if (res.destroyed || res.writableEnded || Date.now() - started > GIVE_UP) {
          clearInterval(timer);
          if (!res.writableEnded) res.end();
          resolve();
          return;
        }
        res.write(beat(n++));
      }, EVERY);
      res.on("close", () => {
        clearInterval(timer);
        resolve();
      });
    });
}

const ANTHROPIC_HEAD =
  frame("message_start", { type: "message_start", message: { usage: { input_tokens: 5, output_tokens: 1 } } }) +
  frame("content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }) +
  frame("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Hel" } });
const OPENAI_HEAD = chunk({ choices: [{ index: 0, delta: { role: "assistant", content: "Hel" } }] });

let server: SseServer;
beforeEach(async () => {
  server = await SseServer.start();
});
afterEach(async () => {
  await server.close();
});

const anthropic = (): Model =>
  createAnthropicModel({ baseUrl: server.baseUrl, model: "m", apiKey: "k", maxTokens: 100, idleTimeoutMs: IDLE });
const openai = (): Model =>
  createOpenAICompatibleModel({ baseUrl: server.baseUrl, model: "m", provider: "p", apiKey: "k", idleTimeoutMs: IDLE });

async function run(model: Model): Promise<{ message: AssistantMessage; ms: number }> {
  const started = Date.now();
  const message = await model
    .stream({ messages: [{ role: "user", content: [{ type: "text", text: "hi" }], timestamp: 1 }] })
    .result();
  return { message, ms: Date.now() - started };
}

describe("keep-alive frames do not feed the idle watchdog", () => {
  it("Anthropic: a server sending only `event: ping` after some text ends as a stall, the text kept", async () => {
    server.reply(beating(ANTHROPIC_HEAD, () => frame("ping", { type: "ping" })));
    const { message, ms } = await run(anthropic());
    expect(message.stopReason).toBe("error");
    expect(message.errorDetails?.kind).toBe("stall");
    expect(message.content).toEqual([{ type: "text", text: "Hel" }]);
    expect(ms).toBeLessThan(GIVE_UP - 500);
  }, 15_000);

  it("OpenAI-compatible: a server sending only empty-delta chunks (and chunks with no choices) ends as a stall", async () => {
    server.reply(
      beating(OPENAI_HEAD, (n) =>
        n % 2 === 0 ? chunk({ choices: [{ index: 0, delta: {} }] }) : chunk({ choices: [] }),
      ),
    );
    const { message, ms } = await run(openai());
    expect(message.stopReason).toBe("error");
    expect(message.errorDetails?.kind).toBe("stall");
    expect(message.content).toEqual([{ type: "text", text: "Hel" }]);
    expect(ms).toBeLessThan(GIVE_UP - 500);
  }, 15_000);

  it("content frames at the same pace are progress: a slow but live stream is never cut", async () => {
    const beats = Math.ceil((IDLE * 3) / EVERY);
    server.reply(async (res) => {
      startSse(res);
      res.write(OPENAI_HEAD);
      for (let n = 0; n < beats; n++) {
        await new Promise((resolve) => setTimeout(resolve, EVERY));
        res.write(chunk({ choices: [{ index: 0, delta: { content: "." } }] }));
      }
      res.end(chunk({ choices: [{ index: 0, delta: {}, finish_reason: "stop" }] }) + "data: [DONE]\n\n");
    });
    const { message } = await run(openai());
    expect(message.stopReason).toBe("stop");
    expect(message.content).toEqual([{ type: "text", text: `Hel${".".repeat(beats)}` }]);
  }, 15_000);
});
