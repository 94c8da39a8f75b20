/**
 * The clock of one request: one `AbortSignal` that fires when the caller aborts, when the whole
 * request has run `timeoutMs`, or when the idle watchdog sees no progress for `idleTimeoutMs`,
 * and a `cause` that says which, so a timeout is never mistaken for the caller's abort.
 *
 * Progress is what the caller of `progress()` says it is: the transport counts the response
 * headers, and an adapter counts each data frame it reads. Bytes alone are not progress: a server
 * that sends only keep-alive comments, or drips a frame one byte at a time, is stalled.
 *
 * The watchdog runs only between `watch()` and `unwatch()` (not while the transport waits
 * before a retry). `progress()` is one clock read, cheap enough for every frame: the timer is
 * not reset on each call, it checks the time of the last progress when it fires.
 */
import { PiCourseError } from "../../base/errors.js";
import { MAX_TIMER_MS } from "../../base/timer.js";

/** Why the request's signal fired. */
export type DeadlineCause = "aborted" | "timeout" | "stall";

export interface DeadlineOptions {
  /** The caller's signal. */
  signal?: AbortSignal;
  /** The whole request, retries and streaming included. `undefined`: no limit. */
  timeoutMs?: number;
  /** The longest wait without progress while watching. `Infinity`: no watchdog. */
  idleTimeoutMs: number;
}

// Node fires longer timers at once (MAX_TIMER_MS): longer waits are made of several.

export class RequestDeadline {
  private readonly controller = new AbortController();
  /** Fires on the caller's abort, on `timeoutMs`, or on a stall. */
  readonly signal: AbortSignal = this.controller.signal;
  /** Set when `signal` fires. */
  cause: DeadlineCause | undefined = undefined;
  private readonly startedAt = performance.now();
  private lastProgress = this.startedAt;
  private watching = false;
  private idleTimer: ReturnType<typeof setTimeout> | undefined = undefined;
  private totalTimer: ReturnType<typeof setTimeout> | undefined = undefined;
  private readonly onCallerAbort = () => this.stop("aborted");

  constructor(private readonly options: DeadlineOptions) {
    const caller = options.signal;
    if (caller?.aborted) this.stop("aborted");
    else caller?.addEventListener("abort", this.onCallerAbort, { once: true });
    if (options.timeoutMs !== undefined && !this.signal.aborted) this.armTotal();
  }

  /** Milliseconds left before `timeoutMs` (`Infinity` without a timeout). */
  remainingMs(): number {
    const { timeoutMs } = this.options;
    return timeoutMs === undefined ? Infinity : timeoutMs - (performance.now() - this.startedAt);
  }

  /** Starts (or resumes) the idle watchdog, counting from now. */
  watch(): void {
    this.lastProgress = performance.now();
    this.watching = true;
    if (this.idleTimer === undefined && Number.isFinite(this.options.idleTimeoutMs) && !this.signal.aborted) {
      this.armIdle(this.options.idleTimeoutMs);
    }
  }

  /** Pauses the watchdog (e.g. while waiting before a retry). */
  unwatch(): void {
    this.watching = false;
  }

  /** Something useful arrived: the watchdog counts from now. */
  progress(): void {
    this.lastProgress = performance.now();
  }

  /** Stops the timers and forgets the caller's signal. Call once the request is over. */
  dispose(): void {
    clearTimeout(this.idleTimer);
    clearTimeout(this.totalTimer);
    this.idleTimer = this.totalTimer = undefined;
    this.options.signal?.removeEventListener("abort", this.onCallerAbort);
  }

  private armIdle(delay: number): void {
    this.idleTimer = setTimeout(
      () => {
        this.idleTimer = undefined;
        if (!this.watching || this.signal.aborted) return;
        const idle = performance.now() - this.lastProgress;
        if (idle >= this.options.idleTimeoutMs) this.stop("stall");
        else this.armIdle(this.options.idleTimeoutMs - idle);
      },
      Math.min(Math.max(delay, 1), MAX_TIMER_MS),
    );
  }

  private armTotal(): void {
    const left = this.remainingMs();
    if (left <= 0) return this.stop("timeout");
    this.totalTimer = setTimeout(
      () => {
        this.totalTimer = undefined;
        if (!this.signal.aborted) this.armTotal();
      },
      Math.min(left, MAX_TIMER_MS),
    );
  }

  private stop(cause: DeadlineCause): void {
    if (this.signal.aborted) return;
    this.cause = cause;
    this.dispose();
    this.controller.abort(new DeadlineError(cause));
  }
}

/** The abort reason of a deadline's signal. */
export class DeadlineError extends PiCourseError {
  /** Stable: `"DEADLINE"`. */
  override readonly code = "DEADLINE";
  constructor(readonly why: DeadlineCause) {
    super(`request ${why === "aborted" ? "aborted by the caller" : why === "timeout" ? "timed out" : "stalled"}`);
    this.name = "DeadlineError";
  }
}
