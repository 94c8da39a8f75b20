/**
 * Awaiting user code (a tool, a hook, a queue getter, the event sink, the model's stream) without
 * letting it hold the run: `settle` turns whatever the code does (return, throw, reject, return a
 * hostile thenable, never settle) into data, and stops waiting once the run's signal is aborted or
 * an optional timeout passes. The loop awaits nothing of the user's except through it.
 *
 * The waits on one signal share one "abort" listener over a list of waiters, added only for a
 * promise still pending after a microtask. The plain version, one listener per wait, is
 * test/support/settle-plain.ts; test/settle.property.test.ts holds the two to the same outcomes.
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
 * rejects, whatever `work` throws or returns (a thenable whose `then` throws is a throw). A
 * promise that was already settled when `work` returned it counts, even if the signal fires
 * before the next microtask.
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
  // `Promise.resolve` adopts a thenable safely (a `then` that throws becomes a rejection)
  const pending = Promise.resolve(returned);
  if (signal === undefined && timeoutMs === undefined) {
    return pending.then(valueOutcome, thrownOutcome) as Promise<Settled<Awaited<T>>>;
  }
  if (signal?.aborted) {
    pending.then(undefined, ignore); // not waited for, but a late rejection is still handled
    return Promise.resolve(ABORTED);
  }
  return new Promise((resolve) => {
    const waiter: Waiter = {
      resolve: resolve as Waiter["resolve"],
      timer: undefined,
      list: undefined,
      prev: undefined,
      next: undefined,
    };
    if (timeoutMs !== undefined) waiter.timer = setTimeout(wake, timeoutMs, waiter, TIMED_OUT);
    // one reaction that wakes the waiter directly: no intermediate promise, one microtask less
    pending.then(
      (value) => wake(waiter, { kind: "value", value }),
      (error: unknown) => wake(waiter, { kind: "threw", error }),
    );
    if (signal === undefined) return;
    const list = abortWaiters.get(signal);
    if (list !== undefined) return link(list, waiter); // the signal is watched already
    // Else watch it from the next microtask: a promise that was already settled has woken the
    // waiter by then (its reaction was queued first), so a run whose awaits all find settled
    // promises never adds an "abort" listener (the first one on a signal costs more than the
    // whole await). An abort in between is seen at once there: `watch` checks `aborted` first.
    // (A reaction on a settled promise, not `queueMicrotask`: Node wraps each of those in an
    // AsyncResource.)
    void SETTLED.then(() => watch(signal, waiter));
  });
}

const valueOutcome = (value: unknown): Settled<unknown> => ({ kind: "value", value });
const thrownOutcome = (error: unknown): Settled<unknown> => ({ kind: "threw", error });
const ignore = (): void => {};
const SETTLED = Promise.resolve();
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
  /** The pending `settle`s of the signal this one watches, a doubly linked list (see `watch`). */
  list: WaiterList | undefined;
  prev: Waiter | undefined;
  next: Waiter | undefined;
}

function wake(waiter: Waiter, settled: Settled<unknown>): void {
  const resolve = waiter.resolve;
  if (resolve === undefined) return;
  waiter.resolve = undefined;
  if (waiter.list !== undefined) unlink(waiter.list, waiter);
  if (waiter.timer !== undefined) clearTimeout(waiter.timer);
  resolve(settled);
}

/**
 * The pending `settle`s of each signal, woken by one shared "abort" listener: a run awaits user
 * code several times per turn, and adding and removing a listener each time costs more than the
 * await itself. A linked list of plain objects: adding and removing one is a few writes, with no
 * hashing (a Set of waiters cost more than the rest of `settle`).
 */
interface WaiterList {
  first: Waiter | undefined;
  last: Waiter | undefined;
}

const abortWaiters = new WeakMap<AbortSignal, WaiterList>();

function watch(signal: AbortSignal, waiter: Waiter): void {
  if (waiter.resolve === undefined) return; // settled already
  if (signal.aborted) return wake(waiter, ABORTED);
  let list = abortWaiters.get(signal);
  if (list === undefined) {
    const all: WaiterList = { first: undefined, last: undefined };
    list = all;
    abortWaiters.set(signal, all);
    signal.addEventListener(
      "abort",
      () => {
        // in the order they started; wake removes each waiter from the list
        while (all.first !== undefined) wake(all.first, ABORTED);
      },
      { once: true },
    );
  }
  link(list, waiter);
}

function link(list: WaiterList, waiter: Waiter): void {
  waiter.list = list;
  waiter.prev = list.last;
  if (list.last !== undefined) list.last.next = waiter;
  else list.first = waiter;
  list.last = waiter;
}

function unlink(list: WaiterList, waiter: Waiter): void {
  if (waiter.prev !== undefined) waiter.prev.next = waiter.next;
  else list.first = waiter.next;
  if (waiter.next !== undefined) waiter.next.prev = waiter.prev;
  else list.last = waiter.prev;
  waiter.list = waiter.prev = waiter.next = undefined;
}
