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
 * Workers prove themselves (`worker-proof.ts`): a new connection gets no request of a run before
 * the worker at its other end answered the version question with the proof of the workers'
 * secret for this connection's address; a listener that cannot (another program on a dead
 * worker's port) is skipped like a worker that refuses connections, and `onRefused` says so; it is
 * not asked again for `REFUSED_MS`, so one that holds the question open cannot slow every run.
 *
 * It keeps no state of a run. When the worker of a stream dies, the stream is reset towards the
 * engine, which retries the invocation through the proxy again: it reaches a live worker, which
 * replays the journal. A worker that refuses connections is skipped; the list of workers can be
 * changed while it runs (`setWorkers`). In production a load balancer in front of the workers
 * does this job; this is the smallest one that does it here.
 */
import http2 from "node:http2";
import { type ListenOptions, listen, type Peer } from "./listener.js";
import { CHALLENGE_HEADER, endpoint, newChallenge, isSignedPath, proofHolds, VERSION_PATH } from "./worker-proof.js";

export interface Proxy {
  url: string;
  port: number;
  /** Replaces the list of worker URLs (`http://host:port`). */
  setWorkers(urls: readonly string[]): void;
  /** The versions of the workers that answer now, each with their URLs. */
  versions(): Promise<Map<string, string[]>>;
  /** Connections its guard cut (`listener.ts`). */
  cut(): number;
  close(): Promise<void>;
}

export interface ProxyOptions extends ListenOptions {
  /** The workers' URLs (`http://host:port`). */
  workers: readonly string[];
  /** The workers' secret: only a worker that proves it gets runs. */
  workerSecret: string;
  /** Called when the listener at `url` does not prove it is a worker (`why`); it gets no run. */
  onRefused?: (url: string, why: string) => void;
}

/** How long a listener that did not prove itself is skipped before it is asked again. */
export const REFUSED_MS = 2000;

/**
 * Streams open at once on a connection to the proxy before one of its requests was proven (the
 * least RFC 9113 advises), and after (HTTP/2's most: the engine's own, not bounded here). Node's
 * default is the most for every connection: one unproven connection held 2000 streams open.
 */
export const UNPROVEN_STREAMS = 100;
const PROVEN_STREAMS = 2 ** 32 - 1;

/** How long a worker's address may take to accept a connection (the version question has its own 5 s). */
const CONNECT_MS = 5000;

interface Upstream {
  session: http2.ClientHttp2Session;
  version: string;
}

const { NGHTTP2_CANCEL, NGHTTP2_NO_ERROR } = http2.constants;

