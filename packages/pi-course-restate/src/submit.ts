/**
 * The client side: hand a run to the engine, wait for its transcript, keep it as a session file.
 *
 * A run is the `AgentRun` workflow under its run id: the engine runs a workflow once per id, so a
 * client that crashed after submitting can submit again, or just wait for the result. Submitting
 * an id again with OTHER input is refused (`RunInputMismatchError`): the run records its input's
 * digest first (input-digest.ts), and `submitRun` compares it with its own.
 */
import { type AgentMessage, SessionFile } from "@pi/course";
import { AGENT_RUN, type RunInput, type RunOutput } from "./agent-run.js";
import { attach } from "./attach.js";
import { type EngineConnection, engineFetch } from "./engine-client.js";
import { inputDigest } from "./input-digest.js";
import { secretField, secretInJournal } from "./journal-guard.js";

/** The run id is taken by a run that was started with other input. */
export class RunInputMismatchError extends Error {
  override readonly name = "RunInputMismatchError";
  constructor(readonly runId: string) {
    super(
      `run ${runId} already exists with other input (another setup, prompt, options or limits); ` +
        `a run id names one run: submit under a new --id, or read that run with \`pi-course-restate result ${runId}\``,
    );
  }
}

/**
 * Submits run `runId` and resolves with the engine's invocation id, once the engine has it. When
 * the id was submitted before, resolves the same way if the input is the same, and rejects with
 * `RunInputMismatchError` if it is not (it then waits until the earlier run started, to compare).
 * Refuses options that hold what looks like a credential (`journal-guard.ts`): they would be journaled.
 */
export async function submitRun(engine: EngineConnection, runId: string, input: RunInput): Promise<string> {
  const secret = secretField(input.options);
  if (secret !== undefined) throw new Error(`run ${runId} not submitted: ${secretInJournal(secret)}`);
  const response = await engineFetch(engine, `/${AGENT_RUN}/${encodeURIComponent(runId)}/run/send`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(input),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`the engine at ${engine.url} refused run ${runId} (${response.status}): ${text}`);
  const { invocationId, status } = JSON.parse(text) as { invocationId: string; status?: string };
  if (status === "PreviouslyAccepted" && (await startedWith(engine, runId)) !== inputDigest(input)) {
    throw new RunInputMismatchError(runId);
  }
  return invocationId;
}

/** The digest of the input run `runId` started with (waits until it started). */
async function startedWith(engine: EngineConnection, runId: string): Promise<string> {
  const response = await engineFetch(engine, `/${AGENT_RUN}/${encodeURIComponent(runId)}/input`, { method: "POST" });
  const text = await response.text();
  if (!response.ok)
    throw new Error(`the engine at ${engine.url} did not say the input of run ${runId} (${response.status}): ${text}`);
  return JSON.parse(text) as string;
}

/** Waits for run `runId` to end and resolves with its transcript; rejects with the run's terminal error. */
export async function runResult(engine: EngineConnection, runId: string, signal?: AbortSignal): Promise<RunOutput> {
  const url = `${engine.url}/restate/workflow/${AGENT_RUN}/${encodeURIComponent(runId)}/attach`;
  const { ok, status, text } = await attach(url, { token: engine.token, ...(signal && { signal }) });
  if (status === 404) {
    throw new Error(
      `no run ${runId} on the engine at ${engine.url}: check the id (\`pi-course-restate list\` shows the runs there)`,
    );
  }
  if (!ok) throw new Error(`run ${runId} failed: ${engineMessage(text)} (${status})`);
  return JSON.parse(text) as RunOutput;
}

/** The message of the engine's JSON error answer (`{"message": …}`), or the text as it is. */
function engineMessage(text: string): string {
  try {
    const { message } = JSON.parse(text) as { message?: unknown };
    if (typeof message === "string") return message;
  } catch {
    // not JSON: said as it is
  }
  return text;
}

/** Submits run `runId` and waits for its transcript. */
export async function runDurably(engine: EngineConnection, runId: string, input: RunInput): Promise<RunOutput> {
  await submitRun(engine, runId, input);
  return runResult(engine, runId);
}

/**
 * Writes `messages` as a new session file at `file` (one message entry each, in order), the file
 * a local run of the same transcript records; refuses to overwrite one that exists.
 */
export async function writeSession(file: string, messages: readonly AgentMessage[], cwd: string): Promise<void> {
  const session = await SessionFile.create(file, { cwd });
  try {
    let parentId: string | null = null;
    for (const message of messages) parentId = await session.append({ type: "message", parentId, message });
  } finally {
    await session.close();
  }
}
