/**
 * Talking to an engine from outside: its address and credential, and the few admin operations a
 * person needs (what versions serve, cancel a run for real, ask the engine's tables).
 *
 * `engine --dir DIR` writes `DIR/client.json` (0600): `{ "url": …, "token": … }`. Whoever can
 * read that file is the engine's owner; copy it (0600) to a machine that submits runs. Every
 * request carries the token; an error always names the address and says what to do, never a
 * bare `fetch failed`.
 */
import { constants as fsConstants } from "node:fs";
import { open, stat } from "node:fs/promises";
import path from "node:path";
import { type GateRequestInit, GateUnproven, provenFetch } from "./gate-proof.js";

/** An engine's address and credential. */
export interface EngineConnection {
  /** The gate's URL, e.g. `http://127.0.0.1:PORT`. */
  url: string;
  /** The bearer token of the engine's credential. */
  token: string;
}

/** The environment variable naming an engine's folder or `client.json` when no `--engine` is given. */
export const ENGINE_ENV = "PI_RESTATE_ENGINE";

/** The file name of the credential in the engine's folder. */
export const CLIENT_FILE = "client.json";

/**
 * Reads the connection from `where` (an engine's folder or its `client.json`; default
 * `$PI_RESTATE_ENGINE`). Refuses a file other users may read (it is the engine's only key), or
 * one another user wrote (its address would get our runs).
 */
export async function readConnection(where = process.env[ENGINE_ENV]): Promise<EngineConnection> {
  if (where === undefined || where === "") {
    throw new Error(
      `which engine? Give --engine DIR (the engine's --dir, or its ${CLIENT_FILE}) or set ${ENGINE_ENV}.`,
    );
  }
  let file = path.resolve(where);
  const info = await stat(file).catch(() => undefined);
  if (info?.isDirectory()) file = path.join(file, CLIENT_FILE);
  // one open file, checked and read: a path looked at twice (read, then stat) can name two files
  // when others may rename in its folder, and the check would pass on ours while the text is theirs
  // (not blocking: a FIFO planted in its place would hold the open for ever)
  const handle = await open(file, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK).catch((error: Error) => {
    throw new Error(`cannot read the engine's credential ${file}: ${error.message}. Is it the engine's --dir?`);
  });
  let text: string;
  try {
    const info = await handle.stat();
    const { mode, uid } = info;
    if (!info.isFile()) throw new Error(`${file} is not a file: an engine's ${CLIENT_FILE} is one`);
    const me = process.getuid?.();
    if (me !== undefined && uid !== me) {
      throw new Error(
        `${file} belongs to another user (uid ${uid}): an engine's credential is its owner's alone. ` +
          "Use the client.json of an engine you started, or a copy of it you made (chmod 600).",
      );
    }
    if ((mode & 0o077) !== 0) {
      throw new Error(
        `${file} can be read by other users (mode ${(mode & 0o777).toString(8)}); it is the engine's only key. ` +
          `Run \`chmod 600 ${file}\`.`,
      );
    }
    text = await handle.readFile("utf8");
  } finally {
    await handle.close();
  }
  const parsed = JSON.parse(text) as Partial<EngineConnection>;
  if (typeof parsed.url !== "string" || typeof parsed.token !== "string") {
    throw new Error(`${file} is not an engine's ${CLIENT_FILE} ({ "url": …, "token": … })`);
  }
  return { url: parsed.url.replace(/\/$/, ""), token: parsed.token };
}

/**
 * `fetch` of `route` (`/AgentRun/…` for the ingress, `/admin/…` for the admin API) on the engine,
 * with its credential, sent only once the gate proved itself on the connection (`gate-proof.ts`;
 * `GateUnproven` otherwise: another engine there, or not an engine). Network failures become errors
 * that name the address and the next step.
 */
export async function engineFetch(
  engine: EngineConnection,
  route: string,
  init: GateRequestInit = {},
): Promise<Response> {
  const url = `${engine.url}${route}`;
  let response: Response;
  try {
    response = await provenFetch(url, engine.token, init);
  } catch (error) {
    const name = (error as Error).name;
    if (name === "AbortError" || name === "TimeoutError" || error instanceof GateUnproven) throw error;
    throw new EngineUnreachable(engine.url, error);
  }
  return response;
}

/** The engine did not answer at all (not running, restarting, or another address). */
export class EngineUnreachable extends Error {
  constructor(
    readonly url: string,
    cause: unknown,
  ) {
    // fetch's error carries the connection's as its cause; a connection's own error is itself
    const code =
      (cause as { cause?: { code?: string; message?: string } })?.cause ??
      (cause as { code?: string; message?: string });
    super(
      `cannot reach the engine at ${url} (${code?.code ?? code?.message ?? (cause as Error)?.message}): ` +
        "is `pi-course-restate engine` running with that folder? If it is restarting, try again in a moment.",
      { cause },
    );
    this.name = "EngineUnreachable";
  }
}

