/**
 * A dead worker's port taken by another local user (`runuser -u nobody`) gets no run: the proxy
 * sends runs only to a listener that proves it holds the workers' secret for the address it was
 * reached at (`worker-proof.ts`). Two impostors on the port of a SIGKILLed worker: one relays
 * every connection to a live worker (so the version question is answered by a real worker, with
 * that worker's proof), one claims a version of its own with a forged proof. Neither receives a
 * byte of any run, the claimed version is never registered, and every run finishes on the real
 * worker.
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
import { engineVersions } from "../src/engine-client.js";
import type { Engine } from "../src/engine.js";
import { freePort } from "../src/restate-server.js";
import { runDurably } from "../src/submit.js";
import { spawnWorker } from "../src/worker-process.js";
import { folderForAnotherUser, requireAnotherUser } from "./support/another-user.js";
import { engineWithFleet, Fleet, testBundle } from "./support/fleet.js";
import { DONE } from "./support/kill-script.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const SETUPS = path.join(here, "support", "kill-script.ts");

let root: string;
let attackDir: string;
let engine: Engine | undefined;
let bundle: Awaited<ReturnType<typeof testBundle>> | undefined;
const impostors: ChildProcess[] = [];
const lines: string[] = [];
const fleet = new Fleet((port, credential) => spawnWorker({ bundle: bundle!.file, port, tmpdir: root, ...credential }));

beforeAll(async () => {
  requireAnotherUser("restate.takeover.test.ts listens on a dead worker's port");
  root = await mkdtemp(path.join(tmpdir(), "pi-restate-takeover-"));
  attackDir = await folderForAnotherUser("pi-restate-impostor-", path.join(here, "support", "impostor.mjs"));
  bundle = await testBundle(SETUPS);
  engine = await engineWithFleet(fleet, path.join(root, "engine"), [await freePort(), await freePort()], {
    log: (line) => lines.push(line),
  });
}, 120_000);

afterAll(async () => {
  for (const impostor of impostors) impostor.stdin?.end();
  await fleet.stop();
  await engine?.stop();
  await bundle?.remove();
  if (root !== undefined) await rm(root, { recursive: true, force: true });
  if (attackDir !== undefined) await rm(attackDir, { recursive: true, force: true });
});

/** Starts the impostor as `nobody` on `port`; resolves with its log's path once it listens. */
async function impostor(mode: "relay" | "claim", port: number, target?: number): Promise<string> {
  const log = path.join(attackDir, `${mode}.log`);
  const args = [process.execPath, path.join(attackDir, "impostor.mjs"), mode, String(port), log];
  const child = spawn("runuser", ["-u", "nobody", "--", ...args, ...(target === undefined ? [] : [String(target)])], {
    cwd: attackDir,
    stdio: ["pipe", "ignore", "pipe"],
  });
  impostors.push(child);
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  child.stdin?.on("error", () => undefined);
  const exited = new Promise<never>((_, reject) =>
    child.once("exit", (code) => reject(new Error(`the impostor exited (${code}): ${stderr}`))),
  );
  await Promise.race([until(() => existsSync(`${log}.ready`)), exited]);
  return log;
}

async function until(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((resolve) => setTimeout(resolve, 20));
}

const connections = (log: string) =>
  (JSON.parse(readFileSync(`${log}.ready`, "utf8")) as { connections: number }).connections;

it("sends no run to a listener another user put on a dead worker's port, and finishes every run on a real worker", async () => {
  const [dead, live] = fleet.workers;
  const effects = path.join(root, "effects.log");
  await writeFile(effects, "");
  dead!.child.kill("SIGKILL");
  await new Promise((resolve) => dead!.child.once("exit", resolve));

  // 1. a relay to the live worker: the version question is answered by a real worker, whose
  // proof names its own address, not this one
  const relay = await impostor("relay", dead!.port, live!.port);
  const secret = "takeover-secret-4d1c9e";
  for (let i = 0; i < 4; i++) {
    const run = await runDurably(engine!, `takeover-relay-${i}`, {
      setup: "kill-script",
      prompt: secret,
      options: { effects },
    });
    expect(JSON.stringify(run.messages)).toContain(DONE);
  }
  // what reached it: the version question, never a byte of a run
  const relayed = readFileSync(`${relay}.bytes`);
  expect(relayed.length).toBeGreaterThan(0);
  expect(relayed.includes(secret)).toBe(false);
  expect(relayed.includes("takeover-relay")).toBe(false);
  expect(lines).toContain(
    `the listener at http://127.0.0.1:${dead!.port} did not prove it is a worker of this engine ` +
      "(its answer holds no valid proof of the workers' secret); it gets no run. " +
      "If it is one, give it this engine's identity-keys; if not, another program took a worker's port.",
  );
  await until(() => connections(relay) >= 2); // the proxy kept trying it, and kept refusing it
  const relaying = impostors.pop()!;
  const gone = new Promise((resolve) => relaying.once("exit", resolve));
  relaying.stdin!.end();
  await gone; // the port is free again

  // 2. a listener that claims a version of its own: asked again on every look (a proven worker's
  // session is kept and asked once), never registered, never sent a run
  const claim = await impostor("claim", dead!.port);
  await until(() => connections(claim) >= 3);
  const run = await runDurably(engine!, "takeover-claim", {
    setup: "kill-script",
    prompt: secret,
    options: { effects },
  });
  expect(JSON.stringify(run.messages)).toContain(DONE);
  expect((await engineVersions(engine!)).map((v) => v.version)).not.toContain("nobody-code");
  const asked = readFileSync(claim, "utf8")
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as { path: string; length: number });
  expect(asked.length).toBeGreaterThanOrEqual(2);
  expect(asked.every((request) => request.path === "/pi-course-restate/version" && request.length === 0)).toBe(true);
  expect(readFileSync(`${claim}.bytes`).includes(secret)).toBe(false);
}, 180_000);
