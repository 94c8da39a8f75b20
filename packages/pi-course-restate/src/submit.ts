/**
 * The client side: hand a run to the engine, wait for its transcript, keep it as a session file.
 *
 * A run is the `AgentRun` workflow under its run id: submitting the same id again is answered
 * with the run already there (the engine runs a workflow once per id), so a client that crashed
 * after submitting can submit again, or just wait for the result.
 */
import { type AgentMessage, SessionFile } from "@pi/course";
import { AGENT_RUN, type RunInput, type RunOutput } from "./agent-run.js";
import { attach } from "./attach.js";
import { type EngineConnection, engineFetch } from "./engine-client.js";
import { secretField, secretInJournal } from "./journal-guard.js";

/**
 * Submits run `runId` and resolves with the engine's invocation id, once the engine has it.
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
  if (!response.ok) throw new Error(`the engine refused run ${runId} (${response.status}): ${text}`);
  const { invocationId } = JSON.parse(text) as { invocationId: string };
  return invocationId;
}

/** Waits for run `runId` to end and resolves with its transcript; rejects with the run's terminal error. */
export async function runResult(engine: EngineConnection, runId: string, signal?: AbortSignal): Promise<RunOutput> {
  const url = `${engine.url}/restate/workflow/${AGENT_RUN}/${encodeURIComponent(runId)}/attach`;
  const headers = { authorization: `Bearer ${engine.token}` };
  const { ok, status, text } = await attach(url, { headers, ...(signal && { signal }) });
  if (!ok) throw new Error(`run ${runId} failed (${status}): ${text}`);
  return JSON.parse(text) as RunOutput;
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
