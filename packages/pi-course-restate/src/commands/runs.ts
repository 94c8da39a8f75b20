/** `pi-course-restate status`, `list` and `cancel`: runs as the engine's admin API sees them. */
import { AGENT_RUN } from "../agent-run.js";
import { EVAL_RUN } from "../eval-run.js";
import { cancelRun, listRuns, type RunStatus, runStatus } from "../runs.js";
import { ADMIN_HELP, type Command, parse, UsageError, urlOption } from "./command.js";

const EVAL_HELP = "  --eval          eval cases (EvalRun, keyed <suite run>/<case>/<repeat>) instead of agent runs";

export const status: Command = {
  name: "status",
  summary: "RUN: its state, current step, attempts and last failure",
  help: `usage: pi-course-restate status RUN --admin URL [--eval] [--json]

${ADMIN_HELP}
${EVAL_HELP}
  --json          print the status as JSON

state is the engine's: pending/scheduled/ready (not started), running, backing-off (its worker
failed or is away; it is tried again: attempts counts the tries, last failure says why),
suspended, paused, completed (then: succeeded, or failed and why).

Exit code: 0 found, 1 no such run (or the engine cannot be reached), 2 usage.
`,
  async run(args) {
    const { values, positionals } = parse(
      args,
      { admin: { type: "string" }, eval: { type: "boolean" }, json: { type: "boolean" } },
      1,
    );
    const [runId] = positionals;
    if (runId === undefined) throw new UsageError("name the run: pi-course-restate status RUN");
    const admin = urlOption("--admin", values.admin, "the engine's admin URL");
    const found = await runStatus(admin, runId, values.eval ? EVAL_RUN : AGENT_RUN);
    if (found === undefined) {
      throw new Error(
        `no run ${runId} on the engine at ${admin}: \`pi-course-restate list --admin ${admin}\` shows the runs there`,
      );
    }
    process.stdout.write(values.json ? `${JSON.stringify(found, null, 2)}\n` : describe(found));
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

export const list: Command = {
  name: "list",
  summary: "the runs on the engine, newest first",
  help: `usage: pi-course-restate list --admin URL [--eval] [--json]

One line a run: its id, state (and outcome), attempts, when it was created.

${ADMIN_HELP}
${EVAL_HELP}
  --json          print the runs as JSON
`,
  async run(args) {
    const { values } = parse(args, { admin: { type: "string" }, eval: { type: "boolean" }, json: { type: "boolean" } });
    const admin = urlOption("--admin", values.admin, "the engine's admin URL");
    const runs = await listRuns(admin, { workflow: values.eval ? EVAL_RUN : AGENT_RUN });
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
  help: `usage: pi-course-restate cancel RUN --admin URL [--eval]

Asks the engine to cancel run RUN: the step it is in gets no result and the run ends failed with
the engine's cancellation (\`result\` then says so). A tool call that was running may have taken
effect.

${ADMIN_HELP}
${EVAL_HELP}

Exit code: 0 asked, 1 no such run or it has already ended, 2 usage.
`,
  async run(args) {
    const { values, positionals } = parse(args, { admin: { type: "string" }, eval: { type: "boolean" } }, 1);
    const [runId] = positionals;
    if (runId === undefined) throw new UsageError("name the run: pi-course-restate cancel RUN");
    const admin = urlOption("--admin", values.admin, "the engine's admin URL");
    const was = await cancelRun(admin, runId, values.eval ? EVAL_RUN : AGENT_RUN);
    process.stdout.write(`run ${runId} (${was.state}) asked to cancel\n`);
    return 0;
  },
};
