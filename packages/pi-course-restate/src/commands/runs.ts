/** `pi-course-restate status`, `list` and `cancel`: runs as the engine's admin API sees them. */
import { AGENT_RUN } from "../agent-run.js";
import { EVAL_RUN } from "../eval-run.js";
import { listRuns, type RunStatus, runStatus } from "../runs.js";
import { cancelRun, engineVersions, readConnection, type VersionState } from "../engine-client.js";
import { type Command, ENGINE_HELP, ENGINE_OPTION, parse, UsageError } from "./command.js";

const EVAL_HELP = "  --eval          eval cases (EvalRun, keyed <suite run>/<case>/<repeat>) instead of agent runs";

export const status: Command = {
  name: "status",
  summary: "RUN: its state, current step, attempts and last failure",
  help: `usage: pi-course-restate status RUN --engine DIR [--eval] [--json]

${ENGINE_HELP}
${EVAL_HELP}
  --json          print the status as JSON

state is the engine's: pending/scheduled/ready (not started), running, backing-off (its worker
failed or is away; it is tried again: attempts counts the tries, last failure says why),
suspended, paused, completed (then: succeeded, or failed and why). Then the versions of worker
code the engine knows: which one takes new runs (serving), which still finish runs (draining).

Exit code: 0 found, 1 no such run (or the engine cannot be reached), 2 usage.
`,
  async run(args) {
    const { values, positionals } = parse(
      args,
      { ...ENGINE_OPTION, eval: { type: "boolean" }, json: { type: "boolean" } },
      1,
    );
    const [runId] = positionals;
    if (runId === undefined) throw new UsageError("name the run: pi-course-restate status RUN");
    const engine = await readConnection(values.engine);
    const found = await runStatus(engine, runId, values.eval ? EVAL_RUN : AGENT_RUN);
    if (found === undefined) {
      throw new Error(
        `no run ${runId} on the engine at ${engine.url}: \`pi-course-restate list\` shows the runs there`,
      );
    }
    const versions = await engineVersions(engine);
    process.stdout.write(
      values.json
        ? `${JSON.stringify({ ...found, versions }, null, 2)}\n`
        : describe(found) + describeVersions(versions),
    );
    return 0;
  },
};

/** The status as lines a person reads. */
export function describe(run: RunStatus): string {
  const lines = [
    `run ${run.runId} (${run.workflow}, invocation ${run.invocationId})`,
    `state:     ${run.state}${run.outcome === undefined ? "" : `, ${run.outcome}`}`,
  ];
  if (run.failure !== undefined) lines.push(`failure:   ${run.failure}`);
  lines.push(
    run.step === undefined
      ? "step:      none yet"
      : `step:      ${run.step.name} (${run.step.done ? "done" : "running"}; ${run.steps} step(s) in the journal)`,
  );
  lines.push(`attempts:  ${run.attempts}`);
  if (run.lastFailure !== undefined) lines.push(`last failure: ${run.lastFailure}`);
  lines.push(`created:   ${run.createdAt}`, `changed:   ${run.modifiedAt}`);
  return `${lines.join("\n")}\n`;
}

/** The versions of worker code the engine knows, a line each: which serves, which drain. */
export function describeVersions(versions: readonly VersionState[]): string {
  if (versions.length === 0) return "versions:  none registered yet (no worker answered the engine)\n";
  return `versions:\n${versions
    .map((v) => `  ${v.version}\t${v.state}\t${v.runsInFlight} run(s) in flight\t${v.uri}`)
    .join("\n")}\n`;
}

export const list: Command = {
  name: "list",
  summary: "the runs on the engine, newest first",
  help: `usage: pi-course-restate list --engine DIR [--eval] [--json]

One line a run: its id, state (and outcome), attempts, when it was created.

${ENGINE_HELP}
${EVAL_HELP}
  --json          print the runs as JSON
`,
  async run(args) {
    const { values } = parse(args, { ...ENGINE_OPTION, eval: { type: "boolean" }, json: { type: "boolean" } });
    const engine = await readConnection(values.engine);
    const runs = await listRuns(engine, { workflow: values.eval ? EVAL_RUN : AGENT_RUN });
    if (values.json) process.stdout.write(`${JSON.stringify(runs, null, 2)}\n`);
    else {
      for (const run of runs) {
        const state = run.outcome === undefined ? run.state : `${run.state}, ${run.outcome}`;
        process.stdout.write(`${run.runId}\t${state}\tattempts ${run.attempts}\t${run.createdAt}\n`);
      }
    }
    return 0;
  },
};

export const cancel: Command = {
  name: "cancel",
  summary: "RUN: cancel a run (it ends failed, its current step gets no result)",
  help: `usage: pi-course-restate cancel RUN --engine DIR [--eval]

Cancels run RUN: the step it is in gets no result and the run ends failed with the engine's
cancellation (\`result\` then says so). A run that does not take the cancel within 5 s (stuck
retrying: a worker that always fails, a journal that does not match the code) is killed: it ends
at once and no step of it runs again. A tool call that was running may have taken effect.

${ENGINE_HELP}
${EVAL_HELP}

Exit code: 0 cancelled (or killed), 1 no such run or it has already ended, 2 usage.
`,
  async run(args) {
    const { values, positionals } = parse(args, { ...ENGINE_OPTION, eval: { type: "boolean" } }, 1);
    const [runId] = positionals;
    if (runId === undefined) throw new UsageError("name the run: pi-course-restate cancel RUN");
    const engine = await readConnection(values.engine);
    const done = await cancelRun(engine, runId, { service: values.eval ? EVAL_RUN : AGENT_RUN });
    if (done.outcome === "ended") {
      process.stderr.write(`run ${runId} has already ended; nothing to cancel\n`);
      return 1;
    }
    process.stdout.write(
      done.outcome === "cancelled"
        ? `run ${runId} cancelled\n`
        : `run ${runId} killed: it did not take the cancel${done.lastFailure ? ` (last failure: ${done.lastFailure})` : ""}\n`,
    );
    return 0;
  },
};
