/**
 * The worker's script: `node --import tsx worker-main.ts [--setups <module>] [--cases N] [--port N]
 * [--host H] [--grace-ms N]` (`runWorkerCommand` says what each does). For a worker that starts in
 * a fraction of the time, with its setups built in, see `bundleWorker`.
 */
import { runWorkerCommand } from "./worker-command.js";

runWorkerCommand(process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(`worker: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
