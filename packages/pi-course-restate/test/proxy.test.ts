/**
 * The deployment proxy alone, between a client standing in for the Restate server and a worker
 * that proves itself and then dies in the middle of a request (its connection cut, as a SIGKILL
 * cuts it). The engine retries an invocation only when its stream fails; a stream that neither
 * answers nor fails holds the run until the engine's inactivity timeout (an hour). So a worker's
 * death must reach the engine as a reset stream, whether it came before the worker's answer or in
 * the middle of it; a truncated answer must never look complete.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import http2 from "node:http2";
import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { listen } from "../src/listener.js";
import { type Proxy, startProxy, UNPROVEN_STREAMS } from "../src/proxy.js";
import { startWorker } from "../src/worker.js";
import { CHALLENGE_HEADER, endpoint, isSignedPath, VERSION_PATH, workerProof } from "../src/worker-proof.js";
import { someCredential } from "./support/keys.js";

const SECRET = `workersecretv1_${randomBytes(32).toString("base64url")}`;
const closers: (() => Promise<unknown>)[] = [];

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/**
 * A worker that proves itself (version "v1") and answers every other request with `onRequest`.
 * `cut()` cuts its connections the way a killed process's are cut: a TCP reset when data it did
 * not read was waiting (`how: "reset"`), else a plain close (`"close"`).
 */
async function dyingWorker(
  onRequest: (stream: http2.ServerHttp2Stream, cut: () => void, headers: http2.IncomingHttpHeaders) => void,
  how: "reset" | "close" = "reset",
) {
  const server = http2.createServer();
  const sockets = new Set<import("node:net").Socket>();
  server.on("connection", (socket) => sockets.add(socket));
  const cut = () => {
    for (const socket of sockets) how === "reset" ? socket.resetAndDestroy() : socket.destroy();
  };
  server.on("stream", (stream, headers) => {
    if (headers[":path"] === VERSION_PATH) {
      const socket = stream.session!.socket;
      const proof = workerProof(
        SECRET,
        String(headers[CHALLENGE_HEADER]),
        endpoint(socket.localAddress, socket.localPort),
        "v1",
      );
      stream.respond({ ":status": 200, "content-type": "application/json" });
      stream.end(JSON.stringify({ version: "v1", proof }));
      return;
    }
    onRequest(stream, cut, headers);
  });
  const listening = await listen(server);
  closers.push(async () => {
    cut();
    await new Promise((resolve) => server.close(resolve));
  });
  return listening.url;
}

async function proxyTo(...workers: string[]): Promise<Proxy> {
  const proxy = await startProxy({ workers, workerSecret: SECRET });
  closers.push(() => proxy.close());
  return proxy;
}

/** What the engine's side of one request through `proxy` sees: the status (if any), the body, how the stream ended. */
async function request(proxy: Proxy, boundMs = 8000): Promise<{ status?: number; body: string; rstCode: number }> {
  const session = http2.connect(proxy.url);
  closers.push(async () => session.destroy());
  const stream = session.request({ ":method": "POST", ":path": "/invoke/AgentRun/run" }, { endStream: false });
  stream.end("start");
  let status: number | undefined;
  let body = "";
  stream.on("response", (headers) => {
    status = Number(headers[":status"]);
  });
  stream.setEncoding("utf8");
  stream.on("data", (chunk: string) => {
    body += chunk;
  });
  stream.on("error", () => undefined);
  // a hang bound far above what the answer takes (milliseconds), far below the engine's hour
  const closed = await Promise.race([
    new Promise<boolean>((resolve) => stream.once("close", () => resolve(true))),
    new Promise<boolean>((resolve) => setTimeout(() => resolve(false), boundMs)),
  ]);
  if (!closed) throw new Error(`the request through the proxy neither answered nor failed in ${boundMs} ms`);
  return { ...(status !== undefined && { status }), body, rstCode: stream.rstCode ?? 0 };
}

describe("the proxy passes a worker's death on as a failed stream", () => {
  for (const how of ["reset", "close"] as const) {
    it(`a worker cut (${how}) before it answered: the engine's stream is reset, not left open`, async () => {
      const worker = await dyingWorker((_stream, cut) => cut(), how);
      const seen = await request(await proxyTo(worker));
      expect(seen.status).toBeUndefined();
      expect(seen.rstCode).toBe(http2.constants.NGHTTP2_INTERNAL_ERROR);
    });

    it(`a worker cut (${how}) in the middle of its answer: the engine's stream is reset, the part is no whole answer`, async () => {
      const worker = await dyingWorker((stream, cut) => {
        stream.respond({ ":status": 200 });
        stream.write("part of an answer", () => setTimeout(cut, 50));
      }, how);
      const seen = await request(await proxyTo(worker));
      expect(seen.status).toBe(200);
      expect(seen.body).toBe("part of an answer");
      expect(seen.rstCode).toBe(http2.constants.NGHTTP2_INTERNAL_ERROR);
    });
  }

  it("a worker that answers whole: the engine's stream ends cleanly with all of it", async () => {
    const worker = await dyingWorker((stream) => {
      stream.respond({ ":status": 200 });
      stream.end("the whole answer");
    });
    const seen = await request(await proxyTo(worker));
    expect(seen).toEqual({ status: 200, body: "the whole answer", rstCode: 0 });
  });
});

