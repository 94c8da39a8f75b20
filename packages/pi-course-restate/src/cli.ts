/**
 * `pi-course-restate`: the engine, workers and runs from a shell.
 *
 *   engine --dir DIR --workers URL[,URL…]   start Restate (data in DIR) and a proxy in front of
 *                                            the workers, register it; runs until Ctrl-C
 *   worker --setups MODULE [--port N]        start a worker (see worker-command.ts)
 *   bundle [--setups MODULE] --out FILE.mjs  write a worker and its setups as one file (`bundleWorker`);
 *                                            run it with `node FILE.mjs [--port N]`
 *   submit --ingress URL --setup NAME --prompt TEXT [--id RUN] [--options JSON] [--session FILE]
 *                                            hand a run to the engine, wait, print its answer
 *   eval SUITE --ingress URL [--repeat K] [--out DIR] [--id RUN]
 *                                            every case × repeat to the engine; the reports of
 *                                            `pi-course eval` (exit code 0 all passed, 1 not)
 */
import { randomUUID } from "node:crypto";
import path from "node:path";
import { parseArgs } from "node:util";
import { type AgentMessage, formatSummary } from "@pi/course";
import { evalOnEngine } from "./eval-suite.js";
import { startProxy } from "./proxy.js";
import { startRestateServer } from "./restate-server.js";
import { runDurably, writeSession } from "./submit.js";
import { bundleWorker } from "./worker-bundle.js";
import { runWorkerCommand } from "./worker-command.js";

const USAGE = `usage:
  cli.ts engine --dir DIR --workers http://127.0.0.1:9081,http://127.0.0.1:9082 [--proxy-port N]
  cli.ts worker --setups MODULE [--port N]
  cli.ts bundle [--setups MODULE] --out FILE.mjs
  cli.ts submit --ingress URL --setup NAME --prompt TEXT [--id RUN] [--options JSON] [--session FILE]
  cli.ts eval SUITE --ingress URL [--repeat K] [--out DIR] [--id RUN]`;

async function engine(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: { dir: { type: "string" }, workers: { type: "string" }, "proxy-port": { type: "string" } },
  });
  if (values.dir === undefined || values.workers === undefined)
    throw new Error(`engine needs --dir and --workers\n${USAGE}`);
  const workers = values.workers.split(",").filter((url) => url !== "");
  const server = await startRestateServer({ dir: path.resolve(values.dir) });
  const proxy = await startProxy({ workers, port: Number(values["proxy-port"] ?? 0) });
  try {
    await server.register(proxy.url);
  } catch (error) {
    await proxy.close();
    await server.stop();
    throw new Error(`${error instanceof Error ? error.message : error}\nStart at least one worker first.`);
  }
  process.stdout.write(`engine: ingress ${server.ingressUrl}  admin ${server.adminUrl}  workers behind ${proxy.url}\n`);
  await new Promise<void>((resolve) => {
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
  await proxy.close();
  await server.stop();
}

async function submit(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      ingress: { type: "string" },
      setup: { type: "string" },
      prompt: { type: "string" },
      id: { type: "string" },
      options: { type: "string" },
      session: { type: "string" },
    },
  });
  if (values.ingress === undefined || values.setup === undefined || values.prompt === undefined) {
    throw new Error(`submit needs --ingress, --setup and --prompt\n${USAGE}`);
  }
  let options: unknown;
  try {
    options = values.options === undefined ? undefined : JSON.parse(values.options);
  } catch {
    throw new Error(`--options must be JSON, got ${values.options}`);
  }
  const runId = values.id ?? randomUUID();
  process.stdout.write(`run ${runId} submitted\n`);
  const output = await runDurably(values.ingress, runId, { setup: values.setup, prompt: values.prompt, options });
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
      ingress: { type: "string" },
      repeat: { type: "string" },
      out: { type: "string" },
      id: { type: "string" },
    },
  });
  const [suite] = positionals;
  if (suite === undefined || values.ingress === undefined) throw new Error(`eval needs SUITE and --ingress\n${USAGE}`);
  const repeat = values.repeat === undefined ? 1 : Number(values.repeat);
  if (!Number.isInteger(repeat) || repeat < 1)
    throw new Error(`--repeat must be a whole number above 0, got ${values.repeat}`);
  let done = 0;
  const result = await evalOnEngine({
    suite,
    ingressUrl: values.ingress,
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
