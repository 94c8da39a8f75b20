/** `pi-course-restate submit` and `result`: hand a run to the engine, or wait for one, and print its answer. */
import { randomUUID } from "node:crypto";
import path from "node:path";
import { type AgentMessage, textOf } from "@pi/course";
import type { RunInput, RunOutput } from "../agent-run.js";
import { DEFAULT_RUN_SECONDS, DEFAULT_STEP_SECONDS, MAX_STEP_SECONDS } from "../run-limits.js";
import { runResult, submitRun, writeSession } from "../submit.js";
import { readConnection } from "../engine-client.js";
import { type Command, ENGINE_HELP, ENGINE_OPTION, parse, UsageError, wholeNumber } from "./command.js";

const SESSION_HELP = "  --session FILE  also write the transcript as a session file (a new file; pi-course reads it)";

export const submit: Command = {
  name: "submit",
  summary: "hand a run to the engine, wait for it, print its answer",
  help: `usage: pi-course-restate submit --engine DIR --setup NAME --prompt TEXT [options]

${ENGINE_HELP}
  --setup NAME    a setup every worker was started with
  --prompt TEXT   the user's prompt
  --id RUN        the run's id (default: a new one, printed). Submitting an id again waits for
                  that run; with other input it is refused
  --options JSON  handed to the setup as it is
  --run-seconds N   the run's time limit (default ${DEFAULT_RUN_SECONDS}); past it the run fails
  --step-seconds N  each model turn's and tool call's limit (default ${DEFAULT_STEP_SECONDS}, at most
                    ${MAX_STEP_SECONDS}); a step past it is cut and recorded as an error
${SESSION_HELP}

Exit code: 0 the run ended with an answer, 1 it failed (said on stderr), 2 usage.
`,
  async run(args) {
    const { values } = parse(args, {
      ...ENGINE_OPTION,
      setup: { type: "string" },
      prompt: { type: "string" },
      id: { type: "string" },
      options: { type: "string" },
      "run-seconds": { type: "string" },
      "step-seconds": { type: "string" },
      session: { type: "string" },
    });
    const engine = await readConnection(values.engine);
    if (values.setup === undefined) throw new UsageError("--setup is needed: the name of a setup the workers know");
    if (values.prompt === undefined) throw new UsageError("--prompt is needed");
    let options: unknown;
    try {
      options = values.options === undefined ? undefined : JSON.parse(values.options);
    } catch {
      throw new UsageError(`--options must be JSON, got ${values.options}`);
    }
    const limits = {
      ...(values["run-seconds"] !== undefined && { runSeconds: wholeNumber("--run-seconds", values["run-seconds"]) }),
      ...(values["step-seconds"] !== undefined && {
        stepSeconds: wholeNumber("--step-seconds", values["step-seconds"]),
      }),
    };
    if ((limits.stepSeconds ?? 0) > MAX_STEP_SECONDS)
      throw new UsageError(`--step-seconds is at most ${MAX_STEP_SECONDS}`);
    const input: RunInput = {
      setup: values.setup,
      prompt: values.prompt,
      ...(options !== undefined && { options }),
      ...(Object.keys(limits).length > 0 && { limits }),
    };
    const runId = values.id ?? randomUUID();
    await submitRun(engine, runId, input);
    process.stdout.write(`run ${runId} submitted\n`);
    return answer(await runResult(engine, runId), values.session);
  },
};

export const result: Command = {
  name: "result",
  summary: "RUN: wait for a run's end and print its answer",
  help: `usage: pi-course-restate result RUN --engine DIR [--session FILE] [--json]

Waits for run RUN to end (at once if it has) and prints its answer.

${ENGINE_HELP}
${SESSION_HELP}
  --json          print the whole result (transcript and error) as JSON instead

Exit code: 0 the run ended with an answer, 1 it failed (said on stderr), 2 usage.
`,
  async run(args) {
    const { values, positionals } = parse(
      args,
      { ...ENGINE_OPTION, session: { type: "string" }, json: { type: "boolean" } },
      1,
    );
    const [runId] = positionals;
    if (runId === undefined) throw new UsageError("name the run: pi-course-restate result RUN");
    const engine = await readConnection(values.engine);
    const output = await runResult(engine, runId);
    if (values.json) {
      process.stdout.write(`${JSON.stringify(output, null, 2)}\n`);
      if (values.session !== undefined)
        await writeSession(path.resolve(values.session), output.messages, process.cwd());
      return output.errorMessage === undefined ? 0 : 1;
    }
    return answer(output, values.session);
  },
};

/** Prints the run's last answer (and keeps the session file); 1 with the run's error on stderr if it failed. */
async function answer(output: RunOutput, session: string | undefined): Promise<number> {
  if (session !== undefined) await writeSession(path.resolve(session), output.messages, process.cwd());
  const last = output.messages.at(-1) as AgentMessage | undefined;
  if (last?.role === "assistant") process.stdout.write(`${textOf(last)}\n`);
  if (output.errorMessage === undefined) return 0;
  process.stderr.write(`the run failed: ${output.errorMessage}\n`);
  return 1;
}
