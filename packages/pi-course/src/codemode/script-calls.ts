/**
 * The tool calls of one script run: each recorded as the script makes it, and all ended together
 * with the script. A script may start a call without awaiting it; when the script ends (returns,
 * throws, times out, is aborted or stopped) every call still in flight is cancelled (its signal
 * fires, so the agent loop answers it as aborted at once and the tool is told to stop) and
 * marked `cancelled`, and the script's outcome waits until they have answered: no call of a script
 * runs on after the script's result.
 */
/** What is kept of a call (sandbox.ts's `NestedCallRecord`): how it ended, if it has. */
export interface CallRecord {
  isError?: boolean;
  cancelled?: boolean;
}

export class ScriptCalls<Kept extends CallRecord> {
  /** Every call the script made, in order; a record's `isError` is set when its answer arrives. */
  readonly records: Kept[] = [];
  private readonly pending = new Set<Promise<unknown>>();
  private readonly ending = new AbortController();

  /** The signal every call of the script runs under: it fires when the script ends. */
  get signal(): AbortSignal {
    return this.ending.signal;
  }

  /** Records `record`, and keeps `answer` until it settles. */
  add<T>(record: Kept, answer: Promise<T>): Promise<T> {
    this.records.push(record);
    this.pending.add(answer);
    const settled = (): void => void this.pending.delete(answer);
    answer.then(settled, settled);
    return answer;
  }

  /**
   * The script has ended: cancels every call still in flight and resolves once all have answered,
   * or after `graceMs` if a caller's `callTool` ignores its signal.
   */
  async end(graceMs: number): Promise<void> {
    if (this.pending.size === 0) return;
    for (const record of this.records) if (record.isError === undefined) record.cancelled = true;
    this.ending.abort();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const grace = new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)));
    await Promise.race([Promise.allSettled([...this.pending]), grace]);
    clearTimeout(timer);
  }
}
