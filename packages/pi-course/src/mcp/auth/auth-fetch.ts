/**
 * How authorization talks to servers: every request (the probe of the MCP server, metadata
 * documents, registration, token requests at the authorization server and at an identity
 * provider) goes through the one outbound policy (`models/http/outbound.ts`) with the rules of
 * its kind:
 *
 * - `metadata` (a GET of a public document): at most `METADATA_MAX_REDIRECTS` hops, same
 *   origin, the scheme rule on every hop;
 * - `endpoint` (registration and token requests, which carry codes, verifiers, secrets,
 *   assertions and refresh tokens): no redirect at all (their answers are final: RFC 6749 §5,
 *   RFC 7591 §3.2), https or loopback http only;
 * - `probe` (the `initialize` sent without a token to learn the challenge): as the transport,
 *   same-origin redirects, no credential.
 *
 * Every answer is capped at `AUTH_MAX_RESPONSE_BYTES` and bounded in time (headers and body).
 */
import { OutboundError, outboundFetch } from "../../models/http/outbound.js";
import { ResponseTooLargeError } from "../../models/http/response-limits.js";

/**
 * How long one request of authorization (the probe, a metadata document, registration, a token
 * request) may take, headers and body, before it fails: 30 s. A server that never answers must
 * not hang a call.
 */
export const AUTH_REQUEST_TIMEOUT_MS = 30_000;
/** The most bytes of one answer of authorization (metadata, registration, token): 1 MiB. */
export const AUTH_MAX_RESPONSE_BYTES = 1024 * 1024;
/** Redirects a metadata document may take: 3, same origin. */
export const METADATA_MAX_REDIRECTS = 3;

/** The kinds of request of authorization (see the file comment). */
export type AuthRequestKind = "metadata" | "endpoint" | "probe";

/** Sends one request of authorization under its kind's rules. */
export type AuthFetch = (url: string, init: RequestInit, kind: AuthRequestKind, what: string) => Promise<Response>;

/** The `AuthFetch` of `fetch` (default the global one), each request bounded by `timeoutMs`. */
export function authFetch(timeoutMs: number = AUTH_REQUEST_TIMEOUT_MS, fetcher?: typeof fetch): AuthFetch {
  return (url, init, kind, what) =>
    outboundFetch(url, init, {
      what,
      secure: kind !== "probe",
      maxRedirects: kind === "endpoint" ? 0 : kind === "metadata" ? METADATA_MAX_REDIRECTS : 5,
      maxBytes: AUTH_MAX_RESPONSE_BYTES,
      timeoutMs,
      ...(fetcher !== undefined && { fetch: fetcher }),
    });
}

/**
 * The JSON object of an answer; `{}` when it is not JSON or not an object. A body past the cap,
 * or one that stops arriving in time, throws (those are not answers to read on).
 */
export async function readAnswer(response: Response): Promise<Record<string, unknown>> {
  const text = await response.text();
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : {};
  } catch {
    return {};
  }
}

/** Whether `error` is the outbound policy's refusal or cap (its message says what to do). */
export function isPolicyError(error: unknown): error is OutboundError | ResponseTooLargeError {
  return error instanceof OutboundError || error instanceof ResponseTooLargeError;
}
