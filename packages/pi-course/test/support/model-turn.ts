/**
 * Test support for provider adapters (chapter 05): read one model turn to its end, summarise its
 * events, and write the final message a test expects.
 */
import { expect } from "vitest";
import { AssistantMessageEventStream } from "../../src/index.js";
import type { AssistantContent, AssistantMessage, Context, Model, ModelEvent, Usage } from "../../src/index.js";

/** What a test sees of one turn: the events, a compact signature, partial arguments as they were. */
export interface Turn {
  events: ModelEvent[];
  signature: string[];
  partials: unknown[];
  message: AssistantMessage;
}

/** Reads one turn of `model`; see `turnRunner`. */
export type RunTurn = (model: Model, context?: Context, signal?: AbortSignal) => Promise<Turn>;

/**
 * A function that reads one turn to its end and checks that it ends with one terminal event
 * carrying the final message, and that `secret` (the test's API key) shows nowhere.
 */
export function turnRunner(secret: string): RunTurn {
  return async (model, context = { messages: [] }, signal) => {
    const turn = await readTurn(model.stream(context, signal === undefined ? {} : { signal }));
    surfaceInternalError(turn.message);
    const last = turn.events.at(-1)!;
    expect(last.type === "done" || last.type === "error").toBe(true);
    expect(last.type === "done" ? last.message : last.type === "error" ? last.error : undefined).toBe(turn.message);
    expect(JSON.stringify(turn.events)).not.toContain(secret);
    expect(JSON.stringify(turn.message)).not.toContain(secret);
    return turn;
  };
}

/**
 * Reads a turn's stream to its end, each `partialArguments` copied as it is read (the parser's
 * value is a live view that keeps growing).
 */
export async function readTurn(stream: AssistantMessageEventStream): Promise<Turn> {
  const events: ModelEvent[] = [];
  const partials: unknown[] = [];
  for await (const event of stream) {
    events.push(event);
    if (event.type === "toolcall_delta") partials.push(structuredClone(event.partialArguments));
  }
  return { events, signature: signatureOf(events), partials, message: await stream.result() };
}

/**
 * An adapter bug (or a lab not written yet) ends the turn with an internal error event: fail the
 * test with that message, not with a diff of event names.
 */
export function surfaceInternalError(message: AssistantMessage): void {
  const text = message.errorMessage ?? "";
  if (/Internal error in the adapter|not implemented yet/.test(text)) throw new Error(text);
}

/** `start`, `text_delta@0×8`, `toolcall_end@1`, `done:toolUse`…: run-length coded. */
export function signatureOf(events: readonly ModelEvent[]): string[] {
  const out: [string, number][] = [];
  for (const event of events) {
    const name =
      event.type === "done" || event.type === "error"
        ? `${event.type}:${event.reason}`
        : event.type === "start"
          ? "start"
          : `${event.type}@${event.contentIndex}`;
    const last = out.at(-1);
    if (last !== undefined && last[0] === name) last[1]++;
    else out.push([name, 1]);
  }
  return out.map(([name, count]) => (count > 1 ? `${name}×${count}` : name));
}

/** Who made the messages of a test file. */
export interface MessageMeta {
  provider: string;
  model: string;
  timestamp: number;
}

/** The final message a test expects: `meta`'s provider, model and timestamp, and the rest given. */
export function expectedMessage(
  meta: MessageMeta,
  content: AssistantContent[],
  stopReason: AssistantMessage["stopReason"],
  usage: Usage,
  extra: Partial<AssistantMessage> = {},
): AssistantMessage {
  return {
    role: "assistant",
    content,
    provider: meta.provider,
    model: meta.model,
    usage,
    stopReason,
    ...extra,
    timestamp: meta.timestamp,
  };
}

/**
 * `message` as an adapter over HTTP ends it after `attempts` requests: `attempts` on the message,
 * and on `errorDetails` too when the turn failed (`AssistantMessage.attempts`).
 */
export function overHttp(message: AssistantMessage, attempts = 1): AssistantMessage {
  const { errorDetails } = message;
  return { ...message, attempts, ...(errorDetails !== undefined && { errorDetails: { ...errorDetails, attempts } }) };
}

/**
 * A turn's stream that records each event as it is pushed, `partialArguments` copied then: for
 * tests that drive a turn translator directly, without HTTP.
 */
export class RecordingStream extends AssistantMessageEventStream {
  readonly events: ModelEvent[] = [];
  readonly partials: unknown[] = [];

  override push(event: ModelEvent): void {
    this.events.push(event);
    if (event.type === "toolcall_delta") this.partials.push(structuredClone(event.partialArguments));
    super.push(event);
  }

  /** What was recorded; the message is the terminal event's, or `partial` while the turn is open. */
  turn(partial: AssistantMessage): Turn {
    const last = this.events.at(-1);
    const message = last?.type === "done" ? last.message : last?.type === "error" ? last.error : partial;
    return { events: this.events, signature: signatureOf(this.events), partials: this.partials, message };
  }
}
