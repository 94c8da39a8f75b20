/**
 * Chapter 14: running jobs N at once, and stopping cleanly.
 *
 * At most `concurrency` jobs run at a time, started in order. When `signal` aborts, no job is
 * started any more; the running ones see the abort (they get the same signal) and are awaited,
 * so what they report still arrives. The result holds the jobs that ran, in order of starting.
 */

/** Runs `run` over `jobs`, `concurrency` at a time; `onDone` hears each result as it comes. */
export async function runPool<J, R>(
  jobs: readonly J[],
  concurrency: number,
  run: (job: J, signal: AbortSignal) => Promise<R>,
  options: { signal?: AbortSignal; onStart?: (job: J) => void; onDone?: (result: R, job: J) => void } = {},
): Promise<R[]> {
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw new RangeError(`runPool: concurrency must be a whole number ≥ 1, got ${concurrency}`);
  }
  const signal = options.signal ?? new AbortController().signal;
  const results: R[] = [];
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < jobs.length && !signal.aborted) {
      const at = next++;
      const job = jobs[at]!;
      options.onStart?.(job);
      const result = await run(job, signal);
      results[at] = result;
      options.onDone?.(result, job);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, jobs.length) }, lane));
  return results.filter((_, i) => i in results);
}
