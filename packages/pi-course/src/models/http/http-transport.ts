/**
 * Sending one streaming request to a provider, as every adapter over HTTP needs it: `POST` with
 * a JSON body, then a guarded event-stream body, or a `RequestFailure` (never a throw).
 *
 * What it takes care of, so that adapters only translate:
 * - **Retries** before the first byte of a stream (HTTP 408/429/5xx, refused or reset
 *   connections; see `retry-policy.ts`), at most `maxRetries` times, waiting as the server asks
 *   (`Retry-After`) or with a jittered backoff, never past `timeoutMs` or the caller's abort.
 *   Once a stream is accepted nothing is retried: content may already have been shown.
 * - **Time**: `timeoutMs` bounds the whole request, `idleTimeoutMs` the wait for headers and,
 *   through the adapter's `progress()` per data frame, every wait inside the stream
 *   (`request-deadline.ts`). Both end as `error` with their own kind, never as `aborted`.
 * - **Redirects** (the decision of the one outbound policy, `outbound.ts`): `fetch` runs with
 *   `redirect: "manual"`. A 307/308 to the **same origin** is
 *   followed (at most 5 hops; the method and body stay the same). Any redirect to another origin
 *   is refused, so the conversation and the key never go to a host the caller did not name;
 *   301/302/303 are refused too (they would turn the `POST` into a `GET`). The error names the
 *   target: put it in `baseUrl` if it is right.
 * - **Size**: the body is bounded by `maxResponseBytes` after decompression (`response-limits.ts`).
 * - **Errors**: the status, the provider's message and code from the body, `Retry-After`, and
 *   whether a later try may succeed, as `ErrorDetails`; every outside text redacted, then clipped.
 * - **Attempts**: every failure it returns, and every failure of an accepted stream, carries
 *   `attempts`, how many times the request was sent (0 when aborted before sending, 1 when the
 *   first try failed for good, `maxRetries + 1` when every retry failed); an accepted stream
 *   says how many sends it took (`OpenStream.attempts`).
 */
import { boundedBody, DEFAULT_LIMITS, ResponseTooLargeError, type ResponseLimits } from "./response-limits.js";
import { isRedirect, redirectDecision } from "./outbound.js";
import { RequestDeadline } from "./request-deadline.js";
import { clip, describeCause, failure, readErrorBody, type RequestFailure } from "./request-failure.js";
import {
  backoffMs,
  isRetryableCode,
  isRetryableNetworkError,
  isRetryableStatus,
  retryAfterMs,
  sleep,
} from "./retry-policy.js";

/** How a model sends its requests (every field optional; defaults in `DEFAULT_TRANSPORT`). */
export interface TransportOptions extends ResponseLimits {
  /** Defaults to the global `fetch`. It is called with `redirect: "manual"` and a signal. */
  fetch?: typeof fetch;
  /** Retries of a failure before the first byte of a stream (default 2; 0 never retries). */
  maxRetries?: number;
  /** The first backoff when the server gives no `Retry-After` (default 500 ms; doubles). */
  retryBaseDelayMs?: number;
  /** A server asking to wait longer than this (default 60 s) is not waited for. */
  maxRetryDelayMs?: number;
  /** The whole request, retries and streaming included (default: no limit). */
  timeoutMs?: number;
  /**
   * The longest wait for the response headers, and between two data frames of the stream
   * (default 120 s; keep-alive comments do not count as data). `Infinity` turns it off.
   */
  idleTimeoutMs?: number;
}

export const DEFAULT_TRANSPORT = Object.freeze({
  maxRetries: 2,
  retryBaseDelayMs: 500,
  maxRetryDelayMs: 60_000,
  idleTimeoutMs: 120_000,
});

/** Throws a `TypeError` naming the option when a bound is not a usable number (caller misuse). */
export function checkTransportOptions(options: TransportOptions, who: string): void {
  const check = (name: keyof TransportOptions, min: number, allowInfinity: boolean) => {
    const value = options[name];
    if (value === undefined) return;
    const ok =
      typeof value === "number" && value >= min && (Number.isFinite(value) || (allowInfinity && value === Infinity));
    if (!ok) {
      throw new TypeError(
        `${who}: ${name} must be a number ≥ ${min}${allowInfinity ? " (or Infinity)" : ""}, got ${String(value)}`,
      );
    }
  };
  check("maxRetries", 0, false);
  check("retryBaseDelayMs", 0, false);
  check("maxRetryDelayMs", 0, false);
  check("timeoutMs", 1, false);
  check("idleTimeoutMs", 1, true);
  check("maxResponseBytes", 1, false);
  check("maxContentBlocks", 1, false);
  check("maxToolCalls", 0, false);
}

