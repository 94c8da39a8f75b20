/**
 * How the gate proves to a client that it is the engine, before the client sends its token.
 *
 * The token is a bearer credential: whoever receives it is the owner. A client waiting on a result
 * asks the gate's address again and again (`attach.ts`), also while the engine is stopped; another
 * local user who listens on the free port then would receive the token. So a client never sends
 * the token on a connection the gate has not proved itself on: it opens the connection, asks
 * `GET GATE_PROOF_PATH` with a fresh challenge (`CHALLENGE_HEADER`), and the gate answers
 * HMAC-SHA256(token, challenge ‖ the address and port the connection reached it at). Only a
 * holder of the token can answer; a listener that relays the challenge to a live gate elsewhere
 * (the same engine restarted on another port) gets that gate's proof of its own address, which
 * fails. Then the request, with the token, goes on that same connection, which no one else can
 * take over.
 *
 * Binding the address means a client must reach the gate at the address and port the gate sees
 * (an SSH tunnel forwards the same port number; no NAT between them).
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import http from "node:http";
import net from "node:net";
import { Readable } from "node:stream";
import { CHALLENGE_HEADER, endpoint, newChallenge } from "./worker-proof.js";

/** Where the gate proves itself (plain text: the proof). Answered without the token. */
export const GATE_PROOF_PATH = "/pi-course-restate/gate";

/** How long a listener may take to answer the proof question: a hang bound, the gate answers at once. */
const PROOF_WAIT_MS = 10_000;

/** The gate's proof for `challenge`, reached at `where` (`endpoint`), keyed with the engine's token. */
export function gateProof(token: string, challenge: string, where: string): string {
  return createHmac("sha256", token)
    .update(`pi-course-restate gate proof v1\n${challenge}\n${where}`)
    .digest("base64url");
}

/** A listener at the engine's address that did not prove it is the engine; the token was not sent to it. */
export class GateUnproven extends Error {
  constructor(
    readonly url: string,
    why: string,
  ) {
    super(
      `the listener at ${url} did not prove it is the engine of this client.json (${why}); the credential was not sent to it. ` +
        "Either another engine runs there (a new engine folder makes a new credential: use its client.json), " +
        "or another program holds the port of an engine that is not running: start `pi-course-restate engine` with its folder again.",
    );
    this.name = "GateUnproven";
  }
}

/** A connection to the gate at `url` on which the gate proved it holds `token`. */
async function provenConnection(url: URL, token: string, signal?: AbortSignal): Promise<net.Socket> {
  const socket = net.connect({ host: url.hostname.replace(/^\[|\]$/g, ""), port: Number(url.port || 80) });
  const challenge = newChallenge();
  try {
    const proof = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new GateUnproven(url.origin, `no answer to the proof question in ${PROOF_WAIT_MS / 1000} s`)),
        PROOF_WAIT_MS,
      );
      const abort = () => reject(signal!.reason);
      signal?.addEventListener("abort", abort, { once: true });
      let got = Buffer.alloc(0);
      const done = (error?: Error, value?: string) => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", abort);
        // an error from here on goes to the request made on the socket (which listens for it)
        socket
          .off("data", onData)
          .off("error", onError)
          .off("end", onEnd)
          .on("error", () => {});
        if (error) reject(error);
        else resolve(value!);
      };
      const onError = (error: Error) => done(error);
      const onEnd = () => done(new GateUnproven(url.origin, "it hung up on the proof question"));
      const onData = (chunk: Buffer) => {
        got = Buffer.concat([got, chunk]);
        const head = got.indexOf("\r\n\r\n");
        if (head < 0) {
          if (got.length > 16_384) done(new GateUnproven(url.origin, "its answer to the proof question is too long"));
          return;
        }
        const lines = got.subarray(0, head).toString("latin1").split("\r\n");
        const length = Number(/^content-length:\s*(\d+)$/im.exec(lines.join("\n"))?.[1] ?? Number.NaN);
        if (!/^HTTP\/1\.1 200 /.test(lines[0] ?? "") || !Number.isSafeInteger(length) || length > 1024)
          return done(new GateUnproven(url.origin, `it answered the proof question with ${JSON.stringify(lines[0])}`));
        if (got.length < head + 4 + length) return;
        if (got.length > head + 4 + length) return done(new GateUnproven(url.origin, "it sent more than its proof"));
        done(undefined, got.subarray(head + 4).toString("latin1"));
      };
      socket.on("data", onData).on("error", onError).on("end", onEnd);
      socket.once("connect", () =>
        socket.write(
          `GET ${GATE_PROOF_PATH} HTTP/1.1\r\nhost: ${url.host}\r\n${CHALLENGE_HEADER}: ${challenge}\r\n` +
            "connection: keep-alive\r\n\r\n",
        ),
      );
    });
    const expected = Buffer.from(gateProof(token, challenge, endpoint(socket.remoteAddress, socket.remotePort)));
    const given = Buffer.from(proof);
    if (given.length !== expected.length || !timingSafeEqual(given, expected))
      throw new GateUnproven(url.origin, "its proof does not hold");
    return socket;
  } catch (error) {
    socket.destroy();
    throw error;
  }
}

/** What a request to the gate may carry (a text body: every request of the engine's is JSON or nothing). */
export interface GateRequestInit {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
}

/**
 * `fetch`-like: `init` sent to `url` (on the gate) with `Authorization: Bearer <token>`, on a
 * connection where the gate first proved itself. Rejects with `GateUnproven` when it did not
 * (nothing of the request sent), or with the connection's error (`ECONNREFUSED`, …) as `fetch` would.
 */
export async function provenFetch(url: string, token: string, init: GateRequestInit = {}): Promise<Response> {
  const target = new URL(url);
  const socket = await provenConnection(target, token, init.signal);
  const headers: Record<string, string> = {};
  for (const [name, value] of new Headers(init.headers)) headers[name] = value;
  headers.authorization = `Bearer ${token}`;
  if (init.body !== undefined) headers["content-length"] = String(Buffer.byteLength(init.body));
  return await new Promise<Response>((resolve, reject) => {
    const request = http.request(
      {
        host: target.hostname,
        port: target.port,
        method: init.method ?? "GET",
        path: `${target.pathname}${target.search}`,
        headers,
        agent: false,
        createConnection: () => socket,
        ...(init.signal && { signal: init.signal }),
      },
      (response) => {
        const status = response.statusCode ?? 502;
        const responseHeaders = new Headers();
        for (const [name, value] of Object.entries(response.headers))
          for (const one of [value ?? []].flat()) responseHeaders.append(name, one);
        const empty = status === 204 || status === 205 || status === 304;
        if (empty) response.resume();
        resolve(
          new Response(empty ? null : (Readable.toWeb(response) as ReadableStream<Uint8Array>), {
            status,
            headers: responseHeaders,
          }),
        );
      },
    );
    request.on("error", reject);
    request.end(init.body);
  });
}
