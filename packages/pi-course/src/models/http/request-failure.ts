/**
 * A failed provider request as data: the readable text for `errorMessage` and the
 * machine-readable `ErrorDetails` beside it. Shared by every adapter over HTTP.
 *
 * Texts that came from outside (error bodies, chunks, `fetch`'s own messages, which may quote a
 * request header) pass through `clip`: the secrets are redacted **first**, then the text is
 * cut, so a key that straddles the cut can never leave half-shown.
 */
import type { TurnMeta } from "./provider-turn.js";
import type { AssistantMessage, ErrorDetails, ErrorKind } from "../../types.js";

/** A failure: the text for people and the details for programs. */
export interface RequestFailure extends ErrorDetails {
  message: string;
}

/** At most this much of an outside text goes into an error message. */
export const MAX_ERROR_TEXT = 500;

/** At most this much of an error body is read. */
const MAX_ERROR_BODY = 64 * 1024;

export function failure(kind: ErrorKind, message: string, extra: Partial<ErrorDetails> = {}): RequestFailure {
  return { kind, message, retryable: false, ...extra };
}

/** The details of a failure, without its text (for `AssistantMessage.errorDetails`). */
export function detailsOf(failure: RequestFailure): ErrorDetails {
  const { message: _, ...details } = failure;
  return details;
}

/**
 * The final message of a turn that failed before any content (no `start` was pushed): empty,
 * zero usage, the failure's text redacted and its details. Aborted only for the caller's abort.
 * The failure's `attempts` is copied to the message's own `attempts` too.
 */
export function failedMessage(meta: TurnMeta, cause: RequestFailure, secrets: readonly string[]): AssistantMessage {
  return {
    role: "assistant",
    content: [],
    provider: meta.provider,
    model: meta.model,
    usage: { input: 0, output: 0, totalTokens: 0 },
    stopReason: cause.kind === "aborted" ? "aborted" : "error",
    errorMessage: redact(cause.message, secrets),
    errorDetails: detailsOf(cause),
    ...(cause.attempts !== undefined && { attempts: cause.attempts }),
    timestamp: meta.timestamp,
  };
}

/** Replaces every secret in `text` with `[redacted]`. */
export function redact(text: string, secrets: readonly string[]): string {
  for (const secret of secrets) if (secret !== "") text = text.split(secret).join("[redacted]");
  return text;
}

/** Redacts, then cuts to `MAX_ERROR_TEXT` characters (in that order: never the reverse). */
export function clip(text: string, secrets: readonly string[]): string {
  const clean = redact(text, secrets);
  return clean.length > MAX_ERROR_TEXT ? `${clean.slice(0, MAX_ERROR_TEXT)}…` : clean;
}

/** An error's message, with its cause (`fetch` puts ECONNREFUSED and resets there). */
export function describeCause(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = (error as { cause?: unknown }).cause;
  if (cause instanceof Error) {
    const code = (cause as { code?: unknown }).code;
    return `${error.message} (${typeof code === "string" ? `${code}: ` : ""}${cause.message})`;
  }
  return error.message;
}

/** A readable message from an error object a server sent: `message`, and `(code …)` if any. */
export function describeWireError(error: unknown): string {
  if (typeof error === "string") return error;
  if (error !== null && typeof error === "object") {
    const record = error as { message?: unknown; code?: unknown };
    const message = typeof record.message === "string" ? record.message : JSON.stringify(error);
    const code = record.code;
    return code === undefined || code === null || String(code) === "" ? message : `${message} (code ${String(code)})`;
  }
  return String(error);
}

/** The provider's code for an error object: its `code`, else its `type` (Anthropic's style). */
export function wireErrorCode(error: unknown): string | undefined {
  if (error === null || typeof error !== "object") return undefined;
  const { code, type } = error as { code?: unknown; type?: unknown };
  for (const value of [code, type]) {
    if ((typeof value === "string" && value !== "") || typeof value === "number") return String(value);
  }
  return undefined;
}

/** What an error payload (a body or an `event: error` frame) says: its text and code. */
export interface ErrorPayload {
  text: string;
  code?: string;
}

/**
 * Reads an error payload: JSON `{error: …}` (OpenAI, Anthropic), `{message}`, `{detail}`, or the
 * text itself. The text is redacted and clipped.
 */
export function readErrorPayload(raw: string, secrets: readonly string[]): ErrorPayload {
  try {
    const parsed = JSON.parse(raw) as Record<string, unknown> | null;
    if (parsed !== null && typeof parsed === "object") {
      if (parsed.error !== undefined && parsed.error !== null) {
        const code = wireErrorCode(parsed.error);
        const text = clip(describeWireError(parsed.error), secrets);
        return code === undefined ? { text } : { text, code };
      }
      if (typeof parsed.message === "string") return { text: clip(parsed.message, secrets) };
      if (typeof parsed.detail === "string") return { text: clip(parsed.detail, secrets) };
    }
  } catch {
    // not JSON: the text itself
  }
  return { text: raw.trim() === "" ? "(empty body)" : clip(raw.trim(), secrets) };
}

/** Reads at most 64 KB of an error response's body, as an `ErrorPayload`. */
export async function readErrorBody(response: Response, secrets: readonly string[]): Promise<ErrorPayload> {
  let text = "";
  try {
    const reader = response.body?.getReader();
    if (reader !== undefined) {
      const decoder = new TextDecoder();
      while (text.length < MAX_ERROR_BODY) {
        const { done, value } = await reader.read();
        if (done) break;
        text += decoder.decode(value, { stream: true });
      }
      await reader.cancel().catch(() => {});
    }
  } catch (error) {
    if (text === "") return { text: `(the error body could not be read: ${clip(describeCause(error), secrets)})` };
  }
  return readErrorPayload(text, secrets);
}
