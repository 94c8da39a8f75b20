/** The eval harness on the command line: `npm start -- eval SUITE` (the command is in commands.ts; eval-command.ts parses the rest). */
import type { CliFeature } from "./feature.js";

export const evalSuite: CliFeature = {
  name: "eval",
  usage: `  npm start -- eval SUITE [--repeat K] [--concurrency N] [--out DIR]
                                              run every case of an eval suite (offline on the
                                              cases' scripts, or with --base-url as above) and
                                              judge it (eval --help says it all)
`,
};
