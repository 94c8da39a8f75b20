/**
 * The worker's command as a function: `[--setups <module>] [--cases N] [--port N] [--host H]
 * [--grace-ms N] [--identity-keys-file FILE] [--suites DIR,…] [--version V] [--retry-max-ms N]`,
 * what `worker-main.ts` (and `pi-course-restate worker`) run, and what a worker bundle
 * (`bundleWorker`) runs with its setups built in.
 *
 * The engine's identity keys come from `--identity-keys-file` (the engine's `<dir>/identity-keys`)
 * or from `PI_RESTATE_IDENTITY_KEYS`; without them the worker does not start. `--suites`: the only
 * folders whose eval cases it runs. `--version`: the name of its code (default: a hash of the
 * program's file and the setups module; name it yourself when you run sources under tsx).
 *
 * The setups module exports `setups` (a `RunSetups`) for agent runs; without it the worker takes
 * eval cases only (`--cases` at once, default 2). Prints `worker <pid> listening on <url>`
 * once it listens; a SIGTERM or SIGINT closes it: connections still open after `--grace-ms`
 * (default 5000) are cut, then it exits.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import type { RunSetups } from "./agent-run.js";
import { readIdentityKeys } from "./identity.js";
import { startWorker } from "./worker.js";

const USAGE =
  "usage: worker-main.ts [--setups <module exporting `setups`>] [--cases N] [--port N] [--host 127.0.0.1] [--grace-ms N] " +
  "[--identity-keys-file FILE] [--suites DIR,…] [--version V] [--retry-max-ms N]";

/** A short hash of `files` (those that exist): the version of the code they hold. */
export function codeVersion(files: readonly (string | undefined)[]): string {
  const hash = createHash("sha256");
  for (const file of files) {
    if (file === undefined) continue;
    try {
      hash.update(readFileSync(file));
    } catch {
      hash.update(file);
    }
  }
  return hash.digest("hex").slice(0, 12);
}

/**
 * Runs the worker command on `args` (the arguments after the script). `builtIn`: setups compiled
 * into the program (a bundle); then `--setups` is refused, as it would load a second copy.
 */
export async function runWorkerCommand(args: string[], builtIn?: { setups: RunSetups }): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      setups: { type: "string" },
      cases: { type: "string" },
      port: { type: "string" },
      host: { type: "string" },
      "grace-ms": { type: "string" },
      "identity-keys-file": { type: "string" },
      suites: { type: "string" },
      version: { type: "string" },
      "retry-max-ms": { type: "string" },
    },
  });
  const retryMaxMs = values["retry-max-ms"] === undefined ? undefined : Number(values["retry-max-ms"]);
  if (retryMaxMs !== undefined && (!Number.isInteger(retryMaxMs) || retryMaxMs < 1))
    throw new Error(`--retry-max-ms must be a whole number of ms above 0. ${USAGE}`);
  const cases = values.cases === undefined ? 2 : Number(values.cases);
  if (!Number.isInteger(cases) || cases < 1) throw new Error(`--cases must be a whole number above 0. ${USAGE}`);
  const port = values.port === undefined ? 0 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port must be a port number. ${USAGE}`);
  const graceMs = values["grace-ms"] === undefined ? 5000 : Number(values["grace-ms"]);
  if (!Number.isInteger(graceMs) || graceMs < 0) throw new Error(`--grace-ms must be a whole number of ms. ${USAGE}`);
  if (builtIn !== undefined && values.setups !== undefined) {
    throw new Error(`this worker has its setups built in; it takes no --setups. ${USAGE}`);
  }
  const identityKeys = readIdentityKeys(values["identity-keys-file"]);
  let setups: RunSetups = builtIn?.setups ?? {};
  if (values.setups !== undefined) {
    const loaded = (await import(pathToFileURL(path.resolve(values.setups)).href)) as { setups?: RunSetups };
    if (loaded.setups === undefined || typeof loaded.setups !== "object") {
      throw new Error(`${values.setups} exports no \`setups\` object (name → RunSetup). ${USAGE}`);
    }
    setups = loaded.setups;
  }
  const version =
    values.version ??
    codeVersion([process.argv[1], values.setups === undefined ? undefined : path.resolve(values.setups)]);
  const worker = await startWorker({
    identityKeys,
    setups,
    cases,
    port,
    version,
    suites: (values.suites ?? "").split(",").filter((dir) => dir !== ""),
    ...(retryMaxMs !== undefined && { retry: { maxIntervalMs: retryMaxMs } }),
    ...(values.host && { host: values.host }),
  });
  const stop = () => {
    setTimeout(() => process.exit(0), graceMs + 1000).unref(); // whatever still holds the server
    void worker.close(graceMs).then(() => process.exit(0));
  };
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
  process.stdout.write(`worker ${process.pid} listening on ${worker.url} (version ${version})\n`);
}
