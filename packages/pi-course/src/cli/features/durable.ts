/**
 * Durable runs on the command line: a run the resumed session left unfinished is recovered and
 * goes on, unless `--no-recover`.
 */
import type { CliFeature } from "./feature.js";

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
};