/**
 * An address whose connections never complete, as a worker host that went down drops them: a
 * process that listens with a backlog of 1 and never accepts (its thread blocked), its queue
 * filled; the kernel then drops every further connection's first packet.
 */
async function unreachable(): Promise<string> {
  const child = spawn(process.execPath, [
    "-e",
    "require('node:net').createServer().listen({ port: 0, host: '127.0.0.1', backlog: 1 }, function () {" +
      " console.log(this.address().port); Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0) })",
  ]);
  closers.push(async () => child.kill("SIGKILL"));
  const port = await new Promise<number>((resolve) =>
    child.stdout.once("data", (data) => resolve(Number(String(data)))),
  );
  // a queue of backlog + 1: two connections fill it, a third then waits
  const fillers: net.Socket[] = [];
  closers.push(async () => {
    for (const socket of fillers) socket.destroy();
  });
  for (let i = 0; i < 2; i++) {
    const socket = net.connect(port, "127.0.0.1").on("error", () => undefined);
    fillers.push(socket);
    await new Promise((resolve) => socket.once("connect", resolve));
  }
  const third = net.connect(port, "127.0.0.1").on("error", () => undefined);
  fillers.push(third);
  await new Promise((resolve) => setTimeout(resolve, 500));
  expect(third.connecting, "the queue is full: a new connection does not complete").toBe(true);
  return `http://127.0.0.1:${port}`;
}

it("a worker address that never completes a connection is given up after a few seconds, and the next worker answers", async () => {
  const good = await dyingWorker((stream) => {
    stream.respond({ ":status": 200 });
    stream.end("the whole answer");
  });
  // the unreachable address first: the round robin starts there (TCP alone would wait about two minutes)
  const proxy = await proxyTo(await unreachable(), good);
  const started = Date.now();
  expect(await request(proxy, 20_000)).toEqual({ status: 200, body: "the whole answer", rstCode: 0 });
  expect(Date.now() - started).toBeGreaterThanOrEqual(4_000); // it did wait on the unreachable one first
}, 30_000);

/** Opens a session to `proxy` and sends one request of `headers`; resolves with the session and the status it got. */
async function oneRequest(
  proxy: Proxy,
  headers: http2.OutgoingHttpHeaders,
): Promise<{ session: http2.ClientHttp2Session; status: number }> {
  const session = http2.connect(proxy.url);
  session.on("error", () => undefined);
  closers.push(async () => session.destroy());
  const stream = session.request({ ":method": "POST", ...headers }, { endStream: true });
  stream.on("error", () => undefined);
  stream.resume();
  const status = await new Promise<number>((resolve) =>
    stream.once("response", (response) => resolve(Number(response[":status"]))),
  );
  return { session, status };
}

describe("the proxy's connections under its listener's guard", () => {
  it("a program that sends one request per connection holds at most 128 open; the engine's proven connection stays", async () => {
    // a worker answering as a real one does: 200 only to a signed request (here: one that says it is)
    const answering = await dyingWorker((stream, _cut, headers) => {
      stream.respond({ ":status": headers["x-signed"] === "yes" ? 200 : 401 });
      stream.end();
    });
    const proxy = await proxyTo(answering);
    const engine = await oneRequest(proxy, { ":path": "/invoke/AgentRun/run", "x-signed": "yes" });
    expect(engine.status).toBe(200);
    const flood = [];
    for (let i = 0; i < 300; i++) flood.push(await oneRequest(proxy, { ":path": "/invoke/AgentRun/run" }));
    expect(flood.every((one) => one.status === 401)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 200)); // the cut connections' resets arrive
    const open = flood.filter((one) => !one.session.closed && !one.session.destroyed).length;
    expect(open).toBeLessThanOrEqual(128);
    expect(proxy.cut()).toBeGreaterThanOrEqual(300 - 128);
    expect(engine.session.closed || engine.session.destroyed, "the engine's connection was not cut").toBe(false);
    // and the engine's next request on it goes through
    const again = engine.session.request({ ":method": "POST", ":path": "/invoke/AgentRun/run", "x-signed": "yes" });
    again.on("error", () => undefined);
    again.end();
    again.resume();
    expect(await new Promise((resolve) => again.once("response", (r) => resolve(r[":status"])))).toBe(200);
  }, 30_000);
});

