/**
 * Chapter 14: how the eval harness reaches the CLI's runtime. Every run of a case goes through
 * `Runtime.start` (runtime.ts), the same composition root as `npm start`: the `Agent`, the
 * coding tools over the run's workspace, a session file, the pairing check; only the model
 * (a case's script offline), the workspace, the turn limit and the commands' environment are
 * the harness's.
 *
 * The runtime and the features are loaded when a run first needs them (both functions are
 * async anyway), so a program that imports the package for something else does not load the CLI.
 */
import type { EvalCase } from "../eval/case-format.js";
import { createCaseModel, loadCaseScript } from "../eval/case-script.js";
import type { Wire } from "../eval/run-case.js";
import type { Model } from "../model.js";
import type { RunOptions } from "./run-options.js";

/** The CLI's runtime and its features, loaded on first use. */
async function cli() {
  const [{ Runtime, createModel }, { FEATURES }] = await Promise.all([import("./runtime.js"), import("./options.js")]);
  return { Runtime, createModel, FEATURES };
}

/** The server a suite runs against (`RunOptions["server"]` without its workspace), or none: offline. */
export type EvalServer = Omit<NonNullable<RunOptions["server"]>, "workspace">;

function runOptions(server: EvalServer | undefined, workspace: string, sessionRoot?: string): RunOptions {
  return {
    kind: "run",
    mode: "print",
    json: false,
    color: false,
    dropToolResult: false,
    folder: workspace,
    // A case runs alone: no project resources (the runtime is given none), and no feature's
    // option is set (no MCP servers, no codemode).
    contextFiles: false,
    extensions: [],
    ...(sessionRoot !== undefined && { session: { root: sessionRoot, continue: false } }),
    ...(server !== undefined && { server: { ...server, workspace } }),
  };
}

/** The `Wire` of the eval harness: one `Runtime` per run, with a session file under the run folder. */
export function runtimeWire(server: EvalServer | undefined): Wire {
  return async (setup) => {
    const { Runtime, FEATURES } = await cli();
    const runtime = await Runtime.start(runOptions(server, setup.workspace, setup.sessionRoot), () => {}, 0, {
      model: setup.model,
      workspace: setup.workspace,
      maxTurns: setup.maxTurns,
      env: setup.env,
      // every feature plugs in as in `npm start` (a durable run's journal); the model is the case's
      features: FEATURES,
    });
    return { agent: runtime.agent, sessionFile: runtime.session?.path, close: () => runtime.close() };
  };
}

/**
 * The model of one run: the server's (with the case's model id, if it names one), or offline the
 * case's script, variant `repeat`. A case without a script offline has no model, which the
 * record reports as an infrastructure failure that says what to do.
 */
export async function caseModel(
  evalCase: EvalCase,
  server: EvalServer | undefined,
  repeat: number,
): Promise<Model | { unavailable: string }> {
  if (server !== undefined) {
    const { createModel, FEATURES } = await cli();
    let model = createModel(runOptions(server, evalCase.dir), 0, evalCase.settings.model.id);
    // e.g. a model of the catalogue is priced: each run's cost, each case's and the suite's total
    for (const feature of FEATURES) model = feature.caseModel?.(model) ?? model;
    return model;
  }
  if (evalCase.script === undefined) {
    return {
      unavailable: `case ${evalCase.name} has no script.json, so it cannot run offline; run the suite against a server with --base-url URL --model NAME`,
    };
  }
  try {
    return createCaseModel(await loadCaseScript(evalCase.script), repeat, evalCase.name);
  } catch (error) {
    return { unavailable: (error as Error).message };
  }
}
