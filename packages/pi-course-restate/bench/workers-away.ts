/**
 * The manual proof of issue 55's "runs that never stall" at full scale (`npx tsx
 * bench/workers-away.ts [SECONDS]`, default 150): a run held at a tool call, every worker
 * SIGKILLed, none back for SECONDS (the old policy paused a run for good after ~105 s), then one
 * worker back. Prints the run's state while it waits, and how it ended. The default retry policy
 * (waits capped at 1 s). The test (`restate.faults.test.ts`) proves the same at a tenth of the cap.
 */
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { engineQuery, engineVersions } from "../src/engine-client.js";
import { startEngine } from "../src/engine.js";
import { freePort } from "../src/restate-server.js";
import { runResult, submitRun } from "../src/submit.js";
import { bundleWorker } from "../src/worker-bundle.js";
import { spawnWorker, type WorkerProcess } from "../src/worker-process.js";

const SECONDS = Number(process.argv[2] ?? 150);
const HERE = path.dirname(fileURLToPath(import.meta.url));

async function main(): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), "pi-restate-away-"));
  const bundle = path.join(HERE, "..", ".test-build", `away-${process.pid}.mjs`);
  await bundleWorker({ setups: path.join(HERE, "..", "test", "support", "kill-script.ts"), outfile: bundle });
  const ports = [await freePort(), await freePort()];
  const engine = await startEngine({
    dir: path.join(dir, "engine"),
    workers: ports.map((p) => `http://127.0.0.1:${p}`),
  });
  const start = (port: number) => spawnWorker({ bundle, port, tmpdir: dir, ...engine.workerCredential });
  let workers: WorkerProcess[] = await Promise.all(ports.map(start));
  try {
    while ((await engineVersions(engine)).length === 0) await new Promise((r) => setTimeout(r, 100));
    const markers = path.join(dir, "markers");
    await mkdir(markers);
    const options = { markers, effects: path.join(dir, "effects.log") };
    await submitRun(engine, "away", { setup: "kill-script", prompt: "go", options });
    const result = runResult(engine, "away");
    const letGo = setInterval(async () => {
      for (const file of await readdir(markers)) {
        const point = file.split("@")[0]!;
        if (!file.endsWith(".go") && point !== "away.c0.before" && !existsSync(path.join(markers, `${point}.go`)))
          await writeFile(path.join(markers, `${point}.go`), "");
      }
    }, 10);
    while (!(await readdir(markers)).some((f) => f.startsWith("away.c0.before@")))
      await new Promise((r) => setTimeout(r, 10));
    for (const worker of workers) worker.child.kill("SIGKILL");
    const away = Date.now();
    console.log(`all ${workers.length} workers SIGKILLed; none back for ${SECONDS} s`);
    workers = [];
    const state = async () =>
      (
        await engineQuery(
          engine,
          "SELECT status, retry_count, last_failure FROM sys_invocation WHERE target_service_key = 'away'",
        )
      )[0]!;
    while (Date.now() - away < SECONDS * 1000) {
      await new Promise((r) => setTimeout(r, 15_000));
      const s = await state();
      console.log(`  ${((Date.now() - away) / 1000).toFixed(0)} s: ${s.status}, ${s.retry_count} attempts`);
    }
    await writeFile(path.join(markers, "away.c0.before.go"), "");
    const back = Date.now();
    workers.push(await start(ports[0]!));
    const output = await result;
    clearInterval(letGo);
    const last = output.messages.at(-1)!;
    console.log(
      `a worker back after ${((back - away) / 1000).toFixed(1)} s away; the run ended ${((Date.now() - back) / 1000).toFixed(2)} s later: ` +
        JSON.stringify(last.role === "assistant" ? last.content : last),
    );
  } finally {
    for (const worker of workers) worker.child.kill("SIGKILL");
    await engine.stop();
    await rm(bundle, { force: true });
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
