/**
 * A stopped engine's gate port taken by another local user (`runuser -u nobody`) gets no token:
 * a client sends its token only on a connection where the gate proved it holds it
 * (`gate-proof.ts`). A client waits on a run; the engine stops; `nobody` listens on the gate's
 * port, keeping every byte and answering every request with a made-up proof. The waiting client
 * (and a new one) meet it, refuse it, say what happened, and the listener never got the token.
 *
 * Needs root (to act as another user) and `runuser`; it fails, saying so, without them.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, it } from "vitest";
import { engineQuery } from "../src/engine-client.js";
import type { Engine } from "../src/engine.js";
import { freePort } from "../src/restate-server.js";
import { runResult, submitRun } from "../src/submit.js";
import { spawnWorker } from "../src/worker-process.js";
import { folderForAnotherUser, requireAnotherUser } from "./support/another-user.js";
import { engineWithFleet, Fleet, testBundle } from "./support/fleet.js";
import { markersFor } from "./support/markers.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const SETUPS = path.join(here, "support", "kill-script.ts");

let root: string;
let attackDir: string;
let engine: Engine | undefined;
let bundle: Awaited<ReturnType<typeof testBundle>> | undefined;
let impostor: ChildProcess | undefined;
const fleet = new Fleet((port, credential) => spawnWorker({ bundle: bundle!.file, port, tmpdir: root, ...credential }));

beforeAll(async () => {
  requireAnotherUser("restate.gate-port.test.ts listens on a stopped engine's gate port");
  root = await mkdtemp(path.join(tmpdir(), "pi-restate-gate-port-"));
  attackDir = await folderForAnotherUser("pi-restate-gate-impostor-", path.join(here, "support", "gate-impostor.mjs"));
  bundle = await testBundle(SETUPS);
  engine = await engineWithFleet(fleet, path.join(root, "engine"), [await freePort()]);
}, 120_000);

afterAll(async () => {
  impostor?.stdin?.end();
  await fleet.stop();
  await engine?.stop();
  await bundle?.remove();
  if (root !== undefined) await rm(root, { recursive: true, force: true });
  if (attackDir !== undefined) await rm(attackDir, { recursive: true, force: true });
});

/** Whether a TCP connection to 127.0.0.1:`port` is established (`/proc/net/tcp`). */
function connectedTo(port: number): boolean {
  const local = `0100007F:${port.toString(16).toUpperCase().padStart(4, "0")}`;
  return readFileSync("/proc/net/tcp", "utf8")
    .split("\n")
    .some((line) => {
      const [, here, , state] = line.trim().split(/\s+/);
      return here === local && state === "01";
    });
}

it("sends its token to no listener another user put on a stopped engine's gate port, and says so", async () => {
  const markers = await markersFor(root, "waiting", (point) => point === "waiting.turn0.stream");
  const effects = path.join(root, "effects.log");
  await writeFile(effects, "");
  await submitRun(engine!, "waiting", {
    setup: "kill-script",
    prompt: "go",
    options: { markers: markers.markers, effects },
  });
  await markers.reach("waiting.turn0.stream");
  // a client waiting on the run (the hang bound is far above the test's steps)
  const waiting = runResult(engine!, "waiting", AbortSignal.timeout(100_000)).then(
    () => new Error("the run ended"),
    (error: Error) => error,
  );
  // its wait is in flight: a connection to the gate is open (the kernel's table of TCP connections)
  while (!connectedTo(Number(new URL(engine!.url).port))) await new Promise((resolve) => setTimeout(resolve, 20));
  markers.stop();
  await fleet.stop();
  await engine!.stop();

  const log = path.join(attackDir, "gate.log");
  const port = new URL(engine!.url).port;
  impostor = spawn(
    "runuser",
    ["-u", "nobody", "--", process.execPath, path.join(attackDir, "gate-impostor.mjs"), port, log],
    {
      cwd: attackDir,
      stdio: ["pipe", "ignore", "pipe"],
    },
  );
  let stderr = "";
  impostor.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  impostor.stdin?.on("error", () => undefined);
  const exited = new Promise<never>((_, reject) =>
    impostor!.once("exit", (code) => reject(new Error(`the gate impostor exited (${code}): ${stderr}`))),
  );
  await Promise.race([
    (async () => {
      while (!existsSync(`${log}.ready`)) await new Promise((resolve) => setTimeout(resolve, 20));
    })(),
    exited,
  ]);

  const said =
    `the listener at ${engine!.url} did not prove it is the engine of this client.json (its proof does not hold); ` +
    "the credential was not sent to it. Either another engine runs there (a new engine folder makes a new credential: " +
    "use its client.json), or another program holds the port of an engine that is not running: " +
    "start `pi-course-restate engine` with its folder again.";
  // the waiting client reached the impostor (it retries a stopped engine), refused it and said why
  expect((await Promise.race([waiting, exited])).message).toBe(said);
  // and a new client (`list` asks the engine's tables) the same
  await expect(engineQuery(engine!, "SELECT id FROM sys_invocation")).rejects.toThrow(said);

  const got = readFileSync(log, "latin1");
  // it was asked to prove itself (so it was reached, and would have got the request next) ...
  expect(got).toContain("GET /pi-course-restate/gate HTTP/1.1");
  // ... and never got the token, nor any request but the proof question
  expect(got).not.toContain(engine!.token);
  expect(got.toLowerCase()).not.toContain("authorization");
  expect(got.match(/^[A-Z]+ \S+ HTTP\/1\.1$/gm)?.every((line) => line === "GET /pi-course-restate/gate HTTP/1.1")).toBe(
    true,
  );
}, 180_000);
