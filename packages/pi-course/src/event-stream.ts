/**
 * `EventStream<T, R>`: a single-reader async queue of events that ends with a result.
 *
 * A producer `push`es events; one consumer reads them with `for await`. The first event for
 * which `isComplete` is true is the terminal event: it is delivered as an item, iteration then
 * ends, and `result()` resolves with `extractResult(terminal)`. A producer that has no terminal
 * event calls `end(result)` instead.
 *
 * Cost: O(1) amortised per push and per read (an array with a moving head, emptied once drained).
 */
// #region ch03
import type { AssistantMessage, ModelEvent } from "./types.js";
// #endregion

export class EventStream<T, R = T> implements AsyncIterable<T> {
  /** Buffered events; `queue[head]` is the next one to deliver. */
  private queue: T[] = [];
  private head = 0;
  /** The reader waiting for the next event, if any. */
  private waiter: ((item: IteratorResult<T>) => void) | undefined;
  /** No event is accepted any more: a terminal event arrived or `end()` was called. */
  private closed = false;
  /** The reader stopped early: events are no longer buffered. */
  private detached = false;
  private hasReader = false;
  private readonly settled: Promise<R>;
  private resolveResult!: (value: R) => void;
  private rejectResult!: (reason: Error) => void;

  constructor(
    private readonly isComplete: (event: T) => boolean,
    private readonly extractResult: (event: T) => R,
  ) {
    this.settled = new Promise<R>((resolve, reject) => {
      this.resolveResult = resolve;
      this.rejectResult = reject;
    });
    // A rejection nobody asked for must not become an unhandled rejection;
    // `result()` hands out the same promise, so callers still see it.
    this.settled.catch(() => {});
  }

  /**
   * Adds an event. Ignored after the terminal event or `end()`. If `extractResult` throws on the
   * terminal event, the stream ends, `result()` rejects with that error, and `push` rethrows it.
   */
  push(event: T): void {
    // #region lab 2.1 push
    if (this.closed) return;
    if (this.isComplete(event)) {
      this.closed = true;
      try {
        this.resolveResult(this.extractResult(event));
      } catch (error) {
        this.rejectResult(error as Error);
        this.finishReader();
        throw error;
      }
    }
    if (this.detached) return;
    const waiter = this.waiter;
    if (waiter !== undefined) {
      this.waiter = undefined;
      waiter({ value: event, done: false });
      return;
    }
    this.queue.push(event);
    // #endregion
  }

  /**
   * Ends the stream without a terminal event. Buffered events are still delivered, then
   * iteration ends. `result()` resolves with `result`; called with no argument, `result()`
   * rejects, so that no caller waits forever. Ignored after the stream has ended.
   */
  end(...args: [] | [result: R]): void {
    // #region lab 2.2 end
    if (this.closed) return;
    this.closed = true;
    if (args.length === 0) {
      this.rejectResult(
        new Error(
          "EventStream ended without a result: end() was called with no argument before any " +
            "terminal event. Push a terminal event or call end(result).",
        ),
      );
    } else {
      this.resolveResult(args[0]);
    }
    this.finishReader();
    // #endregion
  }

  /**
   * Events pushed and not yet taken by the reader. A producer that can outrun its reader (a
   * server faster than the code reading the stream) checks it between batches and lets the reader
   * catch up, so the stream never holds a whole answer in memory.
   */
  get buffered(): number {
    return this.queue.length - this.head;
  }

  /** Settles with the terminal event's result, or the value given to `end(result)`. */
  result(): Promise<R> {
    return this.settled;
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    // #region lab 2.1 [Symbol.asyncIterator]
    if (this.hasReader) {
      throw new Error(
        "EventStream already has a reader: a stream delivers each event once, to one consumer. " +
          "Read it in one place and fan the events out yourself.",
      );
    }
    this.hasReader = true;
    return {
      next: () => this.next(),
      return: () => {
        this.detach();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
    // #endregion
  }

  private next(): Promise<IteratorResult<T>> {
    // #region lab 2.1 next
    if (this.head < this.queue.length) {
      const value = this.queue[this.head]!;
      this.queue[this.head++] = undefined as T; // let the event be collected
      if (this.head === this.queue.length) {
        this.queue.length = 0;
        this.head = 0;
      }
      return Promise.resolve({ value, done: false });
    }
    if (this.closed || this.detached) return Promise.resolve({ value: undefined, done: true });
    if (this.waiter !== undefined) {
      return Promise.reject(
        new Error("EventStream: next() was called again before the previous next() settled. Await each next()."),
      );
    }
    return new Promise((resolve) => {
      this.waiter = resolve;
    });
    // #endregion
  }

  /** Wakes a waiting reader with the end of iteration (only waits when the queue is empty). */
  private finishReader(): void {
    const waiter = this.waiter;
    if (waiter !== undefined) {
      this.waiter = undefined;
      waiter({ value: undefined, done: true });
    }
  }

  /** The reader stopped early: drop what is buffered and buffer nothing more. */
  private detach(): void {
    this.detached = true;
    this.queue = [];
    this.head = 0;
    this.finishReader();
  }
}
// #region ch03

/**
 * The stream of one model turn: terminal on `done` and `error`; `result()` resolves with that
 * event's message (the same object) in both cases.
 */
export class AssistantMessageEventStream extends EventStream<ModelEvent, AssistantMessage> {
  constructor() {
    super(isTerminalModelEvent, messageOfTerminal);
  }

  /**
   * Refuses, by throwing, a terminal event whose name or `reason` disagrees with its message's
   * `stopReason`: that is a bug in the model adapter, not a runtime failure.
   */
  override push(event: ModelEvent): void {
    // #region lab 3.3 push
    if (event.type === "done" || event.type === "error") {
      const message = event.type === "done" ? event.message : event.error;
      const allowed = event.type === "done" ? DONE_REASONS : ERROR_REASONS;
      if (!allowed.has(event.reason) || message.stopReason !== event.reason) {
        throw new TypeError(
          `Incoherent "${event.type}" event: reason "${event.reason}" with message stopReason ` +
            `"${message.stopReason}". A "done" event carries stop/length/toolUse, an "error" event ` +
            `error/aborted, and the reason must equal the message's stopReason.`,
        );
      }
    }
    super.push(event);
    // #endregion
  }
}

function isTerminalModelEvent(event: ModelEvent): boolean {
  return event.type === "done" || event.type === "error";
}

function messageOfTerminal(event: ModelEvent): AssistantMessage {
  if (event.type === "done") return event.message;
  if (event.type === "error") return event.error;
  throw new Error(`not a terminal model event: ${event.type}`);
}

const DONE_REASONS: ReadonlySet<string> = new Set(["stop", "length", "toolUse"]);
const ERROR_REASONS: ReadonlySet<string> = new Set(["error", "aborted"]);
// #endregion
