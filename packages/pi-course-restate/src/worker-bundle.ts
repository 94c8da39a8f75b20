/**
 * A worker as one JavaScript file, with its setups built in: what to deploy, and what starts in a
 * fraction of the time `worker-main.ts` under tsx takes (on 2 cores, about 0.15 s instead of
 * 2.6 s: tsx compiles, and Node loads, some 850 modules of `@pi/course`, TypeBox and the SDK on
 * every start). A restarted worker is back that much sooner, and runs waiting on it go on.
 *
 * The bundle is written by esbuild. Write it inside the project (next to its `node_modules`): the
 * few packages `@pi/course` loads by name at run time (`yaml` for front matter, QuickJS's wasm for
 * code mode) are found from where the bundle is.
 */
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const HERE = fileURLToPath(import.meta.url);
/** The worker's command beside this file (`.ts` in the sources, `.js` once built). */
const COMMAND = path.join(path.dirname(HERE), `worker-command${path.extname(HERE)}`);

export interface WorkerBundleOptions {
  /** The setups module (exports `setups`), built into the bundle; none: a worker of eval cases only. */
  setups?: string;
  /** The file to write (`.mjs`); its folder is created. */
  outfile: string;
}

/**
 * Bundles the worker command (`runWorkerCommand`) and `setups` into `outfile`; run it with
 * `node <outfile> [worker options]` (`WORKER_HELP`). Rejects with esbuild's
 * messages when a module does not build.
 */
export async function bundleWorker(options: WorkerBundleOptions): Promise<void> {
  const outfile = path.resolve(options.outfile);
  await mkdir(path.dirname(outfile), { recursive: true });
  const setups = options.setups === undefined ? undefined : path.resolve(options.setups);
  const entry = [
    `import { runWorkerCommand } from ${JSON.stringify(COMMAND)};`,
    setups === undefined ? "const builtIn = undefined;" : `import { setups } from ${JSON.stringify(setups)};`,
    setups === undefined ? "" : "const builtIn = { setups };",
    "runWorkerCommand(process.argv.slice(2), builtIn).catch((error) => {",
    "  process.stderr.write(`worker: ${error instanceof Error ? error.message : String(error)}\\n`);",
    "  process.exit(1);",
    "});",
  ].join("\n");
  await build({
    stdin: { contents: entry, resolveDir: path.dirname(COMMAND), sourcefile: "worker-bundle-entry.ts", loader: "ts" },
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    outfile,
    // CommonJS packages in the bundle still call `require` for Node's own modules
    banner: {
      js: "import { createRequire as __workerRequire } from 'node:module'; const require = __workerRequire(import.meta.url);",
    },
    logLevel: "silent",
  });
}
