/**
 * Durations that become timers. Node's timers hold at most 2³¹−1 ms (about 24.8 days): a longer
 * delay fires after 1 ms, with only a warning on stderr, so a 35-day limit would end a run at
 * once. Every duration a user, a config file, a case file or a server hands over goes through
 * `userDuration` before it reaches `startTimer`: a value that is no duration is refused with an
 * error naming the setting, and one past the timer's limit means **no limit** (no timer at all),
 * never "now".
 */

/** The largest delay a Node timer honours: 2³¹−1 ms (about 24.8 days). */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * `value` (in `unit`s) as milliseconds for `startTimer`: `undefined` when it is past
 * `MAX_TIMER_MS` (no limit). Throws a RangeError naming `setting` when `value` is not a finite
 * number ≥ 0 (NaN, Infinity, a negative number, a string).
 */
export function userDuration(value: unknown, setting: string, unit: "ms" | "s" = "ms"): number | undefined {
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
    const got = typeof value === "number" ? String(value) : `a ${value === null ? "null" : typeof value}`;
    throw new RangeError(
      `${setting} must be a finite number of ${unit === "s" ? "seconds" : "milliseconds"} ≥ 0, got ${got}`,
    );
  }
  const ms = unit === "s" ? value * 1000 : value;
  return ms > MAX_TIMER_MS ? undefined : ms;
}

/**
 * `value` (in `unit`s) as milliseconds for a wait that must end (a login waiting for a browser):
 * read by `userDuration`, and a value past `MAX_TIMER_MS` is refused too, with a RangeError
 * naming `setting` and the most it takes, since "no limit" would wait for ever; so is one under
 * 1 ms (0 included), which a timer ends at once, before anyone could answer.
 */
export function boundedDuration(value: unknown, setting: string, unit: "ms" | "s" = "ms"): number {
  const ms = userDuration(value, setting, unit);
  if (ms !== undefined && ms < 1)
    throw new RangeError(
      `${setting} must be at least ${unit === "s" ? "0.001 seconds" : "1 millisecond"} (a wait of less ends before anyone can answer), got ${String(value)}`,
    );
  if (ms !== undefined) return ms;
  const most = unit === "s" ? `${Math.floor(MAX_TIMER_MS / 1000)} seconds` : `${MAX_TIMER_MS} milliseconds`;
  throw new RangeError(
    `${setting} must be at most ${most} (about 24.8 days, the longest a timer holds), got ${String(value)}`,
  );
}

/** `setTimeout(run, ms)`, or no timer when `ms` is `undefined` (no limit, see `userDuration`). */
export function startTimer(run: () => void, ms: number | undefined): NodeJS.Timeout | undefined {
  return ms === undefined ? undefined : setTimeout(run, ms);
}
