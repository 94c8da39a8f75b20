/**
 * The one deployment address of many workers: an HTTP/2 (h2c) proxy that hands each request
 * stream the engine opens to the next worker that accepts a connection (round robin), and passes
 * both directions through as they come (the engine and a worker talk in one long bidirectional
 * stream per invocation).
 *
 * It keeps no state of a run. When the worker of a stream dies, the stream is reset towards the
 * engine, which retries the invocation through the proxy again: it reaches a live worker, which
 * replays the journal. A worker that refuses connections is skipped; the list of workers can be
 * changed while it runs (`setWorkers`). In production a load balancer in front of the workers
 * does this job; this is the smallest one that does it here.
 */
import http2 from "node:http2";

export interface Proxy {
  url: string;
  port: number;
  /** Replaces the list of worker URLs (`http://host:port`). */
  setWorkers(urls: readonly string[]): void;
  close(): Promise<void>;
}

const { NGHTTP2_INTERNAL_ERROR, NGHTTP2_CANCEL } = http2.constants;

/** Starts the proxy on 127.0.0.1 (`port` 0: any free port) in front of `workers`. */
export async function startProxy(options: { workers: readonly string[]; port?: number }): Promise<Proxy> {
  let workers = [...options.workers];
  let next = 0;
  const sessions = new Map<string, Promise<http2.ClientHttp2Session>>();

  const connect = (url: string): Promise<http2.ClientHttp2Session> => {
    const known = sessions.get(url);
    if (known !== undefined) return known;
    const made = new Promise<http2.ClientHttp2Session>((resolve, reject) => {
      const session = http2.connect(url);
      const forget = () => {
        if (sessions.get(url) === made) sessions.delete(url);
      };
      session.once("connect", () => resolve(session));
      session.on("error", (error) => {
        forget();
        reject(error);
      });
      session.once("close", forget);
      session.once("goaway", forget);
    });
    made.catch(() => undefined);
    sessions.set(url, made);
    return made;
  };

  const server = http2.createServer();
  const engines = new Set<http2.ServerHttp2Session>();
  server.on("session", (session) => {
    engines.add(session);
    session.once("close", () => engines.delete(session));
  });
  server.on("stream", async (down, headers) => {
    down.on("error", () => undefined);
    for (let tried = 0; tried < workers.length; tried++) {
      const url = workers[next++ % workers.length]!;
      let up: http2.ClientHttp2Stream;
      try {
        const session = await connect(url);
        up = session.request(forwarded(headers), { endStream: false });
      } catch {
        continue; // refused or gone: the next worker
      }
      up.on("error", () => undefined);
      up.on("response", (response) => {
        if (!down.destroyed && !down.headersSent) down.respond(forwarded(response, true));
      });
      up.on("close", () => {
        if (!up.readableEnded && !down.closed) down.close(NGHTTP2_INTERNAL_ERROR);
      });
      down.on("close", () => {
        if (!up.closed) up.close(NGHTTP2_CANCEL);
      });
      up.pipe(down);
      down.pipe(up);
      return;
    }
    if (!down.destroyed) {
      down.respond({ ":status": 503, "content-type": "text/plain" });
      down.end("no worker accepted the connection");
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, "127.0.0.1", () => resolve());
  });
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    setWorkers(urls) {
      workers = [...urls];
    },
    async close() {
      for (const session of sessions.values()) session.then((s) => s.destroy()).catch(() => undefined);
      sessions.clear();
      for (const session of engines) session.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The headers to pass on: a request's pseudo-headers and fields, a response's `:status` and fields. */
function forwarded(headers: http2.IncomingHttpHeaders, response = false): http2.OutgoingHttpHeaders {
  const out: http2.OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    if (name.startsWith(":") && response && name !== ":status") continue;
    if (name === "connection" || name === "keep-alive" || name === "transfer-encoding") continue;
    out[name] = value;
  }
  return out;
}
