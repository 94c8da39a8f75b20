/**
 * Requests to the engine that say where they went and what to do when they fail.
 *
 * A bare `fetch failed` names neither the address nor the next step. `reach` is `fetch` whose
 * failure to connect says which of the engine's addresses it tried (`ingress` or `admin`) and how to
 * get it running, and `refused` words a non-2xx answer the same way.
 */

/** Which of the engine's addresses a request goes to; says how to find the right one. */
export type EngineAddress = "ingress" | "admin";

const FIND = "`pi-course-restate engine` prints its ingress and admin URLs when it starts";

/** An engine request that failed: `url` is where it went, `status` the answer's (absent: no answer). */
export class EngineRequestError extends Error {
  override readonly name = "EngineRequestError";
  constructor(
    message: string,
    readonly url: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

/** `fetch(url, init)`; a request that reaches nothing rejects with an `EngineRequestError` naming `url` and the next step. */
export async function reach(address: EngineAddress, url: string, init?: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch (error) {
    if (init?.signal?.aborted) throw error;
    throw unreachable(address, url, error);
  }
}

/** The error for a request to `url` that failed with `error` (fetch's): which address, why, what to do. */
export function unreachable(address: EngineAddress, url: string, error: unknown): EngineRequestError {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } }).cause;
  const why = typeof cause?.code === "string" ? cause.code : String(cause?.message ?? error);
  return new EngineRequestError(
    `cannot reach the engine's ${address} at ${origin(url)} (${why}). Is the engine running there? ${FIND}; ` +
      `pass that URL as --${address}.`,
    url,
  );
}

/** The error for an answer that is not 2xx: what was asked (`what`), where, the status and the engine's text. */
export function refused(what: string, url: string, status: number, text: string): EngineRequestError {
  return new EngineRequestError(
    `${what}: the engine at ${origin(url)} answered ${status}: ${text.trim()}`,
    url,
    status,
  );
}

function origin(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
}
