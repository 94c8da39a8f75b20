/**
 * The engine's front door: the one TCP listener in front of Restate's ingress and admin API, both
 * of which listen on Unix sockets only its owner reaches (`restate-server.ts`).
 *
 * Every request must carry `Authorization: Bearer <token>`, the token of the engine's credential
 * file (0600, `engine.ts`); anything else is answered 401 before a byte reaches Restate. A request
 * under `/admin/` goes to the admin API (without that prefix), any other to the ingress. The
 * `authorization` header is taken off before forwarding: Restate keeps an ingress request's
 * headers in the run's journal and hands them to the workers, and the token must be in neither.
 *
 * The one request answered without the token is `GET GATE_PROOF_PATH`: the gate proves it holds
 * the token to a client that has not sent it yet (`gate-proof.ts`).
 *
 * No other check is made here: whoever holds the token is the owner (runs, results, cancel,
 * deployments). Workers do not trust the gate either: they verify the engine's signature.
 */
import { timingSafeEqual } from "node:crypto";
import http from "node:http";
import { GATE_PROOF_PATH, gateProof } from "./gate-proof.js";
import { type ListenOptions, listen } from "./listener.js";
import { CHALLENGE_HEADER, endpoint, isChallenge } from "./worker-proof.js";

export interface Gate {
  url: string;
  port: number;
  /** Connections its guard cut (`listener.ts`: too slow to send a request, or crowded out). */
  cut(): number;
  close(): Promise<void>;
}

/** `port` (default 0: any free one) and `host` (default 127.0.0.1), and the guard's limits. */
export interface GateOptions extends ListenOptions {
  token: string;
  ingressSocket: string;
  adminSocket: string;
}

/** The header fields not passed on: hop-by-hop ones, and the credential. */
const DROPPED = new Set([
  "authorization",
  "connection",
  "keep-alive",
  "proxy-authorization",
  "transfer-encoding",
  "upgrade",
]);

/** Starts the gate and resolves once it listens. */
export async function startGate(options: GateOptions): Promise<Gate> {
  const expected = Buffer.from(`Bearer ${options.token}`);
  const allowed = (header: string | undefined): boolean => {
    if (header === undefined) return false;
    const given = Buffer.from(header);
    return given.length === expected.length && timingSafeEqual(given, expected);
  };
  const server = http.createServer((down, reply) => {
    const challenge = down.headers[CHALLENGE_HEADER];
    if (down.url === GATE_PROOF_PATH && down.method === "GET" && isChallenge(challenge)) {
      // the one answer without the token: proves to a client, before it sends its token, that this is the engine.
      // It does not count as the connection's request (`listener.ts`): a connection that asked only this (and
      // then sends a body without end, or nothing) stays under the guard's time limit and cap, as any without the token
      const proof = gateProof(options.token, challenge, endpoint(down.socket.localAddress, down.socket.localPort));
      reply.writeHead(200, { "content-type": "text/plain", "content-length": Buffer.byteLength(proof) });
      reply.end(proof);
      return;
    }
    if (!allowed(down.headers.authorization)) {
      // hung up at once: a peer without the token gets no read of the body it announced (the
      // gate has no request timeout, for runs waited on for hours)
      reply.writeHead(401, {
        "content-type": "text/plain",
        "www-authenticate": 'Bearer realm="pi-course-restate"',
        connection: "close",
      });
      reply.end("the engine needs its credential: Authorization: Bearer <token of the engine's client.json>\n", () =>
        down.socket.destroy(),
      );
      return;
    }
    listening.started(down.socket);
    const url = down.url ?? "/";
    const toAdmin = url === "/admin" || url.startsWith("/admin/");
    const headers: http.OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(down.headers)) if (!DROPPED.has(name)) headers[name] = value;
    const up = http.request(
      {
        socketPath: toAdmin ? options.adminSocket : options.ingressSocket,
        method: down.method,
        path: toAdmin ? url.slice("/admin".length) || "/" : url,
        headers,
      },
      (response) => {
        reply.writeHead(response.statusCode ?? 502, response.headers);
        response.pipe(reply);
      },
    );
    up.on("error", (error) => {
      if (!reply.headersSent) {
        reply.writeHead(503, { "content-type": "text/plain" });
        reply.end(
          `the engine's Restate server is not answering (${error.message}); it is being restarted, try again\n`,
        );
      } else reply.destroy();
    });
    reply.on("close", () => {
      if (!reply.writableFinished) up.destroy();
    });
    down.pipe(up);
  });
  // a client waiting on a run's result holds its request open for as long as the run takes
  server.requestTimeout = 0;
  server.headersTimeout = 60_000;
  const listening = await listen(server, options);
  return {
    url: listening.url,
    port: listening.port,
    cut: listening.cut,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
