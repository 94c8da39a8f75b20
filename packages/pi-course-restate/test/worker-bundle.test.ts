/**
 * `pi-course-restate bundle` writes a worker and its setups as one file that plain Node runs: it
 * listens with the setups built in, refuses a `--setups` of its own (a second copy), and
 * `spawnWorker` refuses a bundle and a setups module together.
 *
 * Its bound is for a hang only: under tsx, `bundle` compiles the CLI first, which takes seconds on
 * a quiet machine and many more on a loaded one; each child has its own bound on top.
 */
import { spawnSync } from "node:child_process";
import { rm } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, expect, it } from "vitest";
import { spawnWorker, type WorkerProcess } from "../src/worker-process.js";
import { someCredential } from "./support/keys.js";

const PACKAGE = fileURLToPath(new URL("..", import.meta.url));
const OUT = path.join(PACKAGE, ".test-build", `bundle-${process.pid}.mjs`);
const SETUPS = path.join(PACKAGE, "src", "demo-setups.ts");
let worker: WorkerProcess | undefined;

afterAll(async () => {
  await worker?.stop(0);
  await rm(OUT, { force: true });
});

it("bundles a worker with its setups: plain Node runs it, and it takes no --setups of its own", async () => {
  const cli = spawnSync(
    process.execPath,
    ["--import", "tsx", "src/cli.ts", "bundle", "--setups", SETUPS, "--out", OUT],
    { cwd: PACKAGE, encoding: "utf8", timeout: 120_000 },
  );
  expect(cli.stderr).toBe("");
  expect(cli.stdout).toBe(`worker bundle: ${OUT} (run: node ${OUT} --port N)\n`);

  worker = await spawnWorker({ bundle: OUT, port: 0, ...someCredential() });
  expect(worker.child.spawnargs.slice(1, 2)).toEqual([OUT]);

  const refused = spawnSync(process.execPath, [OUT, "--setups", SETUPS], { encoding: "utf8", timeout: 60_000 });
  expect(refused.status).toBe(1);
  expect(refused.stderr).toBe(
    "worker: this worker has its setups built in; it takes no --setups. Run with --help for the options.\n",
  );
  const help = spawnSync(process.execPath, [OUT, "--help"], { encoding: "utf8", timeout: 60_000 });
  expect([help.status, help.stdout.split("\n")[0]]).toEqual([
    0,
    "usage: pi-course-restate worker [--setups MODULE] [options]",
  ]);

  await expect(spawnWorker({ bundle: OUT, setups: SETUPS, port: 0, ...someCredential() })).rejects.toThrow(
    "spawnWorker: a bundle has its setups built in; give `bundle` or `setups`, not both",
  );
}, 180_000);
