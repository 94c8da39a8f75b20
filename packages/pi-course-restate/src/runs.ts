/**
 * Runs as an operator sees them, from the engine's admin API: `runStatus` (state, current step,
 * attempts, last failure), `listRuns`, `cancelRun`.
 *
 * Read with Restate's SQL introspection (`POST /query`): `sys_invocation` holds an invocation's
 * status, retry count and last failure, `sys_journal` its steps (each `ctx.run` a `Run` entry with
 * the step's name). A run is the `run` handler of the `AgentRun` workflow keyed by the run id (an
 * eval case, `EvalRun`, is read the same way with `workflow: "EvalRun"`).
 */
import { AGENT_RUN } from "./agent-run.js";
import { reach, refused } from "./reach.js";

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

/** An admin request that names what it was for. */
async function query<T>(adminUrl: string, sql: string): Promise<T[]> {
  const url = `${adminUrl}/query`;
  const response = await reach("admin", url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json" },
    body: JSON.stringify({ query: sql }),
  });
  const text = await response.text();
  if (!response.ok) throw refused("querying the engine's runs", url, response.status, text);
  return (JSON.parse(text) as { rows: T[] }).rows;
}

/** A string as an SQL literal. */
const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;

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
  adminUrl: string,
  runId: string,
  workflow: string = AGENT_RUN,
): Promise<RunStatus | undefined> {
  const [row] = await query<InvocationRow>(
    adminUrl,
    `SELECT ${COLUMNS} FROM sys_invocation WHERE target_service_name = ${literal(workflow)} ` +
      `AND target_service_key = ${literal(runId)} AND target_handler_name = 'run' ORDER BY created_at DESC LIMIT 1`,
  );
  if (row === undefined) return undefined;
  // a step is a `Command: Run` entry and its result a `Notification: Run` entry; steps go one at a
  // time, so the last step is done when there are as many results as steps
  const entries = await query<{ index: number; entry_type: string; name?: string }>(
    adminUrl,
    `SELECT index, entry_type, name FROM sys_journal WHERE id = ${literal(row.id)} ` +
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
  adminUrl: string,
  options: { workflow?: string; limit?: number } = {},
): Promise<Omit<RunStatus, "steps" | "step">[]> {
  const rows = await query<InvocationRow>(
    adminUrl,
    `SELECT ${COLUMNS} FROM sys_invocation WHERE target_service_name = ${literal(options.workflow ?? AGENT_RUN)} ` +
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

/**
 * Asks the engine to cancel run `runId`: its current step gets no result, the run ends failed with
 * the engine's cancellation. Resolves with the run's status at the time of asking; rejects if there
 * is no such run, or it has already ended.
 */
export async function cancelRun(adminUrl: string, runId: string, workflow: string = AGENT_RUN): Promise<RunStatus> {
  const status = await runStatus(adminUrl, runId, workflow);
  if (status === undefined)
    throw new Error(`no run ${runId} on the engine at ${adminUrl}: \`pi-course-restate list\` shows the runs there`);
  if (status.state === "completed") {
    throw new Error(`run ${runId} has already ended (${status.outcome}); nothing to cancel`);
  }
  const url = `${adminUrl}/invocations/${encodeURIComponent(status.invocationId)}/cancel`;
  const response = await reach("admin", url, { method: "PATCH" });
  const text = await response.text();
  if (!response.ok) throw refused(`cancelling run ${runId}`, url, response.status, text);
  return status;
}
