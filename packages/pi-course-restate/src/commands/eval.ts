/** `pi-course-restate eval`: a suite's cases as runs on the engine, with the reports of `pi-course eval`. */
import { formatSummary } from "@pi/course";
import { evalOnEngine } from "../eval-suite.js";
import { readConnection } from "../engine-client.js";
import { type Command, ENGINE_HELP, ENGINE_OPTION, parse, UsageError, wholeNumber } from "./command.js";

export const evalCommand: Command = {
  name: "eval",
  summary: "SUITE: every case × repeat as a run on the engine; the reports of pi-course eval",
  help: `usage: pi-course-restate eval SUITE --engine DIR [--repeat K] [--out DIR] [--id RUN]

Hands each case × repeat of the suite (a folder of cases, at the same path on every worker) to the
engine; any number of workers take them. Writes what \`pi-course eval\` writes: report.json,
report.html and each run's session file under sessions/.

${ENGINE_HELP}
  --repeat K      runs per case (default 1)
  --out DIR       where the reports go (new or empty; default: a new temporary folder)
  --id RUN        the suite run's id (default: a new one, printed); the same id picks up the
                  same runs after this process stopped

Exit code: 0 every case passed, 1 a case failed (or the engine failed), 2 usage.
`,
  async run(args) {
    const { values, positionals } = parse(
      args,
      { ...ENGINE_OPTION, repeat: { type: "string" }, out: { type: "string" }, id: { type: "string" } },
      1,
    );
    const [suite] = positionals;
    if (suite === undefined) throw new UsageError("name the suite: pi-course-restate eval SUITE (a folder of cases)");
    const engine = await readConnection(values.engine);
    const repeat = values.repeat === undefined ? 1 : wholeNumber("--repeat", values.repeat);
    let done = 0;
    const result = await evalOnEngine({
      suite,
      engine,
      repeat,
      ...(values.out !== undefined && { out: values.out }),
      ...(values.id !== undefined && { runId: values.id }),
      onDone: (record) => {
        const what = record.status === "passed" ? "PASS" : record.status.toUpperCase();
        process.stderr.write(
          `[${++done}] ${what} ${record.case} #${record.repeat}${record.reason ? `: ${record.reason}` : ""}\n`,
        );
      },
    });
    process.stdout.write(formatSummary(result.report));
    process.stdout.write(
      `report: ${result.out}/report.html\njson:   ${result.out}/report.json\nsuite run: ${result.runId}\n`,
    );
    return result.exitCode;
  },
};
