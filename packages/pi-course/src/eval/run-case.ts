/**
 * Chapter 14: one run of one case, judged.
 *
 * Prepare a fresh run folder (`workspace/` copied from the case's `files/`, plus `home/` and
 * `tmp/` for the commands, and `sessions/`), take a snapshot of everything the run could reach
 * besides the workspace, run the agent on the task under the case's limits, then judge it in
 * three steps: the protocol checks (protocol.ts), the case's check (run-check.ts), and the
 * classification into a `RunRecord` (run-record.ts).
 *
 * The harness does not build the agent itself: `wire` does, so the run goes through exactly the
 * runtime the caller uses (the CLI passes its composition root, with the coding tools and a
 * session file; a test may pass anything). This keeps `eval/` below the coding tools and the
 * CLI in the layer order.
 */
import { errorText } from "../base/errors.js";
import { startTimer, userDuration } from "../base/timer.js";
import { copyFile, cp, mkdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Agent } from "../agent/agent.js";
import type { Model } from "../model.js";
import type { AgentMessage, AssistantMessage } from "../types.js";
import type { CaseSettings, EvalCase } from "./case-format.js";
import { checkSessionReplay, checkToolPairing, diffSnapshots, snapshotFolders, snapshotTopLevel } from "./protocol.js";
import { runCheck, type CheckOutcome } from "./run-check.js";
import type { RunPhase, RunRecord, RunStatus } from "./run-record.js";

/** What `wire` gets: where the run lives and under which limits. */
export interface WireSetup {
  /** The fresh workspace (the case's files/ copied in). */
  workspace: string;
  /** The folder the session file goes under. */
  sessionRoot: string;
  /** The model for this run. */
  model: Model;
  /** The case's turn limit. */
  maxTurns: number;
  /** Variables for the commands the agent runs: HOME and TMPDIR inside the run folder. */
  env: NodeJS.ProcessEnv;
}

/** An agent wired for one run. */
export interface WiredAgent {
  agent: Agent;
  /** The session file the agent records into, if any. */
  sessionFile: string | undefined;
  /** Stops recording and closes the session file (waits for its writes). */
  close(): Promise<void>;
}

/** Builds the agent of one run. May reject: the run is then an infrastructure failure. */
export type Wire = (setup: WireSetup) => Promise<WiredAgent>;

export interface RunCaseOptions {
  /** Which run of the case this is (chooses a script variant). */
  repeat: number;
  /** An empty folder for this run (made if missing); the caller removes it. */
  runRoot: string;
  /** The model for this run, or a reason there is none (an infrastructure failure). */
  model: Model | { unavailable: string };
  wire: Wire;
  /**
   * The system's temporary folder, whose top level is watched too (see `snapshotTopLevel`):
   * default `os.tmpdir()` of this process; `false` watches none.
   */
  sharedTemp?: string | false;
  /** Where to keep a copy of the session file (absent: it stays in the run folder). */
  keepSessionAs?: string;
  /** Aborted: the run stops and is recorded as `interrupted`. */
  signal?: AbortSignal;
  /** The environment the commands and the check start from (default `process.env`). */
  env?: NodeJS.ProcessEnv;
}

