/**
 * Chapter 14: what one eval run leaves behind, the unit of every report. Plain JSON data.
 */
import type { CheckOutcome } from "./run-check.js";

/**
 * How a run ended. Three kinds of failure are kept apart, because each calls for a different
 * person: `failed` (the agent did the task wrong or too slowly: the case's check failed, or a
 * limit was hit), `protocol` (the agent broke a contract of the harness: an unpaired tool call,
 * a session file that does not replay, a write outside the workspace), `infrastructure` (the run
 * could not be judged: the case could not be prepared, the model server did not answer, the
 * worker process died). `interrupted`: stopped by Ctrl-C before it finished.
 */
export type RunStatus = "passed" | "failed" | "protocol" | "infrastructure" | "interrupted";

/** Where a run failed: preparing it, while the agent ran, in the protocol checks, or in the check. */
export type RunPhase = "prepare" | "agent" | "protocol" | "check";

/** One run of one case. */
export interface RunRecord {
  /** The case's name (its folder). */
  case: string;
  /** Which run of the case (0 to repeat − 1). */
  repeat: number;
  status: RunStatus;
  /** The phase that failed (absent when passed). */
  phase?: RunPhase;
  /** Why, in one sentence (absent when passed). */
  reason?: string;
  /** The protocol checks' problems (empty when they passed or did not run). */
  protocolProblems: string[];
  /** The model's id as it answered. */
  model: string;
  /** Model calls made (assistant messages). */
  turns: number;
  /** Summed over the run's assistant messages. */
  tokens: { input: number; output: number; total: number };
  /** In US dollars, when the model reports it; null when unknown. */
  cost: number | null;
  /** When the run started (ISO 8601). */
  startedAt: string;
  /** Wall time of the whole run, preparation and check included, in milliseconds. */
  wallMs: number;
  /** The check's outcome (absent when it did not run). */
  check?: CheckOutcome;
  /** The session file of the run, kept for reading (absent when none was written). */
  sessionFile?: string;
  /** Things a reader should know (a limit reached, a workspace kept). */
  notes: string[];
}
