/**
 * Awaiting user code (a tool, a hook, a queue getter, the event sink, the model's stream) without
 * letting it hold the run: `settle` turns whatever the code does (return, throw, reject, return a
 * hostile thenable, never settle) into data, and stops waiting once the run's signal is aborted or
 * an optional timeout passes. The loop awaits nothing of the user's except through it.
 */

/** How a piece of user code (a tool, a hook, a queue getter, the sink, the model) ended, as the loop saw it. */
export type Settled<T> =
  | { kind: "value"; value: T }
  | { kind: "threw"; error: unknown }
  | { kind: "aborted" }
  | { kind: "timedOut" };

/**
 * Runs `work` (sync or async, throwing or not) and settles with its outcome, or with `aborted` as
 * soon as the signal fires, or with `timedOut` after `timeoutMs`, whichever comes first. Never
 * rejects, whatever `work` throws or returns (a thenable whose `then` throws is a throw).
 *
 * A value given synchronously always counts, even if the work aborted the signal meanwhile (a
 * queue getter that dequeued loses nothing). A promise still pending when the signal fires is
 * no longer waited for: whatever it does later is ignored, and a late rejection is handled.
 */
export function settle<T>(
  work: () => T | PromiseLike<T>,
  signal: AbortSignal | undefined,
  timeoutMs?: number,
): Promise<Settled<Awaited<T>>> {
  let returned: T | PromiseLike<T>;
  try {
    returned = work();
  } catch (error) {
    return Promise.resolve({ kind: "threw", error });
  }
  if (!mayBeThenable(returned)) return Promise.resolve({ kind: "value", value: returned as Awaited<T> });
  const outcome = Promise.resolve(returned).then(valueOutcome, thrownOutcome) as Promise<Settled<Awaited<T>>>;
  if (signal === undefined && timeoutMs === undefined) return outcome;
  if (signal?.aborted) return Promise.resolve(ABORTED);
  return new Promise((resolve) => {
    const waiter: Waiter = { resolve: resolve as Waiter["resolve"], timer: undefined, waiters: undefined };
    if (signal !== undefined) watch(signal, waiter);
    if (timeoutMs !== undefined) waiter.timer = setTimeout(wake, timeoutMs, waiter, TIMED_OUT);
    void outcome.then((settled) => wake(waiter, settled));
  });
}

const valueOutcome = (value: unknown): Settled<unknown> => ({ kind: "value", value });
const thrownOutcome = (error: unknown): Settled<unknown> => ({ kind: "threw", error });
const ABORTED: Settled<never> = Object.freeze({ kind: "aborted" });
const TIMED_OUT: Settled<never> = Object.freeze({ kind: "timedOut" });

/** Whether a value may be a thenable; true when asking throws (then `Promise.resolve` reports it). */
function mayBeThenable(value: unknown): boolean {
  if ((typeof value !== "object" && typeof value !== "function") || value === null) return false;
  try {
    return typeof (value as { then?: unknown }).then === "function";
  } catch {
    return true;
  }
}

/** One pending `settle`: settled once, by the work, the abort or the timer, whichever is first. */
interface Waiter {
  resolve: ((settled: Settled<unknown>) => void) | undefined;
  timer: ReturnType<typeof setTimeout> | undefined;
  waiters: Set<Waiter> | undefined;
}

function wake(waiter: Waiter, settled: Settled<unknown>): void {
  const resolve = waiter.resolve;
  if (resolve === undefined) return;
  waiter.resolve = undefined;
  waiter.waiters?.delete(waiter);
  if (waiter.timer !== undefined) clearTimeout(waiter.timer);
  resolve(settled);
}

/**
 * The pending `settle`s of each signal, woken by one shared "abort" listener: a run awaits user
 * code several times per turn, and adding and removing a listener each time costs more than the
 * await itself. (The set holds plain objects: hashing a function is slow in V8.)
 */
const abortWaiters = new WeakMap<AbortSignal, Set<Waiter>>();

function watch(signal: AbortSignal, waiter: Waiter): void {
  let waiters = abortWaiters.get(signal);
  if (waiters === undefined) {
    const all = new Set<Waiter>();
    waiters = all;
    abortWaiters.set(signal, all);
    signal.addEventListener("abort", () => {
      for (const pending of [...all]) wake(pending, ABORTED);
    }, { once: true });
  }
  waiter.waiters = waiters;
  waiters.add(waiter);
}
