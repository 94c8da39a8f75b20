/**
 * A tiny scripted HTTP server on 127.0.0.1 for provider tests: each request takes the next
 * scripted reply; every request is recorded. Helpers write bodies in random pieces (so the
 * client sees lines and UTF-8 characters split across reads), turn recorded transcripts into
 * SSE bytes, and inject faults (reset, stall).
 */
import { readFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface RecordedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** Answers one request. May stay pending (a stalled server); `close()` still ends it. */
export type Reply = (res: ServerResponse, request: RecordedRequest) => void | Promise<void>;

export class SseServer {
  readonly requests: RecordedRequest[] = [];
  private readonly replies: Reply[] = [];

  private constructor(
    private readonly server: Server,
    /** `http://127.0.0.1:<port>/v1` */
    readonly baseUrl: string,
  ) {}

  static async start(): Promise<SseServer> {
    let self: SseServer | undefined;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        const request: RecordedRequest = {
          method: req.method ?? "",
          url: req.url ?? "",
          headers: req.headers,
          body: Buffer.concat(chunks).toString("utf8"),
        };
        self!.requests.push(request);
        const reply = self!.replies.shift();
        if (reply === undefined) {
          res.writeHead(599, { "content-type": "text/plain" }).end("test server: no reply scripted");
          return;
        }
        Promise.resolve(reply(res, request)).catch(() => res.destroy());
      });
    });
    server.keepAliveTimeout = 1;
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    self = new SseServer(server, `http://127.0.0.1:${port}/v1`);
    return self;
  }

  /** Scripts the reply to the next request (replies are taken in order). */
  reply(reply: Reply): this {
    this.replies.push(reply);
    return this;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** A deterministic PRNG (mulberry32), so a failing chunking can be replayed from its seed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Cuts `bytes` at random places: pieces of 1..`maxPiece` bytes. */
export function randomPieces(bytes: Uint8Array, random: () => number, maxPiece = 97): Uint8Array[] {
  const pieces: Uint8Array[] = [];
  let offset = 0;
  while (offset < bytes.length) {
    const size = 1 + Math.floor(random() * maxPiece);
    pieces.push(bytes.subarray(offset, offset + size));
    offset += size;
  }
  return pieces;
}

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Writes each piece separately (yielding in between), without ending the response. */
export async function writePieces(res: ServerResponse, pieces: readonly Uint8Array[]): Promise<void> {
  for (const piece of pieces) {
    if (res.destroyed) return;
    res.write(piece);
    await tick();
  }
}

/** Starts a 200 `text/event-stream` response. */
export function startSse(res: ServerResponse): void {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  res.flushHeaders();
}

/** A reply streaming `body` as SSE in random pieces, then ending (or resetting) the response. */
export function sseReply(
  body: string | Uint8Array,
  options: { seed?: number; maxPiece?: number; then?: "end" | "reset" | "stall" } = {},
): Reply {
  return async (res) => {
    startSse(res);
    const bytes = typeof body === "string" ? Buffer.from(body, "utf8") : body;
    await writePieces(res, randomPieces(bytes, seededRandom(options.seed ?? 1), options.maxPiece));
    const then = options.then ?? "end";
    if (then === "end") res.end();
    else if (then === "reset") res.socket?.destroy();
    // "stall": leave the response open; the client must abort (close() ends it).
  };
}

/** A reply with a status and a body (an HTTP error), and extra headers (e.g. `retry-after`). */
export function statusReply(
  status: number,
  body: string,
  contentType = "application/json",
  headers: Record<string, string> = {},
): Reply {
  return (res) => {
    res.writeHead(status, { "content-type": contentType, ...headers }).end(body);
  };
}

/** A reply that never sends headers. */
export const stallReply: Reply = () => new Promise<void>(() => {});

/** A reply that closes the connection before sending anything (a reset before the first byte). */
export const resetReply: Reply = (res) => {
  res.socket?.destroy();
};

/** A redirect to `location` (a full URL or a path). */
export function redirectReply(status: number, location: string): Reply {
  return (res) => {
    res.writeHead(status, { location, "content-type": "text/plain" }).end("moved");
  };
}

/**
 * A 200 event stream that writes `head`, then `next(i)` every `intervalMs` until the client goes
 * away or `next` returns `undefined` (then the response ends). For slow, endless or dripping
 * servers. Resolves once the response is over; `sent()` tells how many bytes went out.
 */
export function dripReply(
  head: string,
  next: (i: number) => string | Uint8Array | undefined,
  intervalMs: number,
): Reply & { sent: () => number } {
  let bytes = 0;
  const reply = async (res: ServerResponse) => {
    startSse(res);
    if (head !== "") res.write(head);
    bytes += Buffer.byteLength(head);
    for (let i = 0; !res.destroyed; i++) {
      const piece = next(i);
      if (piece === undefined) return void res.end();
      const ok = res.write(piece);
      bytes += typeof piece === "string" ? Buffer.byteLength(piece) : piece.byteLength;
      if (!ok && !res.destroyed)
        await new Promise((resolve) => {
          res.once("drain", resolve);
          res.once("close", resolve);
        });
      await new Promise((resolve) => setTimeout(resolve, intervalMs));
    }
  };
  return Object.assign(reply, { sent: () => bytes });
}

/**
 * A 200 event stream whose body is `gzip` as sent, declared `content-encoding: gzip`; the
 * response then stays open (the client must stop reading by itself; `close()` ends it).
 */
export function gzipReply(gzip: Uint8Array): Reply {
  return (res) => {
    res.writeHead(200, { "content-type": "text/event-stream", "content-encoding": "gzip" });
    res.write(gzip);
  };
}

/** SSE frames for chunk objects: `data: <json>\n\n` each, and `data: [DONE]` unless told not to. */
export function sseOf(chunks: readonly unknown[], options: { done?: boolean } = {}): string {
  const frames = chunks.map((chunk) => `data: ${typeof chunk === "string" ? chunk : JSON.stringify(chunk)}\n\n`);
  if (options.done !== false) frames.push("data: [DONE]\n\n");
  return frames.join("");
}

const FIXTURES = new URL("../fixtures/openai-chat/", import.meta.url);

/** A recorded transcript's text, as stored. */
export function fixtureText(name: string): string {
  return readFileSync(new URL(name, FIXTURES), "utf8");
}

/**
 * A recorded transcript as an SSE body: `.sse` files as recorded; `.chunks.txt` files (one JSON
 * chunk per line) wrapped as `data:` frames, with `data: [DONE]` appended unless `done: false`.
 */
export function fixtureSse(name: string, options: { done?: boolean } = {}): string {
  const text = fixtureText(name);
  if (name.endsWith(".sse")) return text;
  const lines = text.split("\n").filter((line) => line.trim() !== "");
  return sseOf(lines, options);
}

/** The JSON chunks of a transcript (for independent expectations). */
export function fixtureChunks(name: string): Record<string, any>[] {
  const text = fixtureText(name);
  const lines = name.endsWith(".sse")
    ? text
        .split("\n")
        .filter((line) => line.startsWith("data: "))
        .map((line) => line.slice(6))
    : text.split("\n").filter((line) => line.trim() !== "");
  return lines.filter((line) => line !== "[DONE]").map((line) => JSON.parse(line) as Record<string, any>);
}

/** A server's model list (`GET /models`), as OpenAI-compatible servers answer it. */
export function modelsReply(ids: readonly string[]): Reply {
  return (res) =>
    void res
      .writeHead(200, { "content-type": "application/json" })
      .end(JSON.stringify({ object: "list", data: ids.map((id) => ({ id, object: "model" })) }));
}
