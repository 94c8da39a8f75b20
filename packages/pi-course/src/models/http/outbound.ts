/**
 * The one outbound policy: every request the library sends on a person's behalf (OAuth
 * discovery, registration and token requests, the MCP Streamable HTTP transport, the providers'
 * streaming requests, the CLI's server-models check) goes out through `outboundFetch`, or, for
 * the providers' retrying transport, takes its redirect decision from `redirectDecision`. What
 * it holds, whatever the server answers:
 *
 * - **Redirects by hand.** `fetch` runs with `redirect: "manual"`; a 3xx is followed only when
 *   the policy allows hops (`maxRedirects`, 0 for token and registration endpoints, whose
 *   answers are final: RFC 6749 §5, RFC 7591 §3.2), to the **same origin** only (a hop to
 *   another host would take the body, a code, a verifier, a secret or an API key there), and
 *   only with a status that keeps the method (307/308) unless the request is a GET. The scheme
 *   rule is checked again on every hop.
 * - **The scheme rule** (`secure: true`, for anything that carries a credential): https, or
 *   http on a loopback host (127.0.0.0/8, `[::1]`, `localhost`). A bearer token, a client
 *   secret or an authorization code never travels in the clear off this machine.
 * - **A byte cap and a time limit on every body.** The body fails with `ResponseTooLargeError`
 *   past `maxBytes` (after decompression), and with an `OutboundError` ("timeout") when
 *   `timeoutMs` runs out, headers and body together; a long-lived stream (the MCP GET stream)
 *   passes no `timeoutMs` and is bounded by its caller's signal instead.
 *
 * A refusal is an `OutboundError` whose `reason` says which rule, and whose message names the
 * URL's origin and path only (a query may hold a code or a token).
 */
import { PiCourseError } from "../../base/errors.js";
import { boundedBody } from "./response-limits.js";

/** Why a request was refused or stopped. */
export type OutboundRefusal =
  /** The URL (or a redirect's target) is not https, nor http on a loopback host. */
  | "insecure"
  /** A redirect that the policy does not follow (another origin, none allowed, too many, a method change). */
  | "redirect"
  /** No answer (headers and body) within `timeoutMs`. */
  | "timeout";

/** A request the outbound policy refused or stopped; `reason` says which rule. */
export class OutboundError extends PiCourseError {
  override readonly name = "OutboundError";
  /** Stable: `"OUTBOUND"`. */
  override readonly code = "OUTBOUND";
  constructor(
    readonly reason: OutboundRefusal,
    message: string,
  ) {
    super(message);
  }
}

/** How one request may go out. */
export interface OutboundPolicy {
  /** What is asked, for messages ("the token endpoint", "the MCP server"). */
  what: string;
  /** It carries (or may carry, after a hop) a credential: https only, http on loopback only, on every hop. */
  secure: boolean;
  /** Redirects followed, same origin only (0: a 3xx is refused). */
  maxRedirects: number;
  /** The most bytes of body, after decompression. */
  maxBytes: number;
  /** Headers and body together (absent: only the caller's signal bounds it). */
  timeoutMs?: number;
  /** The fetch to use (default: the global one). */
  fetch?: typeof fetch;
}

/** What a refused redirect was: the status and the target (absent when `Location` is unreadable). */
export type RedirectDecision =
  | { follow: true; next: URL }
  | {
      follow: false;
      /** Why not: another origin, a method change (301/302/303 on a non-GET), too many hops, no location, the scheme. */
      why: "cross-origin" | "method-change" | "too-many" | "unreadable" | "insecure" | "none-allowed";
      target?: URL;
    };

const REDIRECT_STATUSES = [301, 302, 303, 307, 308];

/** Whether `status` is a redirect the policy decides on. */
export function isRedirect(status: number): boolean {
  return REDIRECT_STATUSES.includes(status);
}

/** Whether `url`'s host is this machine: 127.0.0.0/8, `[::1]`, `localhost`. */
export function isLoopbackUrl(url: URL): boolean {
  const host = url.hostname;
  return host === "localhost" || host === "[::1]" || /^127(?:\.\d{1,3}){3}$/.test(host);
}

/** Whether `url` keeps the scheme rule: https, or http on a loopback host. */
export function isSecureUrl(url: URL): boolean {
  return url.protocol === "https:" || (url.protocol === "http:" && isLoopbackUrl(url));
}

/** `url` for a message: origin and path, never the query (it may hold a code or a token). */
export function shownUrl(url: URL): string {
  return url.origin === "null" ? `${url.protocol}…` : `${url.origin}${url.pathname}`;
}

/**
 * Whether a redirect answer to `method` at `from` (hop number `hop`, from 0) is followed.
 * Same origin only; 301/302/303 only for a GET (they turn other methods into a GET without
 * body); at most `maxRedirects` hops; with `secure`, the target must keep the scheme rule.
 */
