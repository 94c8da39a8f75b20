/**
 * The engine's proxy port taken by another local user (`runuser -u nobody`) while the engine
 * stops or starts again. The Restate server sends runs in flight to that port (their journals, and
 * with each request the engine's signed request identity, which every worker takes for 60 s), so
 * no server may run while the proxy does not hold it: the proxy listens before the server starts
 * and closes only after it ended. A program that tries to listen on the port every millisecond
 * gets it as the engine stops; no server of the engine runs from then on (it would send the run
 * there: a race the attacker wins now and then, so the test watches the server, not only the
 * bytes), the taker gets no request, and the engine's start stops at the taken port before any
 * server runs, saying so. With the port free again, the run finishes.
 *
 * Needs root (to act as another user) and `runuser`; it fails, saying so, without them.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type Engine, startEngine } from "../src/engine.js";
import { freePort } from "../src/restate-server.js";
import { runResult, submitRun } from "../src/submit.js";
import { spawnWorker, type WorkerProcess } from "../src/worker-process.js";
import { folderForAnotherUser, requireAnotherUser } from "./support/another-user.js";
import { testBundle, versionsUntil } from "./support/fleet.js";

const here = path.dirname(fileURLToPath(import.meta.url));

let root: string;
let attackDir: string;
let bundle: Awaited<ReturnType<typeof testBundle>> | undefined;
let worker: WorkerProcess | undefined;
let grabber: ChildProcess | undefined;
const engines: Engine[] = [];

beforeAll(async () => {
  requireAnotherUser("restate.attacks.ports.test.ts takes the engine's proxy port");
  root = await mkdtemp(path.join(tmpdir(), "pi-restate-ports-"));
  attackDir = await folderForAnotherUser("pi-restate-grabber-", path.join(here, "support", "port-grabber.mjs"));
  bundle = await testBundle(path.join(here, "support", "ops-setups.ts"));
}, 120_000);

afterAll(async () => {
  grabber?.stdin?.end();
  await worker?.stop(0);
  for (const engine of engines) await engine.stop();
  await bundle?.remove();
  if (root !== undefined) await rm(root, { recursive: true, force: true });
  if (attackDir !== undefined) await rm(attackDir, { recursive: true, force: true });
});

/** The pids of Restate servers started on the engine folder `dir` (their command line names its config). */
function serversOn(dir: string): number[] {
  const config = path.join(dir, "restate.toml");
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        const args = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
        return args.some((arg, i) => arg === "--config-file" && args[i + 1] === config);
      } catch {
        return false;
      }
    })
    .map(Number);
}

async function until(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((resolve) => setTimeout(resolve, 20));
}

it("sends no run to another user who takes the proxy port as the engine stops, and starts no server while it holds it", async () => {
  const dir = path.join(root, "engine");
  const port = await freePort();
  const workers = [`http://127.0.0.1:${port}`];
  const first = await startEngine({ dir, workers, watchMs: 100, log: () => undefined });
  engines.push(first);
  worker = await spawnWorker({ bundle: bundle!.file, port, ...first.workerCredential });
  await versionsUntil(first, (versions) => versions.some((v) => v.state === "serving"));
  const held = path.join(root, "held");
  await mkdir(held);
  const prompt = "a prompt only the owner may read 5e1f";
  await submitRun(first, "held", { setup: "hold", prompt, options: { dir: held } });
  await until(() => existsSync(path.join(held, "held.waiting")));

  // another user tries to listen on the proxy's port every millisecond
  const log = path.join(attackDir, "grab.log");
  const proxyPort = new URL(first.proxyUrl).port;
  grabber = spawn(
    "runuser",
    ["-u", "nobody", "--", process.execPath, path.join(attackDir, "port-grabber.mjs"), proxyPort, log],
    { cwd: attackDir, stdio: ["pipe", "ignore", "pipe"] },
  );
  grabber.stdin?.on("error", () => undefined);
  await until(() => existsSync(`${log}.ready`));

  // from now on, whether a Restate server of this folder ever runs while the other user holds the port
  let overlap = false;
  const watch = setInterval(() => {
    if (readFileSync(log, "utf8").includes("listening") && serversOn(dir).length > 0) overlap = true;
  }, 5);

  // the engine stops with a run in flight: the proxy's port is free only once its server ended
  await first.stop();
  engines.pop();
  await until(() => readFileSync(log, "utf8").includes("listening")); // it got the port

  // started again while the port is taken
  const refused = await startEngine({ dir, workers, watchMs: 100, log: () => undefined }).then(
    (engine) => engine,
    (error: Error) => error,
  );
  if (!(refused instanceof Error)) engines.push(refused);
  clearInterval(watch);
  expect(overlap, "a Restate server ran while another user held the proxy's port").toBe(false);
  // what the port's taker got: no request (no request identity, no journal), not a byte of the run
  expect(
    readFileSync(log, "utf8")
      .split("\n")
      .filter((line) => line.startsWith("{")),
  ).toEqual([]);
  expect(readFileSync(`${log}.bytes`).includes(prompt)).toBe(false);
  // and the engine says why
  expect((refused as Error).message).toBe(
    `the engine's proxy port ${proxyPort} is taken by another program; it is the port this engine had ` +
      "(its deployments name it), so free it, or give --proxy-port to move (then runs in flight on the old address are lost). " +
      "No Restate server was started.",
  );

  // the port free again, the engine starts on it and the run goes on to its end
  const gone = new Promise((resolve) => grabber!.once("exit", resolve));
  grabber.stdin!.end();
  await gone;
  const again = await startEngine({ dir, workers, watchMs: 100, log: () => undefined });
  engines.push(again);
  await writeFile(path.join(held, "held.go"), "");
  const output = await runResult(again, "held", AbortSignal.timeout(100_000));
  expect(JSON.stringify(output.messages)).toContain("released: ");
}, 180_000);
