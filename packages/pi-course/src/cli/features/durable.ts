/**
 * Durable runs on the command line: every tool call is journaled in the session (durable-run.ts),
 * and a run the resumed session left unfinished is recovered and goes on, unless `--no-recover`;
 * a conversation asks first (`RECOVERY_QUESTION`).
 */
import type { Chat } from "../chat-commands.js";
import { neutralize } from "../trace.js";
import type { DurableRun } from "./durable-run.js";
import type { CliFeature } from "./feature.js";

/** The question the interactive mode asks when the session it opens holds a killed run. */
export const RECOVERY_QUESTION =
  "resume the killed run now? [Y/n] (n: record it as it stands and wait for your message) ";

declare module "../run-options.js" {
  interface SessionOptions {
    /**
     * `--no-recover`: a run the resumed session left unfinished (killed mid-way) is recorded as
     * it stands (nothing runs again) and not continued. Default false: it is recovered and goes on.
     */
    noRecover?: boolean;
  }
}

export const durable: CliFeature = {
  name: "durable",
  options: [
    {
      name: "no-recover",
      section: "sessions",
      help: `a run the session left unfinished (killed mid-way) is recorded as it
stands, nothing runs again, and it is not continued (by default it is
recovered, told, and goes on before the new prompt; the interactive mode
asks first, and this flag skips the question)`,
    },
  ],
  parse({ values, session }) {
    return values.has("no-recover") && session !== undefined ? { session: { ...session, noRecover: true } } : {};
  },
  async setUp(runtime, wiring) {
    const { DurableRun } = await import("./durable-run.js");
    // a killed run is recovered after a question on the terminal (opened), not before the banner
    return new DurableRun(runtime, wiring.asks === true);
  },
  opened: settleRecovery,
};

/**
 * A killed run found in the session just opened (`DurableRun.pending`): says what it left, asks
 * whether to resume it, and recovers. Yes (Enter, y): recovered as the other modes do, and
 * `runtime.unfinished` says the run is to go on; no (n): recorded as it stands (interrupted calls
 * get their error results, nothing runs again), the prompt waits.
 */
async function settleRecovery(chat: Chat): Promise<void> {
  const { printer, runtime } = chat;
  const durable = runtime.part<DurableRun>("durable");
  const plan = durable?.pending;
  if (durable === undefined || plan === undefined) return;
  const { recoveryFound } = await import("./durable-run.js");
  printer.line(`note: ${neutralize(recoveryFound(plan))}`, "yellow");
  let run: boolean | undefined;
  while (run === undefined) {
    const answer = await chat.ask(RECOVERY_QUESTION, "(exit: the killed run is left as it is; --continue asks again)");
    if (answer === undefined) return;
    if (/^(y|yes)?$/i.test(answer.trim())) run = true;
    else if (/^(n|no)$/i.test(answer.trim())) run = false;
    else printer.line("answer y (resume the run) or n (record it as it stands)", "dim");
  }
  await durable.settle(run, (note) => printer.line(`note: ${neutralize(note)}`, "yellow"));
}
