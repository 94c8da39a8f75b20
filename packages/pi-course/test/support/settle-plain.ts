/**
 * The plain version of `settle` (src/agent/settle.ts): the same contract with one "abort" listener
 * per pending wait, added at once and removed when the wait ends. The library's `settle` keeps one
 * listener per signal over a list of waiters, added only for a promise still pending after a
 * microtask; this file is the reference `settle.property.test.ts` holds it to.
 */
import type { Settled } from "../../src/agent/settle.js";

const ABORTED: Settled<never> = { kind: "aborted" };
const TIMED_OUT: Settled<never> = { kind: "timedOut" };

export function plainSettle<T>(
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
  let thenable = false;
  try {
    thenable = typeof (returned as { then?: unknown } | null)?.then === "function";
  } catch {
    thenable = true;
  }
  if (!thenable) return Promise.resolve({ kind: "value", value: returned as Awaited<T> });
  const pending = Promise.resolve(returned);
  if (signal?.aborted) {
    pending.then(undefined, () => {});
    return Promise.resolve(ABORTED);
  }
  return new Promise((resolve) => {
    let open = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const finish = (settled: Settled<unknown>): void => {
      if (!open) return;
      open = false;
      if (timer !== undefined) clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      resolve(settled as Settled<Awaited<T>>);
    };
    const onAbort = (): void => finish(ABORTED);
    if (timeoutMs !== undefined) timer = setTimeout(finish, timeoutMs, TIMED_OUT);
    pending.then(
      (value) => finish({ kind: "value", value }),
      (error: unknown) => finish({ kind: "threw", error }),
    );
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
