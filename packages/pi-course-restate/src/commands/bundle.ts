/** `pi-course-restate bundle`: a worker and its setups as one file (`bundleWorker`). */
import path from "node:path";
import { bundleWorker } from "../worker-bundle.js";
import { type Command, parse, UsageError } from "./command.js";

export const bundle: Command = {
  name: "bundle",
  summary: "write a worker and its setups as one file that plain Node runs",
  help: `usage: pi-course-restate bundle [--setups MODULE] --out FILE.mjs

Writes one JavaScript file holding the worker and the setups module (TypeScript or JavaScript)
built in; run it with \`node FILE.mjs [worker options]\` (\`pi-course-restate worker --help\`).
It starts in a fraction of the time \`worker --setups\` takes. Write it inside your project (the
packages @pi/course loads by name at run time are found from where it is).

  --setups MODULE   a module exporting \`setups\` (name → RunSetup); none: eval cases only
  --out FILE.mjs    the file to write (its folder is created)
`,
  async run(args) {
    const { values } = parse(args, { setups: { type: "string" }, out: { type: "string" } });
    if (values.out === undefined) throw new UsageError("--out is needed: the file to write");
    await bundleWorker({ ...(values.setups !== undefined && { setups: values.setups }), outfile: values.out });
    process.stdout.write(`worker bundle: ${path.resolve(values.out)} (run: node ${values.out} --port N)\n`);
    return 0;
  },
};
