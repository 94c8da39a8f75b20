/**
 * Waiting on a workflow's result (`/restate/workflow/<name>/<key>/attach`) for as long as it takes.
 *
 * The engine sends the response's headers only when the workflow ends, and Node's `fetch` gives up
 * on a response whose headers have not come within 300 s (undici's `headersTimeout`), while a
 * queued eval case or a long run can take longer. So each attempt waits `attemptMs` at most (below
 * undici's limit), and an attempt that timed out, ours or undici's, is made again, until
 * `maxWaitMs` in all (then it rejects saying so) or `signal` aborts.
 *
 * An engine that does not answer at all (restarting, say) is asked again for `reconnectMs`
 * (default 120 s); then it rejects with an error that names the address and what to do. The
 * token goes only to a gate that proved itself on the connection: a listener at the address
 * that is not the engine (another user's, on a stopped engine's port) gets nothing, and attach
 * rejects at once with `GateUnproven`.
 */
import { EngineUnreachable } from "./engine-client.js";
import { GateUnproven, provenFetch } from "./gate-proof.js";

export interface AttachOptions {
  /** Stops waiting (the caller's own timeout). */
  signal?: AbortSignal;
  /** How long one attempt waits for the response's headers (default 240 s: under undici's 300 s). */
  attemptMs?: number;
  /** How long to wait in all (default 24 hours). */
  maxWaitMs?: number;
  /** The engine's token: sent with each attempt, only on a connection the gate proved itself on (`gate-proof.ts`). */
  token?: string;
  /** How long an engine that does not answer at all is asked again (default 120 s). */
  reconnectMs?: number;
}

export interface Attached {
  ok: boolean;
  status: number;
  text: string;
}

/** GETs `url` (an attach URL) again and again while the engine has not answered; resolves with its answer. */
export async function attach(url: string, options: AttachOptions = {}): Promise<Attached> {
  const attemptMs = options.attemptMs ?? 240_000;
  const deadline = Date.now() + (options.maxWaitMs ?? 24 * 3600_000);
  let unreachableSince: number | undefined;
  for (;;) {
    options.signal?.throwIfAborted();
    const left = deadline - Date.now();
    if (left <= 0)
      throw new Error(
        `no answer from ${url} in ${options.maxWaitMs ?? 24 * 3600_000} ms; it may still end: attach again`,
      );
    const attempt = AbortSignal.timeout(Math.min(attemptMs, left));
    const signal = options.signal ? AbortSignal.any([options.signal, attempt]) : attempt;
    try {
      const response =
        options.token === undefined ? await fetch(url, { signal }) : await provenFetch(url, options.token, { signal });
      const text = await response.text();
      // 503: the engine's gate is up, its Restate server is being restarted
      if (response.status !== 503) return { ok: response.ok, status: response.status, text };
      throw new Error(`${response.status}: ${text.trim()}`);
    } catch (error) {
      // a listener that is not the engine: said at once, it got nothing
      if (options.signal?.aborted || error instanceof GateUnproven) throw error;
      if (attempt.aborted || headersTimedOut(error)) {
        unreachableSince = undefined; // it answered the connection: waiting on the run
        continue;
      }
      // no answer at all: the engine is away (restarting?) for a while, or not there
      unreachableSince ??= Date.now();
      if (Date.now() - unreachableSince >= (options.reconnectMs ?? 120_000))
        throw new EngineUnreachable(new URL(url).origin, error);
      await new Promise((resolve) => setTimeout(resolve, Math.min(1000, Math.max(0, deadline - Date.now()))));
    }
  }
}

/** Whether `fetch` failed because undici's `headersTimeout` passed. */
function headersTimedOut(error: unknown): boolean {
  const cause = (error as { cause?: { code?: unknown } } | undefined)?.cause;
  return cause?.code === "UND_ERR_HEADERS_TIMEOUT";
}
