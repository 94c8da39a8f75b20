/**
 * When a failed request may be sent again, and how long to wait first.
 *
 * Only failures **before the first byte of a stream** are retried (see `http-transport.ts`):
 * once content has been shown to the caller, sending the request again would show it twice.
 *
 * Retryable: HTTP 408, 429 and 5xx (529 "overloaded" included), and connection failures that
 * leave the request unsent or unanswered (refused, reset, closed, timed out, DNS not ready).
 * The wait is the server's `retry-after-ms` or `Retry-After` (seconds or an HTTP date) when it
 * sent one, else an exponential backoff with jitter: `base · 2^(n-1)`, between half and all of it,
 * capped at 8 s. A server that asks for more than `maxRetryDelayMs` is not waited for: the error
 * goes back to the caller with `retryAfterMs`, to decide.
 */
import { startTimer, userDuration } from "../../base/timer.js";

/** Statuses worth another try. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || (status >= 500 && status <= 599);
}

/** Connection-level error codes (from `error.cause.code`) worth another try. */
const RETRYABLE_NETWORK_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EAI_AGAIN",
  "UND_ERR_SOCKET",
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_HEADERS_TIMEOUT",
  "UND_ERR_CLOSED",
]);

/** True for a `fetch` failure caused by the connection (not by a bad URL or header). */
export function isRetryableNetworkError(error: unknown): boolean {
  const cause = error instanceof Error ? (error as { cause?: unknown }).cause : undefined;
  const code = cause !== null && typeof cause === "object" ? (cause as { code?: unknown }).code : undefined;
  return typeof code === "string" && RETRYABLE_NETWORK_CODES.has(code);
}

/** Provider codes (in an error body or an in-stream error) that say "try again later". */
export function isRetryableCode(code: string | undefined): boolean {
  if (code === undefined) return false;
  if (/^\d{3}$/.test(code)) return isRetryableStatus(Number(code));
  return /overloaded|rate_limit|server_error|api_error|unavailable|timeout/i.test(code);
}

/**
 * The wait a response asks for, in milliseconds: `retry-after-ms` (OpenAI, Azure), else
 * `Retry-After` as seconds or as an HTTP date. `undefined` when absent or unreadable.
 */
export function retryAfterMs(headers: Headers, now: number = Date.now()): number | undefined {
  const ms = headers.get("retry-after-ms");
  if (ms !== null && ms.trim() !== "") {
    const value = Number(ms);
    if (Number.isFinite(value) && value >= 0) return Math.ceil(value);
  }
  const after = headers.get("retry-after");
  if (after === null || after.trim() === "") return undefined;
  if (/^\s*\d+(\.\d+)?\s*$/.test(after)) return Math.ceil(Number(after) * 1000);
  const date = Date.parse(after);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** The backoff before retry number `attempt` (1, 2, …): exponential, jittered, at most 8 s. */
export function backoffMs(attempt: number, baseMs: number, random: () => number = Math.random): number {
  const full = Math.min(8_000, baseMs * 2 ** (attempt - 1));
  return Math.round(full / 2 + (random() * full) / 2);
}

/** Waits `ms` (a finite number >= 0), or less if `signal` aborts first (then resolves `false`). */
export function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const done = (slept: boolean) => {
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
      resolve(slept);
    };
    const onAbort = () => done(false);
    // A wait past a timer's reach (a server's 35-day Retry-After under a huge maxRetryDelayMs) is
    // no end at all, never "now": only the signal ends it then.
    const timer = startTimer(() => done(true), userDuration(ms, "the retry wait"));
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
