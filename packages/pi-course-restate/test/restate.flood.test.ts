/**
 * A local client that opens many connections to the engine's gate and proxy and sends a request a
 * byte at a time (slow headers) does not exhaust the engine (`listener.ts`): at most 128
 * connections per listener may wait for their first request, the oldest beyond that is cut at
 * once, and any still waiting after 10 s is cut. A real run finishes while 500 such connections
 * are open to each.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import http2 from "node:http2";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, it } from "vitest";
import { runDurably } from "../src/submit.js";
import { type EngineAndWorker, engineAndWorker } from "./support/fleet.js";
import { DONE } from "./support/kill-script.js";

const SETUPS = path.join(path.dirname(fileURLToPath(import.meta.url)), "support", "kill-script.ts");

let root: string;
let started: EngineAndWorker | undefined;
const floods: Flood[] = [];

beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), "pi-restate-flood-"));
  started = await engineAndWorker(path.join(root, "engine"), { setups: SETUPS });
}, 120_000);

afterAll(async () => {
  for (const flood of floods) flood.stop();
  await started?.stop();
  if (root !== undefined) await rm(root, { recursive: true, force: true });
});

interface Flood {
  /** Its connections the server has not closed. */
  open(): number;
  stop(): void;
}

/** `count` connections to `url`, each sending `request` one byte a second (none of them ever whole). */
async function flood(url: string, request: string, count: number): Promise<Flood> {
  const { hostname, port } = new URL(url);
  const sockets: net.Socket[] = [];
  await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<void>((resolve) => {
          const socket = net.connect(Number(port), hostname);
          socket.on("error", () => undefined);
          socket.once("connect", () => resolve());
          socket.once("close", () => resolve());
          sockets.push(socket);
        }),
    ),
  );
  let at = 0;
  const trickle = setInterval(() => {
    const byte = request[at++ % request.length]!;
    for (const socket of sockets) if (!socket.destroyed) socket.write(byte);
  }, 1000);
  const made: Flood = {
    open: () => sockets.filter((socket) => !socket.destroyed && socket.readyState !== "closed").length,
    stop() {
      clearInterval(trickle);
      for (const socket of sockets) socket.destroy();
    },
  };
  floods.push(made);
  return made;
}

/** Resolves once the listener at `url` answered a new connection (HTTP/2: its settings; HTTP/1: a response). */
async function answered(url: string, h2 = false): Promise<void> {
  if (!h2) {
    // a connection of its own (fetch would reuse one of its pool): its 401 answer
    const { hostname, port } = new URL(url);
    const socket = net.connect(Number(port), hostname);
    socket.on("error", () => undefined);
    socket.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    await new Promise((resolve) => socket.once("data", resolve));
    socket.destroy();
    return;
  }
  const session = http2.connect(url);
  session.on("error", () => undefined);
  await new Promise((resolve) => session.once("remoteSettings", resolve));
  session.destroy();
}

it("finishes a run while 500 slow-header connections are open to the gate and 500 to the proxy, and cuts them", async () => {
  const engine = started!.engine;
  // an HTTP/1 request whose headers never end; an HTTP/2 preface a byte at a time
  const gate = await flood(engine.url, "GET /restate/health HTTP/1.1\r\nHost: x\r\nX-Slow: ", 500);
  const proxy = await flood(engine.proxyUrl, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 500);
  // one more connection to each, answered: the server accepts in order, so by then it took every
  // connection of the flood, and the guard cut those beyond 128 as it took them
  await answered(engine.url);
  await answered(engine.proxyUrl, true);
  for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve)); // their closes, read
  expect(gate.open()).toBeLessThanOrEqual(128);
  expect(proxy.open()).toBeLessThanOrEqual(128);
  const effects = path.join(root, "effects.log");
  await writeFile(effects, "");
  const run = await runDurably(engine, "through-the-flood", {
    setup: "kill-script",
    prompt: "go",
    options: { effects },
  });
  expect(JSON.stringify(run.messages)).toContain(DONE);
  // and those left are cut once they waited 10 s for their first request
  while (gate.open() + proxy.open() > 0) await new Promise((resolve) => setTimeout(resolve, 100));
}, 180_000);