/** Runs `evalCase` once and judges it. Never rejects: every failure is a record. */
export async function runCase(evalCase: EvalCase, options: RunCaseOptions): Promise<RunRecord> {
  const started = Date.now();
  const record: RunRecord = {
    case: evalCase.name,
    repeat: options.repeat,
    status: "passed",
    protocolProblems: [],
    model: "unavailable" in options.model ? "?" : options.model.id,
    turns: 0,
    tokens: { input: 0, output: 0, total: 0 },
    cost: null,
    startedAt: new Date(started).toISOString(),
    wallMs: 0,
    notes: [],
  };
  const finish = (status: RunStatus, phase?: RunPhase, reason?: string): RunRecord => {
    record.status = status;
    if (phase !== undefined) record.phase = phase;
    if (reason !== undefined) record.reason = reason;
    record.wallMs = Date.now() - started;
    return record;
  };
  if ("unavailable" in options.model) return finish("infrastructure", "prepare", options.model.unavailable);
  const model = options.model;
  record.model = model.id;

  // Prepare.
  const root = path.resolve(options.runRoot);
  const workspace = path.join(root, "workspace");
  const sessionRoot = path.join(root, "sessions");
  const env: NodeJS.ProcessEnv = {
    ...(options.env ?? process.env),
    HOME: path.join(root, "home"),
    TMPDIR: path.join(root, "tmp"),
  };
  const sharedTemp = options.sharedTemp ?? tmpdir();
  const snapshotAround = async () => {
    const around = await snapshotFolders([root, evalCase.dir], [workspace, sessionRoot]);
    if (sharedTemp === false) return around;
    for (const [at, state] of await snapshotTopLevel(sharedTemp, [root, evalCase.dir])) around.set(at, state);
    return around;
  };
  let wired: WiredAgent;
  let before;
  try {
    for (const dir of ["home", "tmp", "sessions"]) await mkdir(path.join(root, dir), { recursive: true });
    await cp(evalCase.filesDir, workspace, { recursive: true, preserveTimestamps: true });
    // The run folder besides the workspace and the session, the case itself, the top of /tmp.
    before = await snapshotAround();
    wired = await options.wire({ workspace, sessionRoot, model, maxTurns: evalCase.settings.maxTurns, env });
  } catch (error) {
    return finish("infrastructure", "prepare", `the run could not be prepared: ${errorText(error)}`);
  }

  // Run the agent under the case's limits.
  const agent = wired.agent;
  const startIndex = agent.state.messages.length;
  const { timedOut, runError, turnLimit } = await runUnderLimits(agent, evalCase, options.signal);
  const messages: AgentMessage[] = agent.state.messages.slice(startIndex);
  const assistants = messages.filter((m): m is AssistantMessage => "role" in m && m.role === "assistant");
  tally(record, assistants);
  const all = agent.state.messages.slice();
  try {
    await wired.close();
  } catch (error) {
    record.notes.push(`closing the session failed: ${errorText(error)}`);
  }
  if (wired.sessionFile !== undefined) await keepSession(record, wired.sessionFile, options.keepSessionAs);
  if (turnLimit !== undefined) record.notes.push(`turn limit: ${turnLimit}`);

  // Judge: the protocol, then the task's check.
  const problems = checkToolPairing(messages);
  if (wired.sessionFile !== undefined) problems.push(...(await checkSessionReplay(wired.sessionFile, all)));
  problems.push(...diffSnapshots(before, await snapshotAround()));
  record.protocolProblems = problems;
  let check: CheckOutcome | undefined;
  if (!options.signal?.aborted) {
    check = await runCheck(
      evalCase.check,
      workspace,
      { ...env, PI_EVAL_CASE_DIR: evalCase.dir },
      userDuration(evalCase.settings.checkTimeLimitSeconds, "checkTimeLimitSeconds", "s"),
    );
    record.check = check;
  }

  const verdict = classifyRun({
    interrupted: options.signal?.aborted === true,
    protocolProblems: problems,
    timedOut,
    ...(runError !== undefined && { runError }),
    ...(assistants.length > 0 && { last: assistants[assistants.length - 1]! }),
    ...(check !== undefined && { check }),
    settings: evalCase.settings,
  });
  return finish(verdict.status, verdict.phase, verdict.reason);
}

/** How a run under the case's limits ended. */
interface RunEnd {
  timedOut: boolean;
  /** `prompt` threw (or the run was interrupted before it started). */
  runError?: string;
  /** The loop stopped at the turn limit, in its own words. */
  turnLimit?: string;
}

/** Prompts `agent` with the case's task, aborting it at the time limit or when `signal` aborts. */
async function runUnderLimits(agent: Agent, evalCase: EvalCase, signal: AbortSignal | undefined): Promise<RunEnd> {
  const end: RunEnd = { timedOut: false };
  const timer = startTimer(
    () => {
      end.timedOut = true;
      agent.abort();
    },
    userDuration(evalCase.settings.timeLimitSeconds, "timeLimitSeconds", "s"),
  );
  const onAbort = () => agent.abort();
  signal?.addEventListener("abort", onAbort, { once: true });
  const unsubscribe = agent.subscribe((event) => {
    if (event.type === "agent_end" && event.errorMessage !== undefined) end.turnLimit = event.errorMessage;
  });
  try {
    if (signal?.aborted) throw new Error("interrupted before the agent started");
    await agent.prompt(evalCase.task);
  } catch (error) {
    end.runError = errorText(error);
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener("abort", onAbort);
    unsubscribe();
  }
  return end;
}

/** Adds the turns, tokens and cost of `assistants` to `record` (cost `null` when any turn's is unknown). */
function tally(record: RunRecord, assistants: readonly AssistantMessage[]): void {
  record.turns = assistants.length;
  let cost = 0;
  let costKnown = assistants.length > 0;
  for (const m of assistants) {
    record.tokens.input += m.usage.input;
    record.tokens.output += m.usage.output;
    record.tokens.total += m.usage.totalTokens;
    // A provider may report the cost in `usage`; otherwise the catalogue's price beside it.
    const reported = (m.usage as { cost?: { total?: unknown } }).cost?.total ?? m.cost?.total;
    if (typeof reported === "number") cost += reported;
    else costKnown = false;
  }
  record.cost = costKnown ? cost : null;
}

