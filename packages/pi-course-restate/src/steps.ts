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
 */
import type { Context as RestateContext } from "@restatedev/restate-sdk";

export class Steps {
  private last: Promise<unknown> = Promise.resolve();

  constructor(private readonly ctx: RestateContext) {}

  /** Runs `action` as the step `name` after every step asked for before it; resolves with its recorded result. */
  run<T>(name: string, action: () => Promise<T> | T): Promise<T> {
    const result = this.last.then(
      () => this.ctx.run(name, action) as PromiseLike<T>,
      () => this.ctx.run(name, action) as PromiseLike<T>,
    );
    this.last = result.catch(() => undefined);
    return result;
  }
}
