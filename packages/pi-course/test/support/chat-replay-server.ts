/**
 * A local OpenAI-compatible server on 127.0.0.1 that replays recorded Chat Completions streams:
 * the n-th `POST …/chat/completions` gets the n-th SSE body, written in small pieces. Every
 * request is recorded (method, path, authorization header, parsed JSON body) for assertions.
 * A request past the end of the recording gets HTTP 500 with an OpenAI-style error body.
 */
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";

export interface RecordedRequest {
  method: string;
  path: string;
  authorization: string | undefined;
  body: any;
}

export interface ChatReplayServer {
  /** E.g. `http://127.0.0.1:41234/v1`. */
  baseUrl: string;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    request.on("error", reject);
  });
}

/** Starts the server with one SSE body per expected request. */
export async function startChatReplayServer(bodies: readonly string[]): Promise<ChatReplayServer> {
  const requests: RecordedRequest[] = [];
  const server = createServer(async (request, response) => {
    const text = await readBody(request);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
    requests.push({
      method: request.method ?? "",
      path: request.url ?? "",
      authorization: request.headers.authorization,
      body,
    });
    const sse = bodies[requests.length - 1];
    if (request.method !== "POST" || !request.url?.endsWith("/chat/completions") || sse === undefined) {
      response.writeHead(500, { "content-type": "application/json" });
      response.end(JSON.stringify({ error: { message: "the replay has no such request", type: "server_error" } }));
      return;
    }
    response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    // Write in uneven pieces, as a real server's TCP stream would arrive.
    for (let at = 0, size = 7; at < sse.length; at += size, size = ((size * 7) % 61) + 5) {
      response.write(sse.slice(at, at + size));
      if (at % 3 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    response.end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A port on 127.0.0.1 where nothing listens (bound, then released). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
