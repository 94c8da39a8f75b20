/**
 * Chapter 14: the process that runs ONE run of one case for `pi-course eval` (eval-command.ts
 * starts one per run, so a run that crashes, hangs or leaks cannot harm another).
 *
 * It reads its job as one JSON line on stdin (the API key travels there, never in an
 * environment or a command line), runs the case (eval/run-case.ts) through the CLI's runtime
 * (eval-wiring.ts), writes the `RunRecord` as JSON to the job's `resultFile`, and exits 0.
 * SIGINT or SIGTERM stop the run: it is still judged and written, as `interrupted`.
 */
import { writeFile } from "node:fs/promises";
import { loadCase } from "../eval/case-format.js";
import { runCase } from "../eval/run-case.js";
import { killLiveProcessGroups } from "../coding-tools/processes.js";
import { caseModel, runtimeWire, type EvalServer } from "./eval-wiring.js";

/** What the parent sends. */
export interface EvalJob {
  caseDir: string;
  repeat: number;
  runRoot: string;
  resultFile: string;
  keepSessionAs: string;
  server?: EvalServer;
}

const controller = new AbortController();
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    if (controller.signal.aborted) {
      killLiveProcessGroups();
      process.exit(130);
    }
    controller.abort(signal);
  });
}

let input = "";
for await (const chunk of process.stdin) input += chunk;
const job = JSON.parse(input) as EvalJob;
const evalCase = await loadCase(job.caseDir);
const record = await runCase(evalCase, {
  repeat: job.repeat,
  runRoot: job.runRoot,
  model: await caseModel(evalCase, job.server, job.repeat),
  wire: runtimeWire(job.server),
  keepSessionAs: job.keepSessionAs,
  signal: controller.signal,
});
await writeFile(job.resultFile, `${JSON.stringify(record)}\n`);
process.exit(0);
