/**
 * The deployment addresses of many workers: an HTTP/2 (h2c) proxy that hands each request
 * stream the engine opens to the next worker that accepts a connection (round robin), and passes
 * both directions through as they come (the engine and a worker talk in one long bidirectional
 * stream per invocation).
 *
 * Versions: every worker says which code it runs (`GET /pi-course-restate/version`, asked once per
 * connection, so a worker restarted with new code is asked again). A request under
 * `/v/<version>/` goes only to the workers of that version, without the prefix: so
 * `<proxy>/v/<version>` is one deployment per version, registered beside the others (`engine.ts`),
 * and a run stays on the code it started with while workers of newer code take new runs. A request
 * without the prefix goes to any worker.
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
  /** The versions of the workers that answer now, each with their URLs. */
  versions(): Promise<Map<string, string[]>>;
  close(): Promise<void>;
}

/** Where a worker says its version (plain JSON `{ "version": "…" }`; not signed: it is no secret). */
export const VERSION_PATH = "/pi-course-restate/version";

interface Upstream {
  session: http2.ClientHttp2Session;
  version: string | undefined;
}

const { NGHTTP2_INTERNAL_ERROR, NGHTTP2_CANCEL } = http2.constants;

/** Starts the proxy on `host` (default 127.0.0.1; `port` 0: any free port) in front of `workers`. */
export async function startProxy(options: {
  workers: readonly string[];
  port?: number;
  host?: string;
}): Promise<Proxy> {
  let workers = [...options.workers];
  let next = 0;
  const sessions = new Map<string, Promise<Upstream>>();

  const connect = (url: string): Promise<Upstream> => {
    const known = sessions.get(url);
    if (known !== undefined) return known;
    const made = new Promise<Upstream>((resolve, reject) => {
      const session = http2.connect(url);
      const forget = () => {
        if (sessions.get(url) === made) sessions.delete(url);
      };
      session.once("connect", () => {
        askVersion(session).then(
          (version) => resolve({ session, version }),
          (error: unknown) => {
            forget();
            session.destroy();
            reject(error);
          },
        );
      });
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
    const { version, path } = versioned(String(headers[":path"] ?? "/"));
    for (let tried = 0; tried < workers.length; tried++) {
      const url = workers[next++ % workers.length]!;
      let up: http2.ClientHttp2Stream;
      try {
        const upstream = await connect(url);
        if (version !== undefined && upstream.version !== version) continue; // other code
        up = upstream.session.request({ ...forwarded(headers), ":path": path }, { endStream: false });
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
      down.end(
        version === undefined
          ? "no worker accepted the connection"
          : `no worker of version ${version} accepted the connection`,
      );
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, options.host ?? "127.0.0.1", () => resolve());
  });
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : 0;
  const host = options.host ?? "127.0.0.1";
  return {
    url: `http://${host.includes(":") ? `[${host}]` : host}:${port}`,
    port,
    setWorkers(urls) {
      workers = [...urls];
    },
    async versions() {
      const found = new Map<string, string[]>();
      await Promise.all(
        workers.map(async (url) => {
          const upstream = await connect(url).catch(() => undefined);
          if (upstream?.version === undefined) return;
          found.set(upstream.version, [...(found.get(upstream.version) ?? []), url]);
        }),
      );
      return found;
    },
    async close() {
      for (const session of sessions.values()) session.then((s) => s.session.destroy()).catch(() => undefined);
      sessions.clear();
      for (const session of engines) session.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** `/v/<version>/rest` → the version and `/rest`; any other path as it is. */
function versioned(path: string): { version: string | undefined; path: string } {
  const match = /^\/v\/([^/]+)(\/.*)$/.exec(path);
  return match === null ? { version: undefined, path } : { version: decodeURIComponent(match[1]!), path: match[2]! };
}

/** Asks a worker for its version on its new session (undefined: a worker that does not say). */
function askVersion(session: http2.ClientHttp2Session): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ":method": "GET", ":path": VERSION_PATH });
    let text = "";
    let status = 0;
    stream.setEncoding("utf8");
    stream.on("response", (headers) => {
      status = Number(headers[":status"]);
    });
    stream.on("data", (chunk: string) => {
      text += chunk;
    });
    stream.on("end", () => {
      try {
        resolve(status === 200 ? String((JSON.parse(text) as { version: unknown }).version) : undefined);
      } catch {
        resolve(undefined);
      }
    });
    stream.on("error", reject);
    stream.on("close", () => resolve(undefined)); // cut before its end: a worker that does not say
    stream.setTimeout(5000, () => stream.close(http2.constants.NGHTTP2_CANCEL));
  });
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
