/**
 * A worker told to stop (SIGTERM) exits within its grace although the engine's side (here: this
 * test, as the proxy and engine do) keeps HTTP/2 sessions open to it: one idle, one with a stream
 * this side never ends. And `spawnWorker` stops collecting the worker's output once it listens.
 */
import http2 from "node:http2";
import { afterAll, expect, it } from "vitest";
import { freePort } from "../src/restate-server.js";
import { spawnWorker, type WorkerProcess } from "../src/worker-process.js";
import { testBundle } from "./support/fleet.js";
import { someCredential } from "./support/keys.js";

let worker: WorkerProcess | undefined;
let bundle: Awaited<ReturnType<typeof testBundle>> | undefined;
const sessions: http2.ClientHttp2Session[] = [];

afterAll(async () => {
  for (const session of sessions) session.destroy();
  if (worker !== undefined && worker.child.exitCode === null && worker.child.signalCode === null)
    worker.child.kill("SIGKILL");
  await bundle?.remove();
});

/** A session to `url` once it is connected. */
async function connect(url: string): Promise<http2.ClientHttp2Session> {
  const session = http2.connect(url);
  sessions.push(session);
  session.on("error", () => undefined); // the worker going away is what this test does
  await new Promise((resolve, reject) => session.once("connect", resolve).once("error", reject));
  return session;
}

it("exits within its grace on SIGTERM though sessions to it stay open", async () => {
  const graceMs = 500;
  // a bundle: under tsx a worker's start alone took 20 s at load 40
  bundle = await testBundle();
  worker = await spawnWorker({
    bundle: bundle.file,
    port: await freePort(),
    graceMs,
    ...someCredential(),
  });
  // once started, the worker's output is no longer kept in this process
  expect(worker.child.stdout?.listenerCount("data")).toBe(0);
  await connect(worker.url);
  const busy = await connect(worker.url);
  const stream = busy.request({ ":method": "POST", ":path": "/discover" }); // its request never ends
  stream.on("error", () => undefined);
  await new Promise((resolve) => stream.once("response", resolve));

  const exited = new Promise<number | null>((resolve) => worker!.child.once("exit", (code) => resolve(code)));
  worker.child.kill("SIGTERM");
  // without the fix it never exits (sessions hold the server open); with it, it exits after its
  // grace (its own backstop: graceMs + 1 s). The test's timeout is the hang bound: a wall-time
  // bound here failed at load 40 while the worker was on its way out.
  expect(await exited).toBe(0);
}, 120_000);