export function redirectDecision(
  from: URL,
  status: number,
  location: string | null,
  method: string,
  hop: number,
  maxRedirects: number,
  secure: boolean,
): RedirectDecision {
  let target: URL | undefined;
  try {
    target = location === null ? undefined : new URL(location, from);
  } catch {
    target = undefined;
  }
  if (target === undefined) return { follow: false, why: "unreadable" };
  if (maxRedirects === 0) return { follow: false, why: "none-allowed", target };
  if (secure && !isSecureUrl(target)) return { follow: false, why: "insecure", target };
  if (target.origin !== from.origin) return { follow: false, why: "cross-origin", target };
  if (method.toUpperCase() !== "GET" && status !== 307 && status !== 308)
    return { follow: false, why: "method-change", target };
  if (hop + 1 > maxRedirects) return { follow: false, why: "too-many", target };
  return { follow: true, next: target };
}

/**
 * Sends `init` to `url` under `policy` (see the file comment). Resolves with the final answer,
 * whose body is bounded in bytes and time; rejects with `OutboundError` when a rule refuses the
 * request or a hop, or the time runs out, and with the fetch's own error when the server cannot
 * be reached. `init.redirect` is ignored (always manual).
 */
export async function outboundFetch(url: string | URL, init: RequestInit, policy: OutboundPolicy): Promise<Response> {
  let at = new URL(url);
  if (policy.secure && !isSecureUrl(at)) {
    throw new OutboundError(
      "insecure",
      `${policy.what} ${shownUrl(at)} is not https (http only on 127.0.0.1, ::1 or localhost), and the request carries a credential; not sent`,
    );
  }
  const { signal, stop } = deadline(policy, init.signal ?? undefined);
  const method = init.method ?? "GET";
  for (let hop = 0; ; hop++) {
    let response: Response;
    try {
      response = await (policy.fetch ?? fetch)(at.href, { ...init, signal, redirect: "manual" });
    } catch (error) {
      stop();
      if (signal.aborted && signal.reason instanceof OutboundError) throw signal.reason;
      throw error;
    }
    if (!isRedirect(response.status)) {
      if (response.body === null) {
        stop();
        return response;
      }
      const { status, statusText, headers } = response;
      const body = boundedBody(response.body, policy.maxBytes, signal);
      return new Response(body, { status, statusText, headers });
    }
    await response.body?.cancel().catch(() => {});
    const decision = redirectDecision(
      at,
      response.status,
      response.headers.get("location"),
      method,
      hop,
      policy.maxRedirects,
      policy.secure,
    );
    if (!decision.follow) {
      stop();
      throw new OutboundError("redirect", refusedRedirectText(policy, response.status, decision));
    }
    at = decision.next;
  }
}

/** The message of a refused redirect. */
function refusedRedirectText(
  policy: OutboundPolicy,
  status: number,
  decision: Extract<RedirectDecision, { follow: false }>,
): string {
  const where = decision.target === undefined ? "an unreadable location" : shownUrl(decision.target);
  const head = `${policy.what} answered HTTP ${status}, a redirect to ${where}`;
  switch (decision.why) {
    case "none-allowed":
      return `${head}; its answers are final, so the redirect was not followed and nothing was sent there`;
    case "insecure":
      return `${head}, which is not https; not followed, so no credential was sent there`;
    case "cross-origin":
      return `${head}, another origin; not followed, so nothing was sent there`;
    case "method-change":
      return `${head}; a ${status} would turn the request into a GET, so it was not followed`;
    case "too-many":
      return `${head}, after ${policy.maxRedirects} redirects; giving up`;
    default:
      return head;
  }
}

/**
 * The signal of one request: the caller's, and `policy.timeoutMs` (whose reason is an
 * `OutboundError` "timeout"); `stop` lets go of the caller's signal once nothing is read any more.
 */
function deadline(policy: OutboundPolicy, caller: AbortSignal | undefined): { signal: AbortSignal; stop: () => void } {
  if (policy.timeoutMs === undefined) return { signal: caller ?? new AbortController().signal, stop: () => {} };
  const ms = policy.timeoutMs;
  const controller = new AbortController();
  const timer = AbortSignal.timeout(ms);
  const onTimeout = () =>
    controller.abort(new OutboundError("timeout", `${policy.what} did not answer within ${ms} ms (headers and body)`));
  const onCaller = () => controller.abort(caller!.reason);
  timer.addEventListener("abort", onTimeout, { once: true });
  if (caller?.aborted) onCaller();
  else caller?.addEventListener("abort", onCaller, { once: true });
  return {
    signal: controller.signal,
    stop: () => {
      timer.removeEventListener("abort", onTimeout);
      caller?.removeEventListener("abort", onCaller);
    },
  };
}
