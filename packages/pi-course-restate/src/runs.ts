/**
 * Runs as an operator sees them, from the engine's admin API: `runStatus` (state, current step,
 * attempts, last failure) and `listRuns` (cancelling one is `cancelRun`, engine-client.ts).
 *
 * Read with Restate's SQL introspection (`engineQuery`): `sys_invocation` holds an invocation's
 * status, retry count and last failure, `sys_journal` its steps (each `ctx.run` a `Run` entry with
 * the step's name). A run is the `run` handler of the `AgentRun` workflow keyed by the run id (an
 * eval case, `EvalRun`, is read the same way with `workflow: "EvalRun"`).
 */
import { AGENT_RUN } from "./agent-run.js";
import { type EngineConnection, engineQuery, sqlText } from "./engine-client.js";

/** One run on the engine. */
export interface RunStatus {
  runId: string;
  /** The workflow it runs in (`AgentRun`, or `EvalRun` for an eval case). */
  workflow: string;
  invocationId: string;
  /**
   * Restate's status: `pending`/`scheduled`/`ready` (not started yet), `running`, `backing-off`
   * (its worker failed or is away: it is tried again), `suspended`, `paused`, `completed`.
   */
  state: string;
  /** When completed: `succeeded`, or `failed` with `failure` saying why. */
  outcome?: "succeeded" | "failed";
  failure?: string;
  /** The last step the journal holds, and whether it has its result. */
  step?: { name: string; index: number; done: boolean };
  /** Steps in the journal. */
  steps: number;
  /** Attempts the engine made so far (Restate's retry count; 0 once the run completed). */
  attempts: number;
  /** Why the last attempt failed, as the engine recorded it. */
  lastFailure?: string;
  createdAt: string;
  modifiedAt: string;
}

/** Rows of `sql` over the engine's tables, typed as the caller knows them. */
const query = <T>(engine: EngineConnection, sql: string) => engineQuery(engine, sql) as Promise<T[]>;

interface InvocationRow {
  id: string;
  target_service_name: string;
  target_service_key: string;
  status: string;
  retry_count: number | null;
  last_failure: string | null;
  completion_failure: string | null;
  created_at: string;
  modified_at: string;
}

const COLUMNS =
  "id, target_service_name, target_service_key, status, retry_count, last_failure, completion_failure, created_at, modified_at";

/** The status of run `runId` (of `workflow`, default `AgentRun`); undefined if the engine has no such run. */
export async function runStatus(
  engine: EngineConnection,
  runId: string,
  workflow: string = AGENT_RUN,
): Promise<RunStatus | undefined> {
  const [row] = await query<InvocationRow>(
    engine,
    `SELECT ${COLUMNS} FROM sys_invocation WHERE target_service_name = ${sqlText(workflow)} ` +
      `AND target_service_key = ${sqlText(runId)} AND target_handler_name = 'run' ORDER BY created_at DESC LIMIT 1`,
  );
  if (row === undefined) return undefined;
  // a step is a `Command: Run` entry and its result a `Notification: Run` entry; steps go one at a
  // time, so the last step is done when there are as many results as steps
  const entries = await query<{ index: number; entry_type: string; name?: string }>(
    engine,
    `SELECT index, entry_type, name FROM sys_journal WHERE id = ${sqlText(row.id)} ` +
      "AND entry_type IN ('Command: Run', 'Notification: Run') ORDER BY index",
  );
  const commands = entries.filter((entry) => entry.entry_type === "Command: Run");
  const results = entries.length - commands.length;
  const named = commands.filter((entry) => entry.name); // unnamed: the run's recorded clock
  const last = named.at(-1);
  return {
    ...fromRow(row),
    steps: named.length,
    ...(last !== undefined && {
      step: { name: last.name!, index: last.index, done: last === commands.at(-1) ? results >= commands.length : true },
    }),
  };
}

/** Every run of `workflow` (default `AgentRun`) the engine holds, newest first (at most `limit`, default 1000). */
export async function listRuns(
  engine: EngineConnection,
  options: { workflow?: string; limit?: number } = {},
): Promise<Omit<RunStatus, "steps" | "step">[]> {
  const rows = await query<InvocationRow>(
    engine,
    `SELECT ${COLUMNS} FROM sys_invocation WHERE target_service_name = ${sqlText(options.workflow ?? AGENT_RUN)} ` +
      `AND target_handler_name = 'run' ORDER BY created_at DESC LIMIT ${Math.max(1, Math.floor(options.limit ?? 1000))}`,
  );
  return rows.map(fromRow);
}

function fromRow(row: InvocationRow): Omit<RunStatus, "steps" | "step"> {
  const completed = row.status === "completed";
  return {
    runId: row.target_service_key,
    workflow: row.target_service_name,
    invocationId: row.id,
    state: row.status,
    ...(completed && { outcome: row.completion_failure ? "failed" : "succeeded" }),
    ...(row.completion_failure && { failure: row.completion_failure }),
    attempts: row.retry_count ?? 0,
    ...(row.last_failure && { lastFailure: row.last_failure }),
    createdAt: row.created_at,
    modifiedAt: row.modified_at,
  };
}
