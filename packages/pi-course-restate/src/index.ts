/**
 * `@pi/course-restate`: agent runs and eval suites of `@pi/course` on Restate.
 *
 * The engine: `startEngine` (the Restate server on Unix sockets, the gate that wants the owner's
 * token, the proxy in front of the workers; each version of worker code a deployment of its own).
 * Workers: `startWorker` (in this process) or `spawnWorker` (a child process; `bundleWorker` makes
 * one file of a worker and its setups that starts in a fraction of the time), given the engine's
 * identity keys. Clients: `readConnection` (the engine's `client.json`), runs with `submitRun` /
 * `runResult` / `runDurably`, kept as a session file by `writeSession`; an operator's view:
 * `runStatus`, `listRuns`, `cancelRun`, `engineVersions`, `engineQuery`. Suites: `evalOnEngine`.
 * The pieces a run is made of: `agentRunWorkflow`, `journaledModel`, `journaledTools`, `Steps`.
 */
export { AGENT_RUN, agentRunWorkflow, INPUT_PROMISE, RETRY_POLICY, retryPolicy } from "./agent-run.js";
export type { RetryOptions, RunInput, RunOutput, RunParts, RunSetup, RunSetups } from "./agent-run.js";
export { attach } from "./attach.js";
export type { AttachOptions, Attached } from "./attach.js";
export { startEngine } from "./engine.js";
export type { Engine, EngineOptions } from "./engine.js";
export {
  CLIENT_FILE,
  cancelRun,
  ENGINE_ENV,
  EngineUnreachable,
  engineFetch,
  engineQuery,
  engineVersions,
  readConnection,
} from "./engine-client.js";
export type { CancelOutcome, EngineConnection, VersionState } from "./engine-client.js";
export { EVAL_RUN, evalRunWorkflow } from "./eval-run.js";
export type { EngineModelServer, EvalRunInput, EvalRunOutput } from "./eval-run.js";
export { evalOnEngine } from "./eval-suite.js";
export type { EngineEvalOptions, EngineEvalResult } from "./eval-suite.js";
export { checkBind } from "./bind.js";
export { startGate } from "./gate.js";
export type { Gate, GateOptions } from "./gate.js";
export { engineIdentity, IDENTITY_KEYS_ENV, newWorkerSecret, readWorkerCredential } from "./identity.js";
export type { EngineIdentity, WorkerCredential } from "./identity.js";
export { CHALLENGE_HEADER, proofHolds, VERSION_PATH, workerProof } from "./worker-proof.js";
export { inputDigest } from "./input-digest.js";
export { secretField } from "./journal-guard.js";
export { journaledModel } from "./journaled-model.js";
export { journaledTool, journaledTools } from "./journaled-tool.js";
export { startProxy } from "./proxy.js";
export { DEFAULT_RUN_SECONDS, DEFAULT_STEP_SECONDS, MAX_STEP_SECONDS } from "./run-limits.js";
export type { RunLimits } from "./run-limits.js";
export { listRuns, runStatus } from "./runs.js";
export type { RunStatus } from "./runs.js";
export type { Proxy, ProxyOptions } from "./proxy.js";
export { freePort, restateServerBinary, startRestateServer } from "./restate-server.js";
export type { RestateServer } from "./restate-server.js";
export { Steps } from "./steps.js";
export { RunInputMismatchError, runDurably, runResult, submitRun, writeSession } from "./submit.js";
export { startWorker } from "./worker.js";
export { bundleWorker } from "./worker-bundle.js";
export type { WorkerBundleOptions } from "./worker-bundle.js";
export { runWorkerCommand, WORKER_HELP } from "./worker-command.js";
export type { Worker, WorkerOptions } from "./worker.js";
export { spawnWorker } from "./worker-process.js";
export type { WorkerProcess } from "./worker-process.js";
