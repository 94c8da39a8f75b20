/**
 * One handler's steps, one at a time.
 *
 * Restate's SDK 1.17 lets a handler wait on one of its promises at a time (two awaited at once
 * fail with "awaitNext already pending"; the SDK's combinators are the way to wait on several).
 * The loop runs a batch of tool calls concurrently and knows nothing of the engine, so every step
 * of a run goes through this queue: each starts when the one before it has its result. The journal
 * is one sequence anyway, and Restate starts no step before the one before it is durable, so a
 * batch's calls ran one after another before too; the queue only makes the order the order in
 * which the loop asked, on every replay.
 *
 * A step whose own promise rejects failed in the engine, not in its action (the journaled model and
 * tools catch what their actions throw): the invocation was cancelled, say. That ends the run: every
 * later step rejects the same way without running, and `failed` rejects with it, so the handler
 * fails as the engine says instead of the loop taking it for a model or tool error.
 *
 * With `limits` (run-limits.ts), each action gets a signal that aborts at the step's limit, its
 * reason the limit's text: the journaled model and tools stop waiting there and record it as the
 * turn's or the call's error. A step that starts after the run's deadline fails the run for good
 * (a `TerminalError`, recorded, so every replay agrees).
 */
import { type Context as RestateContext, TerminalError } from "@restatedev/restate-sdk";
import { withinLimit } from "./run-limits.js";

/** When the run must end (epoch ms, from the engine's recorded start) and how long one step may take. */
export interface StepLimits {
  deadline: number;
  stepMs: number;
  /** Says which run and limit: `run demo-1 passed its time limit of 3600 s`. */
  runLimitText: string;
}

export class Steps {
  private last: Promise<unknown> = Promise.resolve();
  private failure: { error: unknown } | undefined;
  private fail!: (error: unknown) => void;
  /** Rejects with the first engine failure of a step; never resolves. */
  readonly failed: Promise<never> = new Promise<never>((_, reject) => {
    this.fail = reject;
  });

  constructor(
    private readonly ctx: RestateContext,
    private readonly limits?: StepLimits,
  ) {
    this.failed.catch(() => undefined); // not unhandled while no one races it
  }

  /** Runs `action` as the step `name` after every step asked for before it; resolves with its recorded result. */
  run<T>(name: string, action: (signal?: AbortSignal) => Promise<T> | T): Promise<T> {
    const limited = this.limits === undefined ? action : () => this.limited(name, action);
    const step = (): PromiseLike<T> => {
      if (this.failure !== undefined) return Promise.reject(this.failure.error);
      return (this.ctx.run(name, limited) as PromiseLike<T>).then(undefined, (error: unknown) => {
        this.failure ??= { error };
        this.fail(error);
        throw error;
      });
    };
    const result = this.last.then(step, step);
    this.last = result.catch(() => undefined);
    return result;
  }

  /** `action` under the run's deadline and the step's limit (runs only when the engine has no result for the step). */
  private async limited<T>(name: string, action: (signal?: AbortSignal) => Promise<T> | T): Promise<T> {
    const { deadline, stepMs, runLimitText } = this.limits!;
    const left = deadline - Date.now();
    if (left <= 0) throw new TerminalError(`${runLimitText}; it stopped before step "${name}"`);
    const [ms, reason] =
      stepMs <= left
        ? [stepMs, `step "${name}" did not finish within ${stepMs / 1000} s (the step time limit)`]
        : [left, `step "${name}" was cut: ${runLimitText}`];
    return withinLimit(ms, reason, action);
  }
}