/** One request: where, what, and which texts must never show in an error. */
export interface StreamingRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
  /** E.g. the API key: redacted from every error text. */
  secrets: readonly string[];
  signal?: AbortSignal;
}

/** An accepted event stream. */
export interface OpenStream {
  /**
   * How many times the request was sent until this stream was accepted: 1 when the first try
   * succeeded, n after n-1 retries. A followed same-origin redirect is part of the same try.
   */
  attempts: number;
  /** The body, bounded and failing at once on abort, timeout or stall. */
  body: ReadableStream<Uint8Array>;
  /** Fires on the caller's abort, the timeout, or a stall. */
  signal: AbortSignal;
  /** Call for each data frame: the idle watchdog counts from now. */
  progress(): void;
  /** What an error while reading the body (or a fired `signal`) means. */
  failure(error: unknown): RequestFailure;
  /**
   * Stops the timers (deadline and idle watchdog) and lets go of the caller's signal; idempotent.
   * Call it BEFORE the terminal event is pushed (ProviderModel.run sets it as the turn's
   * `beforeEnd`, and calls it again in a `finally`): a reader that sees `done` or `error` must find
   * no timer left that keeps the process alive or fires later, and no listener on its signal.
   */
  close(): void;
}

const MAX_REDIRECTS = 5;

type Attempt = { ok: true; response: Response } | { ok: false; failure: RequestFailure };

/** Sends the request (retrying what may be retried) until a stream is accepted or it fails. */
export async function openEventStream(
  request: StreamingRequest,
  options: TransportOptions = {},
): Promise<{ ok: true; stream: OpenStream } | { ok: false; failure: RequestFailure }> {
  const deadline = new RequestDeadline({
    ...(request.signal !== undefined && { signal: request.signal }),
    ...(options.timeoutMs !== undefined && { timeoutMs: options.timeoutMs }),
    idleTimeoutMs: options.idleTimeoutMs ?? DEFAULT_TRANSPORT.idleTimeoutMs,
  });
  const stopped = (phase: string, attempts: number) => ({
    ...deadlineFailure(deadline, options, phase, "headers"),
    attempts,
  });
  if (deadline.signal.aborted) return { ok: false, failure: stopped("before it was sent", 0) };
  const maxRetries = options.maxRetries ?? DEFAULT_TRANSPORT.maxRetries;
  for (let attempt = 1; ; attempt++) {
    deadline.watch();
    const result = await sendOnce(request, options, deadline);
    if (result.ok) {
      const maxBytes = options.maxResponseBytes ?? DEFAULT_LIMITS.maxResponseBytes;
      const body = boundedBody(result.response.body!, maxBytes, deadline.signal);
      return { ok: true, stream: streamOf(body, deadline, options, request.secrets, attempt) };
    }
    const last: RequestFailure = { ...result.failure, attempts: attempt };
    const wait =
      last.retryAfterMs ?? backoffMs(attempt, options.retryBaseDelayMs ?? DEFAULT_TRANSPORT.retryBaseDelayMs);
    const giveUp =
      deadline.signal.aborted ||
      !last.retryable ||
      attempt > maxRetries ||
      wait > (options.maxRetryDelayMs ?? DEFAULT_TRANSPORT.maxRetryDelayMs) ||
      wait >= deadline.remainingMs();
    if (giveUp) {
      deadline.dispose();
      if (attempt > 1 && !deadline.signal.aborted) last.message += ` (gave up after ${attempt} attempts)`;
      return { ok: false, failure: last };
    }
    deadline.unwatch();
    if (!(await sleep(wait, deadline.signal)))
      return { ok: false, failure: stopped("while waiting to retry", attempt) };
  }
}

