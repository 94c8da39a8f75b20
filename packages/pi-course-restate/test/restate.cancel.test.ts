/**
 * A run cancelled on the engine ends cancelled: one worker runs the kill script, the run is held
 * at its first tool call (`c0.before`), cancelled through Restate's admin API, then let go.
 *
 * Checks: the run's result is the engine's cancellation (not a transcript with an errorMessage), and
 * the model is not asked again after the cancelled call (no `turn1.stream` kill point reached).
 */
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, it } from "vitest";
import { cancelRun, engineFetch } from "../src/engine-client.js";
import type { Engine } from "../src/engine.js";
import { freePort } from "../src/restate-server.js";
import { runResult, submitRun } from "../src/submit.js";
import { spawnWorker } from "../src/worker-process.js";
import { engineWithFleet, Fleet, testBundle } from "./support/fleet.js";

const SETUPS = path.join(path.dirname(fileURLToPath(import.meta.url)), "support", "kill-script.ts");

let root: string;
let engine: Engine | undefined;
let bundle: Awaited<ReturnType<typeof testBundle>> | undefined;
const fleet = new Fleet((port, credential) => spawnWorker({ bundle: bundle!.file, port, tmpdir: root, ...credential }));

beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), "pi-restate-cancel-"));
  bundle = await testBundle(SETUPS);
  engine = await engineWithFleet(fleet, path.join(root, "restate"), [await freePort()]);
});

afterAll(async () => {
  await fleet.stop();
  await engine?.stop();
  await bundle?.remove();
  if (root !== undefined) await rm(root, { recursive: true, force: true });
});

/** Resolves with the marker file named `<run>.<point>@<pid>` once it is there. */
async function reach(markers: string, name: string): Promise<void> {
  while (!(await readdir(markers)).some((file) => file.startsWith(`${name}@`)))
    await new Promise((resolve) => setTimeout(resolve, 10));
}

/** Writes the `.go` file of every kill point reached. */
async function goAll(markers: string): Promise<void> {
  for (const file of await readdir(markers)) {
    if (file.endsWith(".go")) continue;
    const go = path.join(markers, `${file.split("@")[0]}.go`);
    if (!existsSync(go)) await writeFile(go, "");
  }
}

it("ends a run cancelled on the engine as cancelled, and asks the model no more", async () => {
  const markers = path.join(root, "markers");
  await mkdir(markers);
  const options = { markers, effects: path.join(root, "effects.log") };
  const invocationId = await submitRun(engine!, "x0", { setup: "kill-script", prompt: "go", options });
  await reach(markers, "x0.turn0.stream");
  await writeFile(path.join(markers, "x0.turn0.stream.go"), "");
  await reach(markers, "x0.c0.before");
  const cancelled = await engineFetch(engine!, `/admin/invocations/${invocationId}/cancel`, { method: "PATCH" });
  expect(cancelled.status, await cancelled.text()).toBeLessThan(300);
  // from here on every kill point is let go at once, so a wrongly asked turn shows as its marker
  const letGo = setInterval(() => void goAll(markers), 5);
  const outcome = await runResult(engine!, "x0", AbortSignal.timeout(15_000))
    .then(
      (output) => ({ output }),
      (error: Error) => ({ error: error.message }),
    )
    .finally(() => clearInterval(letGo));
  expect(outcome).toEqual({ error: expect.stringMatching(/cancel/i) });
  // the worker may still be at the step it was cancelled in: give a wrongly asked turn time to show
  await new Promise((resolve) => setTimeout(resolve, 300));
  expect((await readdir(markers)).filter((file) => file.startsWith("x0.turn1"))).toEqual([]);
  // cancelling it again finds it ended
  expect(await cancelRun(engine!, "x0")).toEqual({ invocationId, outcome: "ended" });
}, 30_000);