describe("a request looks proven only where the worker's SDK demands the engine's signature", () => {
  // the SDK routes by a path's last segments after resolving it as a URL: these reach its health
  // check, answered 200 to anyone, though they start like an invocation or a discovery
  const unsigned = [
    "/invoke/health",
    "/discover/health",
    "/invoke/../health",
    "/invoke/%2E%2E/health",
    "/invoke\\..\\health",
    "/invoke/a/b/health",
    "/v/v1/invoke/health",
  ];

  it("a real worker answers these unsigned paths 200, and the proxy keeps their connections under its cap", async () => {
    const credential = someCredential();
    const worker = await startWorker({ ...credential, version: "v1" });
    closers.push(() => worker.close(0));
    const proxy = await startProxy({ workers: [worker.url], workerSecret: credential.workerSecret, maxPending: 4 });
    closers.push(() => proxy.close());
    const flood = [];
    for (const path of unsigned) {
      for (let i = 0; i < 3; i++)
        flood.push({ path, ...(await oneRequest(proxy, { ":method": "GET", ":path": path })) });
    }
    expect(flood.map(({ path, status }) => [path, status])).toEqual(flood.map(({ path }) => [path, 200]));
    await new Promise((resolve) => setTimeout(resolve, 200)); // the cut connections' resets arrive
    expect(flood.filter((one) => !one.session.closed && !one.session.destroyed).length).toBeLessThanOrEqual(4);
    expect(proxy.cut()).toBeGreaterThanOrEqual(flood.length - 4);
  }, 30_000);

  it("isSignedPath: exactly /discover and /invoke/<service>/<handler>, as the SDK resolves them", () => {
    expect([...unsigned, "/invoke?/discover", "/invoke", "//invoke/a/b", "/discover/"].filter(isSignedPath)).toEqual(
      [],
    );
    expect(
      [
        "/discover",
        "/discover?x=1",
        "/invoke/AgentRun/run",
        "/invoke/AgentRun/run?x",
        "/invoke/a/../AgentRun/run",
      ].every(isSignedPath),
    ).toBe(true);
  });
});

describe("a worker's odd frames: the engine's stream ends whole only on a whole answer, else it is reset", () => {
  it("a worker that says goodbye (GOAWAY) in the middle of its answer and is then cut: reset, not ended", async () => {
    // what `Worker.close` does to a run in flight: a GOAWAY, then the cut after its grace
    const worker = await dyingWorker((stream, cut) => {
      stream.respond({ ":status": 200 });
      stream.write("part of an answer", () => {
        stream.session?.close();
        setTimeout(cut, 100);
      });
    });
    const seen = await request(await proxyTo(worker));
    expect(seen).toEqual({ status: 200, body: "part of an answer", rstCode: http2.constants.NGHTTP2_INTERNAL_ERROR });
  });

  it("informational (1xx) headers before the answer and trailers after it: the answer passes whole", async () => {
    const worker = await dyingWorker((stream) => {
      stream.additionalHeaders({ ":status": 103, link: "</early>" });
      stream.respond({ ":status": 200 }, { waitForTrailers: true });
      stream.on("wantTrailers", () => stream.sendTrailers({ "x-after": "1" }));
      stream.end("the whole answer");
    });
    const seen = await request(await proxyTo(worker));
    expect(seen).toEqual({ status: 200, body: "the whole answer", rstCode: 0 });
  });

  it("a header block past what the proxy takes: reset", async () => {
    const worker = await dyingWorker((stream) => {
      stream.on("error", () => undefined);
      const headers: http2.OutgoingHttpHeaders = { ":status": 200 };
      for (let i = 0; i < 200; i++) headers[`x-big-${i}`] = "y".repeat(1000);
      stream.respond(headers);
      stream.end("the whole answer");
    });
    const seen = await request(await proxyTo(worker));
    expect(seen).toEqual({ body: "", rstCode: http2.constants.NGHTTP2_INTERNAL_ERROR });
  });
});

/** Opens `count` streams on `session` whose request bodies never end; resolves with how many got an answer and how many were refused. */
async function openStreams(session: http2.ClientHttp2Session, count: number, headers: http2.OutgoingHttpHeaders) {
  const outcomes = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<"answered" | "refused">((resolve) => {
          const stream = session.request({ ":method": "POST", ...headers }, { endStream: false });
          stream.on("error", () => undefined);
          stream.once("response", () => resolve("answered"));
          stream.once("close", () =>
            resolve(stream.rstCode === http2.constants.NGHTTP2_REFUSED_STREAM ? "refused" : "answered"),
          );
          stream.resume();
          stream.write("a body that never ends");
        }),
    ),
  );
  return {
    answered: outcomes.filter((one) => one === "answered").length,
    refused: outcomes.filter((one) => one === "refused").length,
  };
}