/** Starts the proxy on `host` (default 127.0.0.1; `port` 0: any free port) in front of `workers`. */
export async function startProxy(options: ProxyOptions): Promise<Proxy> {
  let workers = [...options.workers];
  let next = 0;
  const sessions = new Map<string, Promise<Upstream>>();
  const refused = new Map<string, number>(); // url → until when it is skipped

  const connect = (url: string): Promise<Upstream> => {
    const known = sessions.get(url);
    if (known !== undefined) return known;
    if ((refused.get(url) ?? 0) > Date.now()) return Promise.reject(new Error(`${url} did not prove itself`));
    const made = new Promise<Upstream>((resolve, reject) => {
      const session = http2.connect(url);
      const forget = () => {
        if (sessions.get(url) === made) sessions.delete(url);
      };
      // settled within CONNECT_MS whatever the peer does: a request of a run waits on this promise
      const late = setTimeout(() => {
        session.destroy();
        reject(new Error(`${url} did not accept a connection within ${CONNECT_MS} ms`));
      }, CONNECT_MS);
      late.unref();
      session.once("connect", () => {
        clearTimeout(late);
        askVersion(session, options.workerSecret).then(
          (version) => resolve({ session, version }),
          (error: unknown) => {
            forget();
            session.destroy();
            refused.set(url, Date.now() + REFUSED_MS);
            options.onRefused?.(url, (error as Error).message);
            reject(error);
          },
        );
      });
      session.on("error", (error) => {
        clearTimeout(late);
        forget();
        reject(error);
      });
      session.once("close", () => {
        clearTimeout(late);
        forget();
        reject(new Error(`${url} closed the connection before it was a worker's`)); // (no-op once resolved)
      });
      session.once("goaway", forget);
    });
    made.catch(() => undefined);
    sessions.set(url, made);
    return made;
  };

  // a connection not proven yet holds at most UNPROVEN_STREAMS streams at once (each one open on
  // the proxy, and on a worker while it answers); the engine's, once proven, as many as it opens
  const server = http2.createServer({ settings: { maxConcurrentStreams: UNPROVEN_STREAMS } });
  const raised = new WeakSet<http2.Http2Session>();
  const prove = (session: http2.Http2Session | undefined, peer: Peer) => {
    listening.started(peer);
    if (session === undefined || session.destroyed || raised.has(session)) return;
    raised.add(session);
    session.settings({ maxConcurrentStreams: PROVEN_STREAMS });
  };
  const engines = new Set<http2.ServerHttp2Session>();
  server.on("session", (session) => {
    engines.add(session);
    session.once("close", () => engines.delete(session));
  });
  server.on("stream", async (down, headers) => {
    down.on("error", () => undefined);
    // anyone may send a request: the connection is idle under the listener's cap until one of its
    // requests is answered by a worker as only a signed one is (`proven` below)
    const peer = down.session?.socket;
    if (peer !== undefined) listening.answered(peer);
    const { version, path } = versioned(String(headers[":path"] ?? "/"));
    for (let tried = 0; tried < workers.length; tried++) {
      const url = workers[next++ % workers.length]!;
      let up: http2.ClientHttp2Stream;
      try {
        const upstream = await connect(url);
        if (down.closed || down.destroyed) return; // the engine gave up on this request while it waited
        if (version !== undefined && upstream.version !== version) continue; // other code
        up = upstream.session.request({ ...forwarded(headers), ":path": path }, { endStream: false });
      } catch {
        continue; // refused or gone: the next worker
      }
      up.on("error", () => undefined);
      up.on("response", (response) => {
        if (peer !== undefined && proven(path, Number(response[":status"]))) prove(down.session, peer);
        if (!down.destroyed && !down.headersSent) down.respond(forwarded(response, true));
      });
      // A worker's death must reach the engine as a failed stream (it retries only those): a cut
      // connection ends the upstream too, so only an answer that came to its end is ended whole
      let whole = false;
      up.on("end", () => {
        // (a stream its session's end ended is no answer's end, though Node ends it the same way)
        if (!down.headersSent || up.aborted || up.session === undefined || up.session.destroyed) return;
        if ((up.rstCode ?? NGHTTP2_NO_ERROR) !== NGHTTP2_NO_ERROR) return;
        whole = true;
        down.end();
      });
      up.on("close", () => {
        // a reset (`close(code)` would send the end of the stream first once the engine has ended its side)
        if (!whole && !down.destroyed) down.destroy(new Error("the worker's stream was cut"));
      });
      down.on("close", () => {
        if (!up.closed) up.close(NGHTTP2_CANCEL);
      });
      up.pipe(down, { end: false });
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
  const listening = await listen(server, options);
  return {
    url: listening.url,
    port: listening.port,
    cut: listening.cut,
    setWorkers(urls) {
      workers = [...urls];
    },
    async versions() {
      const found = new Map<string, string[]>();
      await Promise.all(
        workers.map(async (url) => {
          const upstream = await connect(url).catch(() => undefined);
          if (upstream === undefined) return;
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

/**
 * Whether a worker's answer shows the request was the engine's: a worker answers a request to
 * invoke or discover with a success only once its signature holds (`worker.ts`), so the proxy
 * need not check the signature itself.
 */
function proven(path: string, status: number): boolean {
  return status >= 200 && status < 300 && isSignedPath(path);
}

/** `/v/<version>/rest` → the version and `/rest`; any other path as it is. */
function versioned(path: string): { version: string | undefined; path: string } {
  const match = /^\/v\/([^/]+)(\/.*)$/.exec(path);
  return match === null ? { version: undefined, path } : { version: decodeURIComponent(match[1]!), path: match[2]! };
}

/**
 * Asks a worker for its version on its new session, with a fresh challenge; resolves with the
 * version once the worker proved it holds the workers' secret for this connection's address,
 * rejects saying why not (no answer, no proof, a proof that does not hold).
 */
function askVersion(session: http2.ClientHttp2Session, secret: string): Promise<string> {
  const challenge = newChallenge();
  const where = endpoint(session.socket.remoteAddress, session.socket.remotePort);
  return new Promise((resolve, reject) => {
    const stream = session.request({ ":method": "GET", ":path": VERSION_PATH, [CHALLENGE_HEADER]: challenge });
    let text = "";
    let status = 0;
    stream.setEncoding("utf8");
    stream.on("response", (headers) => {
      status = Number(headers[":status"]);
    });
    stream.on("data", (chunk: string) => {
      if (text.length < 4096) text += chunk;
    });
    stream.on("end", () => {
      let answer: { version?: unknown; proof?: unknown } = {};
      try {
        answer = JSON.parse(text) as typeof answer;
      } catch {
        // judged below
      }
      if (status !== 200 || typeof answer.version !== "string") {
        reject(new Error(`it answered the version question with ${status} and no version`));
      } else if (!proofHolds(secret, challenge, where, answer.version, answer.proof)) {
        reject(new Error("its answer holds no valid proof of the workers' secret"));
      } else resolve(answer.version);
    });
    stream.on("error", reject);
    stream.on("close", () => reject(new Error("it did not answer the version question")));
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
