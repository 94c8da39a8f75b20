/**
 * A worker told to stop (SIGTERM) exits within its grace although the engine's side (here: this
 * test, as the proxy and engine do) keeps HTTP/2 sessions open to it: one idle, one with a stream
 * this side never ends. And `spawnWorker` stops collecting the worker's output once it listens.
 */
import http2 from "node:http2";
import { afterAll, expect, it } from "vitest";
import { freePort } from "../src/restate-server.js";
import { spawnWorker, type WorkerProcess } from "../src/worker-process.js";
import { someIdentityKey } from "./support/keys.js";

let worker: WorkerProcess | undefined;
const sessions: http2.ClientHttp2Session[] = [];

afterAll(() => {
  for (const session of sessions) session.destroy();
  if (worker !== undefined && worker.child.exitCode === null && worker.child.signalCode === null)
    worker.child.kill("SIGKILL");
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
  worker = await spawnWorker({ port: await freePort(), graceMs, identityKeys: [someIdentityKey()] });
  // once started, the worker's output is no longer kept in this process
  expect(worker.child.stdout?.listenerCount("data")).toBe(0);
  await connect(worker.url);
  const busy = await connect(worker.url);
  const stream = busy.request({ ":method": "POST", ":path": "/discover" }); // its request never ends
  stream.on("error", () => undefined);
  await new Promise((resolve) => stream.once("response", resolve));

  const exited = new Promise<number | null>((resolve) => worker!.child.once("exit", (code) => resolve(code)));
  const start = Date.now();
  worker.child.kill("SIGTERM");
  // without the fix it never exits; the bound leaves room for a loaded machine (the backstop is graceMs + 1 s)
  const code = await Promise.race([exited, new Promise((resolve) => setTimeout(() => resolve("still running"), 8000))]);
  expect(code).toBe(0);
  expect(Date.now() - start).toBeLessThan(graceMs + 7000);
}, 20_000);
