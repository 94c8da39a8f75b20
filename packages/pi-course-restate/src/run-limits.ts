/**
 * A run's time limits: one for the whole run, one for each step (a model turn, a tool call).
 *
 * Without them Restate's own timeouts decide: a step that makes no progress for a minute is asked to
 * suspend, and aborted and retried ten minutes later, so a hung tool runs again and again and the run
 * never ends. Here the worker ends the step itself, as an answer:
 *
 * - A step past `stepSeconds` (default 600) is cut: its action's signal aborts, and the step
 *   records an error (a tool call's error result, which the model reads; a model turn's error, which
 *   ends the run with that error message). A tool that ignores its signal is not waited for.
 * - A run past `runSeconds` (default 3600, counted from its start as the engine recorded it) fails
 *   for good at its next step, with a message that says which limit passed; a step running when the
 *   run's time is up is cut then.
 *
 * Both are part of the run's input (`RunInput.limits`), so every worker applies the same ones.
 */

/** A run's limits, in seconds. */
export interface RunLimits {
  /** The whole run, from its start (default 3600). */
  runSeconds?: number;
  /** Each step (default 600, at most `MAX_STEP_SECONDS`). */
  stepSeconds?: number;
}

export const DEFAULT_RUN_SECONDS = 3600;
export const DEFAULT_STEP_SECONDS = 600;
/** The longest step limit accepted: the workflow tells Restate to wait this long (and a minute) on a silent step. */
export const MAX_STEP_SECONDS = 3600;

/** `limits` with their defaults; the text of what is wrong with them, if anything. */
export function resolveLimits(limits: RunLimits | undefined): Required<RunLimits> | string {
  const runSeconds = limits?.runSeconds ?? DEFAULT_RUN_SECONDS;
  const stepSeconds = limits?.stepSeconds ?? DEFAULT_STEP_SECONDS;
  if (typeof runSeconds !== "number" || !(runSeconds > 0))
    return `limits.runSeconds must be above 0, got ${runSeconds}`;
  if (typeof stepSeconds !== "number" || !(stepSeconds > 0) || stepSeconds > MAX_STEP_SECONDS) {
    return `limits.stepSeconds must be above 0 and at most ${MAX_STEP_SECONDS}, got ${stepSeconds}`;
  }
  return { runSeconds, stepSeconds };
}

/**
 * Runs `action` with a signal that aborts after `ms` with `reason` (an `Error`). The action must
 * stop there: `untilAborted` ends a wait on work that ignores the signal.
 */
export async function withinLimit<T>(
  ms: number,
  reason: string,
  action: (signal: AbortSignal) => Promise<T> | T,
): Promise<T> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error(reason)), ms);
  try {
    return await action(controller.signal);
  } finally {
    clearTimeout(timer);
  }
}

/** `work`, or a rejection with `signal`'s reason as soon as it aborts (the work itself is left to stop or not). */
export function untilAborted<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return work;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const stop = () => reject(signal.reason);
    signal.addEventListener("abort", stop, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener("abort", stop));
  });
}
