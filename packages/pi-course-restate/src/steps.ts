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
 */
import type { Context as RestateContext } from "@restatedev/restate-sdk";

export class Steps {
  private last: Promise<unknown> = Promise.resolve();
  private failure: { error: unknown } | undefined;
  private fail!: (error: unknown) => void;
  /** Rejects with the first engine failure of a step; never resolves. */
  readonly failed: Promise<never> = new Promise<never>((_, reject) => {
    this.fail = reject;
  });

  constructor(private readonly ctx: RestateContext) {
    this.failed.catch(() => undefined); // not unhandled while no one races it
  }

  /** Runs `action` as the step `name` after every step asked for before it; resolves with its recorded result. */
  run<T>(name: string, action: () => Promise<T> | T): Promise<T> {
    const step = (): PromiseLike<T> => {
      if (this.failure !== undefined) return Promise.reject(this.failure.error);
      return (this.ctx.run(name, action) as PromiseLike<T>).then(undefined, (error: unknown) => {
        this.failure ??= { error };
        this.fail(error);
        throw error;
      });
    };
    const result = this.last.then(step, step);
    this.last = result.catch(() => undefined);
    return result;
  }
}