/** Records the session file, copied to `keepAs` when given (a failed copy is a note). */
async function keepSession(record: RunRecord, sessionFile: string, keepAs: string | undefined): Promise<void> {
  record.sessionFile = sessionFile;
  if (keepAs === undefined) return;
  await mkdir(path.dirname(keepAs), { recursive: true });
  await copyFile(sessionFile, keepAs).then(
    () => (record.sessionFile = keepAs),
    (error: Error) => record.notes.push(`the session file could not be kept: ${error.message}`),
  );
}

/** What a run's verdict is decided from. */
export interface RunFacts {
  /** Ctrl-C stopped the run. */
  interrupted: boolean;
  /** The protocol checks' problems. */
  protocolProblems: readonly string[];
  /** The case's time limit stopped the agent. */
  timedOut: boolean;
  /** `prompt()` rejected (a session write failed, the runtime broke). */
  runError?: string;
  /** The run's last assistant message (absent: the model never answered). */
  last?: AssistantMessage;
  /** The check's outcome (absent when it did not run). */
  check?: CheckOutcome;
  settings: Pick<CaseSettings, "timeLimitSeconds" | "checkTimeLimitSeconds">;
}

/**
 * A run's status, the phase that failed and why, from its facts. The first that applies wins
 * (status, phase, reason):
 *
 * 1. interrupted: `interrupted`, `agent`, `stopped by the user (Ctrl-C) before the run finished`
 * 2. a protocol problem, whatever the check says (a run that broke a contract is not trusted):
 *    `protocol`, `protocol`, the first problem
 * 3. the time limit (a task failure: too slow): `failed`, `agent`, `the time limit of <timeLimitSeconds> s was reached`
 * 4. `runError`: `infrastructure`, `agent`, `the run failed: <runError>`
 * 5. no assistant message: `infrastructure`, `agent`, `the model never answered`
 * 6. the last one's `stopReason` is `error`: `infrastructure`, `agent`, `the model call failed: <errorMessage>`
 *    (`the model call failed: no message` when it has none)
 * 7. no check: `infrastructure`, `check`, `the check did not run`
 * 8. `check.startError`: `infrastructure`, `check`, `the check could not start: <startError>`
 * 9. `check.timedOut`: `failed`, `check`, `the check did not finish within <checkTimeLimitSeconds> s`
 * 10. a non-zero exit: `failed`, `check`, `the check exited with <code>` (or `the check was killed by <signal>`)
 * 11. else `{ status: "passed" }` (no phase, no reason).
 */
export function classifyRun(facts: RunFacts): { status: RunStatus; phase?: RunPhase; reason?: string } {
  // #region lab 14.3 classifyRun
  const { check, last, settings } = facts;
  if (facts.interrupted)
    return { status: "interrupted", phase: "agent", reason: "stopped by the user (Ctrl-C) before the run finished" };
  if (facts.protocolProblems.length > 0)
    return { status: "protocol", phase: "protocol", reason: facts.protocolProblems[0]! };
  if (facts.timedOut)
    return { status: "failed", phase: "agent", reason: `the time limit of ${settings.timeLimitSeconds} s was reached` };
  if (facts.runError !== undefined)
    return { status: "infrastructure", phase: "agent", reason: `the run failed: ${facts.runError}` };
  if (last === undefined) return { status: "infrastructure", phase: "agent", reason: "the model never answered" };
  if (last.stopReason === "error") {
    return {
      status: "infrastructure",
      phase: "agent",
      reason: `the model call failed: ${last.errorMessage ?? "no message"}`,
    };
  }
  if (check === undefined) return { status: "infrastructure", phase: "check", reason: "the check did not run" };
  if (check.startError !== undefined)
    return { status: "infrastructure", phase: "check", reason: `the check could not start: ${check.startError}` };
  if (check.timedOut)
    return {
      status: "failed",
      phase: "check",
      reason: `the check did not finish within ${settings.checkTimeLimitSeconds} s`,
    };
  if (check.exitCode !== 0) {
    const how = check.exitCode === null ? `was killed by ${check.signal}` : `exited with ${check.exitCode}`;
    return { status: "failed", phase: "check", reason: `the check ${how}` };
  }
  return { status: "passed" };
  // #endregion
}
