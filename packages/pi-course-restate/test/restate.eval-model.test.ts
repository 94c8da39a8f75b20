/**
 * An eval suite through the engine against a model server: the run names the server and the
 * model, never the key; the worker reads the key from its own environment. A recording
 * OpenAI-compatible server on 127.0.0.1 (@pi/course's replay server) sees the worker's key; the
 * engine's journal and state hold it nowhere; an input that carries a key is refused.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { attach } from "../src/attach.js";
import { type EngineModelServer, EVAL_RUN } from "../src/eval-run.js";
import { evalOnEngine } from "../src/eval-suite.js";
import { engineFetch } from "../src/engine-client.js";
import { type GreetOnEngine, greetOnEngine } from "./support/greet-suite.js";

const KEY = "sk-held-by-the-worker-7f3a";
let on: GreetOnEngine | undefined;

beforeAll(async () => {
  on = await greetOnEngine("pi-restate-eval-model-", { OPENAI_API_KEY: KEY });
});

afterAll(async () => {
  await on?.stop();
});

it("runs a suite on a model server with the key the worker holds; the engine never sees the key", async () => {
  const { root, suite, engine, model } = on!;
  expect(process.env.OPENAI_API_KEY ?? "").not.toBe(KEY);
  const result = await evalOnEngine({
    suite,
    engine,
    out: path.join(root, "report"),
    server: { provider: "openai", baseUrl: model.baseUrl, model: "m" },
  });
  expect(result.report.cases.map((c) => [c.name, c.runs.map((r) => [r.status, r.reason])])).toEqual([
    ["greet", [["passed", undefined]]],
  ]);
  expect(result.exitCode).toBe(0);
  expect(model.requests.map((r) => r.authorization)).toEqual([`Bearer ${KEY}`]);
  // nothing the engine keeps holds the key: the journals (every entry, as JSON and raw) and the state
  const reads: [string, string][] = [
    ["SELECT entry_json, raw FROM sys_journal", "greet"],
    ["SELECT * FROM sys_invocation", "greet"],
    ["SELECT * FROM state", "rows"], // a workflow's state: none here
  ];
  for (const [sql, seen] of reads) {
    const response = await engineFetch(engine, "/admin/query", {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify({ query: sql }),
    });
    const text = await response.text();
    expect(response.status, text).toBe(200);
    expect(text).toContain(seen); // the query did read the run
    expect(text).not.toContain(KEY);
    expect(text).not.toContain(Buffer.from(KEY).toString("base64").slice(0, 20));
  }
}, 180_000);

it("refuses a run whose input carries a key", async () => {
  const { root, suite, engine, model } = on!;
  const key = encodeURIComponent("keyed/greet/0");
  const sent = await engineFetch(engine, `/${EVAL_RUN}/${key}/run/send`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      caseDir: path.join(suite, "greet"),
      repeat: 0,
      server: { provider: "openai", baseUrl: model.baseUrl, model: "m", apiKey: "sk-in-the-journal" },
    }),
  });
  expect(sent.status).toBe(202);
  const done = await attach(`${engine.url}/restate/workflow/${EVAL_RUN}/${key}/attach`, {
    token: engine.token,
  });
  expect(done.ok).toBe(false);
  const refusal =
    "server.apiKey looks like a credential, and a run's input is kept in the engine's journal. " +
    'Give the workers the key in their own environment or a file, and let the options name it (e.g. { "apiKeyEnv": "OPENAI_API_KEY" }).';
  expect((JSON.parse(done.text) as { message: string }).message).toContain(`EvalRun: ${refusal}`);
  // the client refuses it before anything is sent (the same guard)
  const server = { provider: "openai", baseUrl: model.baseUrl, model: "m", apiKey: "sk-in-the-journal" } as const;
  await expect(
    evalOnEngine({ suite, engine, out: path.join(root, "never"), server: server as EngineModelServer }),
  ).rejects.toThrow(`suite not submitted: ${refusal}`);
  expect(existsSync(path.join(root, "never"))).toBe(false);
}, 120_000);