/** One attempt: `fetch`, same-origin redirects, then the status and content type checked. */
async function sendOnce(
  request: StreamingRequest,
  options: TransportOptions,
  deadline: RequestDeadline,
): Promise<Attempt> {
  const fetchFn = options.fetch ?? fetch;
  const { secrets } = request;
  let url = request.url;
  let response: Response;
  for (let hop = 0; ; hop++) {
    try {
      const init: RequestInit = {
        method: "POST",
        headers: request.headers,
        body: request.body,
        signal: deadline.signal,
        redirect: "manual",
      };
      response = await fetchFn(url, init);
    } catch (error) {
      if (deadline.signal.aborted)
        return { ok: false, failure: deadlineFailure(deadline, options, "while waiting for the server", "headers") };
      const text = `Request to ${url} failed: ${clip(describeCause(error), secrets)}`;
      return { ok: false, failure: failure("network", text, { retryable: isRetryableNetworkError(error) }) };
    }
    if (!isRedirect(response.status)) break;
    await response.body?.cancel().catch(() => {});
    const refused = redirectRefusal(url, response, hop, secrets);
    if (typeof refused !== "string") return { ok: false, failure: refused };
    url = refused;
  }
  deadline.progress();
  const status = `HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ""}`;
  if (!response.ok || response.body === null) {
    const payload = await readErrorBody(response, secrets);
    if (deadline.signal.aborted)
      return {
        ok: false,
        failure: deadlineFailure(deadline, options, "while reading the error response", "error body"),
      };
    if (response.ok) return { ok: false, failure: failure("protocol", `${status}: the response has no body.`) };
    const after = retryAfterMs(response.headers);
    return {
      ok: false,
      failure: failure("http", `${status}: ${payload.text}`, {
        status: response.status,
        ...(payload.code !== undefined && { code: payload.code }),
        ...(after !== undefined && { retryAfterMs: after }),
        retryable: isRetryableStatus(response.status) || isRetryableCode(payload.code),
      }),
    };
  }
  if (/^application\/json/i.test(response.headers.get("content-type") ?? "")) {
    // A server that ignored `stream: true` (or a proxy's error page with status 200).
    const payload = await readErrorBody(response, secrets);
    const text = `HTTP ${response.status}: expected an event stream, got JSON: ${payload.text}`;
    return { ok: false, failure: failure("protocol", text, payload.code === undefined ? {} : { code: payload.code }) };
  }
  return { ok: true, response };
}

/** The next URL for a same-origin 307/308 (the outbound policy's decision), or the failure that refuses the redirect. */
function redirectRefusal(
  from: string,
  response: Response,
  hop: number,
  secrets: readonly string[],
): string | RequestFailure {
  const decision = redirectDecision(
    new URL(from),
    response.status,
    response.headers.get("location"),
    "POST",
    hop,
    MAX_REDIRECTS - 1,
    false,
  );
  if (decision.follow) return decision.next.href;
  const target = decision.target;
  const where = target === undefined ? "an unreadable location" : clip(`${target.origin}${target.pathname}`, secrets);
  const head = `HTTP ${response.status}: the server redirected the request to ${where}`;
  const details = { status: response.status };
  switch (decision.why) {
    case "cross-origin":
      return failure(
        "redirect",
        `${head}, another origin; it was not followed, so the conversation and the key were not sent there. If that server is the right one, set baseUrl to it.`,
        details,
      );
    case "method-change":
      return failure(
        "redirect",
        `${head}; a ${response.status} would turn the POST into a GET, so it was not followed. Set baseUrl to the final address.`,
        details,
      );
    case "too-many":
      return failure("redirect", `${head}, after ${MAX_REDIRECTS} redirects; giving up.`, details);
    default:
      return failure("redirect", `${head}.`, details);
  }
}

function streamOf(
  body: ReadableStream<Uint8Array>,
  deadline: RequestDeadline,
  options: TransportOptions,
  secrets: readonly string[],
  attempts: number,
): OpenStream {
  const counted = (cause: RequestFailure): RequestFailure => ({ ...cause, attempts });
  return {
    attempts,
    body,
    signal: deadline.signal,
    progress: () => deadline.progress(),
    failure(error) {
      if (deadline.cause !== undefined) return counted(deadlineFailure(deadline, options, "mid-stream", "stream"));
      if (error instanceof ResponseTooLargeError)
        return counted(failure("limit", `The response was cut off: ${error.message}.`));
      const text = `The connection failed mid-stream: ${clip(describeCause(error), secrets)}`;
      return counted(failure("network", text, { retryable: isRetryableNetworkError(error) }));
    },
    close: () => deadline.dispose(),
  };
}

/** The failure for a fired deadline: the caller's abort, the timeout, or a stall. */
function deadlineFailure(
  deadline: RequestDeadline,
  options: TransportOptions,
  phase: string,
  stage: "headers" | "error body" | "stream",
): RequestFailure {
  deadline.dispose();
  switch (deadline.cause) {
    case "timeout":
      return failure("timeout", `The request timed out: timeoutMs (${options.timeoutMs} ms) ran out ${phase}.`);
    case "stall": {
      const idle = options.idleTimeoutMs ?? DEFAULT_TRANSPORT.idleTimeoutMs;
      const what =
        stage === "headers"
          ? "no response headers arrived"
          : stage === "error body"
            ? "the error response stopped arriving"
            : "no data arrived (keep-alive comments and unfinished frames do not count)";
      return failure("stall", `The server stalled: ${what} for ${idle} ms (idleTimeoutMs).`, { retryable: true });
    }
    default:
      return failure("aborted", `Request was aborted ${phase}.`);
  }
}