/** Rows of a SQL query over the engine's tables (`sys_invocation`, `sys_deployment`, … of Restate's admin API). */
export async function engineQuery(engine: EngineConnection, sql: string): Promise<Record<string, unknown>[]> {
  const response = await engineFetch(engine, "/admin/query", {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json" },
    body: JSON.stringify({ query: sql }),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`the engine at ${engine.url} refused the query (${response.status}): ${text}`);
  return (JSON.parse(text) as { rows: Record<string, unknown>[] }).rows;
}

/** A SQL string literal. */
export function sqlText(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}

/** One version of the worker code the engine knows, and what it does now. */
export interface VersionState {
  version: string;
  deploymentId: string;
  uri: string;
  /** `serving`: new runs go to it; `draining`: runs that started on it still run; `drained`: none left, the engine retires it. */
  state: "serving" | "draining" | "drained";
  /** Runs pinned to it that have not ended. */
  runsInFlight: number;
}

interface DeploymentInfo {
  id: string;
  uri?: string;
  created_at?: string;
  services?: { name: string }[];
}

/** The deployments of the engine, oldest first. */
export async function deploymentsOf(engine: EngineConnection): Promise<DeploymentInfo[]> {
  const response = await engineFetch(engine, "/admin/deployments");
  const text = await response.text();
  if (!response.ok)
    throw new Error(`the engine at ${engine.url} did not list its deployments (${response.status}): ${text}`);
  const { deployments } = JSON.parse(text) as { deployments: DeploymentInfo[] };
  return deployments.sort((a, b) => String(a.created_at).localeCompare(String(b.created_at)));
}

/** The version a deployment URI serves (`…/v/<version>`), if it is one of the engine's. */
export function versionOf(uri: string | undefined): string | undefined {
  const match = /\/v\/([^/]+)\/?$/.exec(uri ?? "");
  return match === null ? undefined : decodeURIComponent(match[1]!);
}

/**
 * The versions of worker code the engine knows, oldest first: which one takes new runs, which
 * still finish runs that started on them, which are drained (and retired by the engine next).
 * What `status` shows.
 */
export async function engineVersions(engine: EngineConnection): Promise<VersionState[]> {
  const deployments = (await deploymentsOf(engine)).filter((d) => versionOf(d.uri) !== undefined);
  const rows = await engineQuery(
    engine,
    "SELECT pinned_deployment_id AS id, COUNT(*) AS n FROM sys_invocation " +
      "WHERE status <> 'completed' AND pinned_deployment_id IS NOT NULL GROUP BY pinned_deployment_id",
  );
  const inFlight = new Map(rows.map((row) => [String(row.id), Number(row.n)]));
  return deployments.map((d, i) => {
    const runsInFlight = inFlight.get(d.id) ?? 0;
    const latest = i === deployments.length - 1;
    return {
      version: versionOf(d.uri)!,
      deploymentId: d.id,
      uri: d.uri!,
      state: latest ? "serving" : runsInFlight > 0 ? "draining" : "drained",
      runsInFlight,
    };
  });
}

/** How a `cancelRun` ended. */
export interface CancelOutcome {
  invocationId: string;
  /** `cancelled`: the run took the cancel; `killed`: it could not (stuck in a retry, e.g. its journal does not match the code) and was ended; `ended`: it had ended already. */
  outcome: "cancelled" | "killed" | "ended";
  /** The run's last failure, when it was killed. */
  lastFailure?: string;
}

/**
 * Cancels run `runId` of `service` (`AgentRun` or `EvalRun`) for real. Restate's cancel is
 * cooperative: it reaches a run at its next step, which a run stuck retrying (a replay that does
 * not match the code, a worker that always fails) never takes. So: cancel, wait `graceMs`
 * (default 5 s) for the run to end, and if it has not, kill it (it ends at once, no step of it runs again).
 */
export async function cancelRun(
  engine: EngineConnection,
  runId: string,
  options: { service?: string; graceMs?: number } = {},
): Promise<CancelOutcome> {
  const service = options.service ?? "AgentRun";
  const find = async () =>
    (
      await engineQuery(
        engine,
        `SELECT id, status, last_failure FROM sys_invocation WHERE target_service_name = ${sqlText(service)} ` +
          `AND target_service_key = ${sqlText(runId)} AND target_handler_name = 'run'`,
      )
    )[0];
  const found = await find();
  if (found === undefined)
    throw new Error(
      `no run ${runId} of ${service} on the engine at ${engine.url}: \`pi-course-restate list\` shows the runs there`,
    );
  const invocationId = String(found.id);
  if (found.status === "completed") return { invocationId, outcome: "ended" };
  const patch = async (what: "cancel" | "kill") => {
    const response = await engineFetch(engine, `/admin/invocations/${encodeURIComponent(invocationId)}/${what}`, {
      method: "PATCH",
    });
    const text = await response.text();
    if (!response.ok && response.status !== 404) {
      throw new Error(`the engine at ${engine.url} refused to ${what} run ${runId} (${response.status}): ${text}`);
    }
  };
  await patch("cancel");
  const deadline = Date.now() + (options.graceMs ?? 5000);
  for (;;) {
    const now = await find();
    if (now === undefined || now.status === "completed") return { invocationId, outcome: "cancelled" };
    if (Date.now() > deadline) {
      await patch("kill");
      return {
        invocationId,
        outcome: "killed",
        ...(now.last_failure != null && { lastFailure: String(now.last_failure) }),
      };
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
