/**
 * An OpenAI-compatible model on 127.0.0.1 that plays scripted turns, each made from the request
 * it answers (to quote the last message back, say), for tests that run the CLI end to end.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

/** One turn: the whole SSE body answering a request whose parsed JSON body is `body`. */
export type ChatTurn = (body: any) => string;

/** One Chat Completions chunk as an SSE frame. */
export const chatChunk = (delta: unknown, finish: string | null = null): string =>
  `data: ${JSON.stringify({ choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

/** A turn that calls `name` with `args` (call id `id`). */
export const callTurn =
  (id: string, name: string, args: unknown): ChatTurn =>
  () =>
    chatChunk({
      role: "assistant",
      tool_calls: [{ index: 0, id, type: "function", function: { name, arguments: JSON.stringify(args) } }],
    }) +
    chatChunk({}, "tool_calls") +
    "data: [DONE]\n\n";

/** A turn that answers with `text(body)`. */
export const answerTurn =
  (text: (body: any) => string): ChatTurn =>
  (body) =>
    chatChunk({ role: "assistant", content: text(body) }) + chatChunk({}, "stop") + "data: [DONE]\n\n";

/** Answers the n-th request with `turns[n]`; `bodies` holds every request's parsed body. */
export async function scriptedChatServer(turns: readonly ChatTurn[]) {
  const bodies: any[] = [];
  const server = createServer((request, response) => {
    let text = "";
    request.on("data", (chunk) => (text += chunk));
    request.on("end", () => {
      const body = JSON.parse(text);
      bodies.push(body);
      const turn = turns[bodies.length - 1];
      if (turn === undefined) return void response.writeHead(599).end("no turn scripted");
      response.writeHead(200, { "content-type": "text/event-stream" });
      response.end(turn(body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return { bodies, baseUrl, close: () => new Promise((resolve) => server.close(resolve)) };
}
