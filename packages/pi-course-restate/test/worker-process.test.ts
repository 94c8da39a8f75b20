/**
 * `spawnWorker`'s children: each has a TMPDIR of its own by default (made under the parent's,
 * removed when it stops), `stop()` ends one and waits for its exit, and a worker whose parent
 * died (SIGKILL: no handler runs in the parent) stops by itself, as its standard input closes.
 *
 * Waits are on processes and files (the tests' own timeouts are the hang bounds).
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, it } from "vitest";
import { spawnWorker, type WorkerProcess } from "../src/worker-process.js";
import { testBundle } from "./support/fleet.js";
import { someCredential } from "./support/keys.js";

const ROOT = fileURLToPath(new URL("../../..", import.meta.url));
const SOURCE = fileURLToPath(new URL("../src/worker-process.ts", import.meta.url));
let root: string;
let bundle: Awaited<ReturnType<typeof testBundle>>;
const started: WorkerProcess[] = [];
const pids: number[] = [];

beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), "pi-restate-children-"));
  bundle = await testBundle();
});

afterAll(async () => {
  for (const worker of started) await worker.stop(0);
  for (const pid of pids) if (alive(pid)) process.kill(pid, "SIGKILL");
  await bundle?.remove();
  if (root !== undefined) await rm(root, { recursive: true, force: true });
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function gone(pid: number): Promise<void> {
  while (alive(pid)) await new Promise((resolve) => setTimeout(resolve, 20));
}

it("gives each worker a TMPDIR of its own by default, and stop() ends it and removes that folder", async () => {
  const parentTmp = path.join(root, "parent-tmp");
  const before = process.env.TMPDIR;
  process.env.TMPDIR = parentTmp; // the workers inherit it, and make their own folder inside
  await mkdir(parentTmp);
  try {
    const pair = await Promise.all(
      [0, 0].map((port) => spawnWorker({ bundle: bundle.file, port, ...someCredential() })),
    );
    started.push(...pair);
  } finally {
    if (before === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = before;
  }
  const own = (await readdir(parentTmp)).sort();
  expect(own).toHaveLength(2);
  for (const folder of own) {
    expect(folder).toMatch(/^pi-course-worker-/);
    // the worker's eval cases run in there, not beside the other worker's
    expect(await readdir(path.join(parentTmp, folder))).toEqual([expect.stringMatching(/^pi-restate-cases-/)]);
  }
  const [first] = started;
  await first!.stop();
  expect(first!.child.exitCode ?? first!.child.signalCode).toBe(0);
  expect(await readdir(parentTmp)).toHaveLength(1);
}, 120_000);

it("a worker stops by itself when the process that spawned it is SIGKILLed", async () => {
  // a parent that spawns a worker, prints its pid, and waits for ever
  const parent = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      "--input-type=module",
      "-e",
      `import { spawnWorker } from ${JSON.stringify(SOURCE)};
       const worker = await spawnWorker({ bundle: ${JSON.stringify(bundle.file)}, port: 0, graceMs: 100, ...${JSON.stringify(someCredential())} });
       process.stdout.write(worker.pid + "\\n");
       setInterval(() => {}, 1000);`,
    ],
    { cwd: ROOT, stdio: ["ignore", "pipe", "inherit"] },
  );
  pids.push(parent.pid!);
  let out = "";
  parent.stdout!.setEncoding("utf8");
  const workerPid = await new Promise<number>((resolve, reject) => {
    parent.stdout!.on("data", (chunk: string) => {
      out += chunk;
      if (out.endsWith("\n")) resolve(Number(out.trim()));
    });
    parent.once("exit", (code) => reject(new Error(`the parent exited (${code}) before its worker listened`)));
  });
  pids.push(workerPid);
  expect(alive(workerPid)).toBe(true);
  parent.kill("SIGKILL");
  await gone(workerPid);
  expect(existsSync(`/proc/${workerPid}`)).toBe(false);
}, 120_000);