/**
 * A client that ignores the server's SETTINGS_MAX_CONCURRENT_STREAMS (Node's own client queues the
 * streams past it): raw HTTP/2 frames, `count` requests whose bodies never end, sent once the
 * server's settings are acknowledged; resolves with the streams that got an answer, that were reset,
 * and whether the server ended the connection (a GOAWAY).
 */
async function rawFlood(port: number, count: number): Promise<{ answered: number[]; reset: number; ended: boolean }> {
  const socket = net.connect(port, "127.0.0.1");
  socket.on("error", () => undefined);
  closers.push(async () => socket.destroy());
  const frame = (type: number, flags: number, id: number, payload: Buffer) => {
    const head = Buffer.alloc(9);
    head.writeUIntBE(payload.length, 0, 3);
    head[3] = type;
    head[4] = flags;
    head.writeUInt32BE(id, 5);
    return Buffer.concat([head, payload]);
  };
  const literal = (index: number, value: string) =>
    Buffer.concat([Buffer.from([index, value.length]), Buffer.from(value)]);
  // HPACK: :method POST (static 3), :scheme http (static 6), :path and :authority as literals
  const block = Buffer.concat([Buffer.from([0x83, 0x86]), literal(4, "/invoke/AgentRun/run"), literal(1, "127.0.0.1")]);
  socket.write(Buffer.concat([Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), frame(4, 0, 0, Buffer.alloc(0))]));
  const answered: number[] = [];
  let ended = false;
  const reset = new Set<number>();
  let buffered = Buffer.alloc(0);
  let sent = false;
  return new Promise((resolve) => {
    const settle = () => resolve({ answered, reset: reset.size, ended });
    socket.on("data", (data: Buffer) => {
      buffered = Buffer.concat([buffered, data]);
      while (buffered.length >= 9 && buffered.length >= 9 + buffered.readUIntBE(0, 3)) {
        const length = buffered.readUIntBE(0, 3);
        const [type, flags] = [buffered[3]!, buffered[4]!];
        const id = buffered.readUInt32BE(5) & 0x7fffffff;
        buffered = buffered.subarray(9 + length);
        if (type === 4 && (flags & 1) === 0) {
          socket.write(frame(4, 1, 0, Buffer.alloc(0))); // ack theirs
          if (!sent) {
            sent = true;
            const streams = Array.from({ length: count }, (_, i) => 2 * i + 1);
            socket.write(
              Buffer.concat(streams.flatMap((id) => [frame(1, 4, id, block), frame(0, 0, id, Buffer.from("x"))])),
            );
          }
        }
        if (type === 1) answered.push(id);
        if (type === 3) reset.add(id);
        if (type === 7) ended = true;
        if (answered.length + reset.size >= count) settle();
      }
    });
    socket.once("close", settle);
  });
}

describe("streams at once on one connection to the proxy", () => {
  it(`an unproven connection holds at most ${UNPROVEN_STREAMS} streams whose bodies never end; the engine's proven one holds more`, async () => {
    // answers at once (a real worker answers 401 to an unsigned request before its body), 200 and held open to a signed one
    const worker = await dyingWorker((stream, _cut, headers) => {
      stream.on("error", () => undefined);
      if (headers["x-signed"] === "yes") stream.respond({ ":status": 200 });
      else {
        stream.respond({ ":status": 401 });
        stream.end();
      }
    });
    const proxy = await proxyTo(worker);
    // past the cap Node refuses the streams, and ends a connection that keeps opening them (its
    // maxSessionRejectedStreams); whether the first ones were answered before that is a race
    const flood = await rawFlood(proxy.port, 300);
    expect(flood.answered.filter((id) => id > 2 * UNPROVEN_STREAMS - 1)).toEqual([]);
    expect(flood.ended || flood.reset >= 300 - UNPROVEN_STREAMS).toBe(true);

    const engine = http2.connect(proxy.url);
    engine.on("error", () => undefined);
    closers.push(async () => engine.destroy());
    const raised = new Promise((resolve) =>
      engine.on("remoteSettings", (settings) => settings.maxConcurrentStreams! > UNPROVEN_STREAMS && resolve(true)),
    );
    expect(await openStreams(engine, 1, { ":path": "/invoke/AgentRun/run", "x-signed": "yes" })).toEqual({
      answered: 1,
      refused: 0,
    });
    await raised;
    expect(await openStreams(engine, 300, { ":path": "/invoke/AgentRun/run", "x-signed": "yes" })).toEqual({
      answered: 300,
      refused: 0,
    });
  }, 30_000);
});
