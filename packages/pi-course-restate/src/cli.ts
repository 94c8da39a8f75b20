/**
 * `pi-course-restate`: the engine, workers and runs from a shell.
 *
 *   engine --dir DIR --workers URL[,URL…]   start the engine (`startEngine`: Restate with its data in
 *                                            DIR, its gate, a proxy in front of the workers; each
 *                                            version of worker code a deployment); runs until Ctrl-C
 *   worker --setups MODULE [--port N]        start a worker (see worker-command.ts)
 *   bundle [--setups MODULE] --out FILE.mjs  write a worker and its setups as one file (`bundleWorker`);
 *                                            run it with `node FILE.mjs [--port N]`
 *   submit --engine DIR --setup NAME --prompt TEXT [--id RUN] [--options JSON] [--session FILE]
 *                                            hand a run to the engine, wait, print its answer
 *   eval SUITE --engine DIR [--repeat K] [--out DIR] [--id RUN]
 *                                            every case × repeat to the engine; the reports of
 *                                            `pi-course eval` (exit code 0 all passed, 1 not)
 */
import { randomUUID } from "node:crypto";
import path from "node:path";
import { parseArgs } from "node:util";
import { type AgentMessage, formatSummary } from "@pi/course";
import { readConnection } from "./engine-client.js";
import { startEngine } from "./engine.js";
import { evalOnEngine } from "./eval-suite.js";
import { runDurably, writeSession } from "./submit.js";
import { bundleWorker } from "./worker-bundle.js";
import { runWorkerCommand } from "./worker-command.js";

const USAGE = `usage:
  cli.ts engine --dir DIR --workers http://127.0.0.1:9081,http://127.0.0.1:9082 [--port N] [--proxy-port N] [--max-restarts N]
  cli.ts worker --setups MODULE --identity-keys-file DIR/identity-keys [--port N] [--suites DIR,…] [--version V]
  cli.ts bundle [--setups MODULE] --out FILE.mjs
  cli.ts submit --engine DIR --setup NAME --prompt TEXT [--id RUN] [--options JSON] [--session FILE]
  cli.ts eval SUITE --engine DIR [--repeat K] [--out DIR] [--id RUN]
(--engine: the engine's --dir or its client.json; default $PI_RESTATE_ENGINE)`;

async function engine(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      dir: { type: "string" },
      workers: { type: "string" },
      port: { type: "string" },
      "proxy-port": { type: "string" },
      "max-restarts": { type: "string" },
    },
  });
  if (values.dir === undefined || values.workers === undefined)
    throw new Error(`engine needs --dir and --workers\n${USAGE}`);
  const workers = values.workers.split(",").filter((url) => url !== "");
  const maxRestarts = Number(values["max-restarts"] ?? 5);
  if (!Number.isInteger(maxRestarts) || maxRestarts < 0)
    throw new Error(`--max-restarts must be a whole number (restarts of the Restate server within a minute)\n${USAGE}`);
  const running = await startEngine({
    dir: values.dir,
    workers,
    ...(values.port !== undefined && { port: Number(values.port) }),
    ...(values["proxy-port"] !== undefined && { proxyPort: Number(values["proxy-port"]) }),
    maxRestarts,
  });
  process.stdout.write(
    `engine: ${running.url} (credential: ${running.connectionFile}; workers: --identity-keys-file ${running.identityKeysFile}; proxy ${running.proxyUrl})\n`,
  );
  const failure = await Promise.race([
    running.failed,
    new Promise<undefined>((resolve) => {
      process.once("SIGINT", () => resolve(undefined));
      process.once("SIGTERM", () => resolve(undefined));
    }),
  ]);
  await running.stop();
  if (failure !== undefined) throw failure;
}

async function submit(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      engine: { type: "string" },
      setup: { type: "string" },
      prompt: { type: "string" },
      id: { type: "string" },
      options: { type: "string" },
      session: { type: "string" },
    },
  });
  if (values.setup === undefined || values.prompt === undefined) {
    throw new Error(`submit needs --setup and --prompt\n${USAGE}`);
  }
  const engine = await readConnection(values.engine);
  let options: unknown;
  try {
    options = values.options === undefined ? undefined : JSON.parse(values.options);
  } catch {
    throw new Error(`--options must be JSON, got ${values.options}`);
  }
  const runId = values.id ?? randomUUID();
  process.stdout.write(`run ${runId} submitted\n`);
  const output = await runDurably(engine, runId, { setup: values.setup, prompt: values.prompt, options });
  if (values.session !== undefined) await writeSession(path.resolve(values.session), output.messages, process.cwd());
  const last = output.messages.at(-1) as AgentMessage | undefined;
  const text = last?.role === "assistant" ? last.content.map((c) => (c.type === "text" ? c.text : "")).join("") : "";
  process.stdout.write(`${text}\n`);
  if (output.errorMessage !== undefined) throw new Error(`the run failed: ${output.errorMessage}`);
}

async function evalSuite(args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      engine: { type: "string" },
      repeat: { type: "string" },
      out: { type: "string" },
      id: { type: "string" },
    },
  });
  const [suite] = positionals;
  if (suite === undefined) throw new Error(`eval needs SUITE\n${USAGE}`);
  const engine = await readConnection(values.engine);
  const repeat = values.repeat === undefined ? 1 : Number(values.repeat);
  if (!Number.isInteger(repeat) || repeat < 1)
    throw new Error(`--repeat must be a whole number above 0, got ${values.repeat}`);
  let done = 0;
  const result = await evalOnEngine({
    suite,
    engine,
    repeat,
    ...(values.out !== undefined && { out: values.out }),
    ...(values.id !== undefined && { runId: values.id }),
    onDone: (record) => {
      const what = record.status === "passed" ? "PASS" : record.status.toUpperCase();
      process.stderr.write(
        `[${++done}] ${what} ${record.case} #${record.repeat}${record.reason ? `: ${record.reason}` : ""}\n`,
      );
    },
  });
  process.stdout.write(formatSummary(result.report));
  process.stdout.write(
    `report: ${result.out}/report.html\njson:   ${result.out}/report.json\nsuite run: ${result.runId}\n`,
  );
  process.exitCode = result.exitCode;
}

async function bundle(args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { setups: { type: "string" }, out: { type: "string" } } });
  if (values.out === undefined) throw new Error(`bundle needs --out\n${USAGE}`);
  await bundleWorker({ ...(values.setups !== undefined && { setups: values.setups }), outfile: values.out });
  process.stdout.write(`worker bundle: ${path.resolve(values.out)} (run: node ${values.out} --port N)\n`);
}

async function main(): Promise<void> {
  const [command, ...args] = process.argv.slice(2);
  if (command === "engine") return engine(args);
  if (command === "submit") return submit(args);
  if (command === "eval") return evalSuite(args);
  if (command === "worker") return runWorkerCommand(args);
  if (command === "bundle") return bundle(args);
  throw new Error(USAGE);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
