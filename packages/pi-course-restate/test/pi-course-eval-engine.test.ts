/**
 * `pi-course eval SUITE --engine URL` (@pi/course's CLI, its eval-engine feature) runs the suite
 * through the engine: against a model server whose key only the worker holds (`--api-key-env`
 * names the worker's variable; this process does not have it), with the reports and exit code of
 * `pi-course eval`. A key given to the CLI with --engine is refused.
 */
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { runEval } from "../../pi-course/src/cli/eval-command.js";
import { type GreetOnEngine, greetOnEngine } from "./support/greet-suite.js";

const KEY = "sk-only-the-worker-has-it-91c2";
let on: GreetOnEngine | undefined;

beforeAll(async () => {
  on = await greetOnEngine("pi-course-eval-engine-", { WORKER_MODEL_KEY: KEY });
});

afterAll(async () => {
  await on?.stop();
});

/** Runs `pi-course eval` with `argv`; its exit code and output. */
async function evalCli(argv: string[]) {
  let stdout = "";
  let stderr = "";
  const { WORKER_MODEL_KEY: _none, ...env } = process.env;
  const code = await runEval(argv, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    env,
  });
  return { code, stdout, stderr };
}

it("runs a suite through the engine on a model server, the key read by the worker from the variable --api-key-env names", async () => {
  const { root, suite, engine, model } = on!;
  const out = path.join(root, "report");
  const { code, stdout, stderr } = await evalCli([
    suite,
    "--engine",
    engine.dir,
    "--base-url",
    model.baseUrl,
    "--model",
    "m",
    "--api-key-env",
    "WORKER_MODEL_KEY",
    "--out",
    out,
  ]);
  expect(stderr).toBe(`eval · on the engine at ${engine.url} · model: m (the workers' key)\n[1] PASS greet #0\n`);
  expect(stdout).toMatch(/^1\/1 cases passed/m);
  expect(stdout).toContain(`report: ${out}/report.html\n`);
  expect(code).toBe(0);
  expect(model.requests.map((r) => r.authorization)).toEqual([`Bearer ${KEY}`]);
}, 180_000);

it("refuses a key given to the CLI with --engine: the workers hold it", async () => {
  const { root, suite, engine, model } = on!;
  const { code, stderr } = await evalCli([
    suite,
    "--engine",
    engine.dir,
    "--base-url",
    model.baseUrl,
    "--model",
    "m",
    "--api-key-file",
    path.join(root, "key"),
  ]);
  expect([code, stderr]).toEqual([
    2,
    "error: with --engine the workers hold the model's key: start them with it in their environment and name the variable with --api-key-env, not --api-key-file.\nRun `pi-course eval --help` for the options.\n",
  ]);
}, 60_000);
