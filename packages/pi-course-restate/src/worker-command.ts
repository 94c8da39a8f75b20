/**
 * The worker's command as a function: what `worker-main.ts` (and `pi-course-restate worker`) run,
 * and what a worker bundle (`bundleWorker`) runs with its setups built in. `WORKER_HELP` says every
 * option.
 *
 * The worker's credential (the engine's public key and the workers' secret) comes from
 * `--identity-keys-file` (the engine's `<dir>/identity-keys`) or from `PI_RESTATE_IDENTITY_KEYS`;
 * without it the worker does not start. `--suites`: the only
 * folders whose eval cases it runs. `--version`: the name of its code (default: a hash of the
 * program's file and the setups module; name it yourself when you run sources under tsx).
 *
 * The setups module exports `setups` (a `RunSetups`) for agent runs; without it the worker takes
 * eval cases only. Prints `worker <pid> listening on <url>` once it listens; a SIGTERM or SIGINT
 * (or, with `--stop-with-stdin`, its standard input closing: the parent that spawned it is gone)
 * closes it: connections still open after `--grace-ms` are cut, then it exits.
 *
 * Each worker has a TMPDIR of its own (a new folder, removed when it stops, unless `--tmpdir`
 * names one): an eval case's protocol check watches the top of its temporary folder, so workers
 * sharing one would see each other's files as the case writing outside its workspace.
 */
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import type { RunSetups } from "./agent-run.js";
import { checkBind } from "./bind.js";
import { guardFolder, WORKER_TMPDIR } from "./folder-guard.js";
import { IDENTITY_KEYS_ENV, readWorkerCredential } from "./identity.js";
import { startWorker } from "./worker.js";

export const WORKER_HELP = `usage: pi-course-restate worker [--setups MODULE] [options]
   or: node WORKER.mjs [options]   (a bundle: its setups are built in)

Serves agent runs (the setups module's) and eval cases to the engine over HTTP/2.

  --setups MODULE          a module exporting \`setups\` (name → RunSetup), loaded by path (a
                           TypeScript module needs tsx; \`bundle\` builds one file instead);
                           none: eval cases only
  --port N                 the port (default: any free one; printed)
  --identity-keys-file FILE  the engine's DIR/identity-keys (or set PI_RESTATE_IDENTITY_KEYS
                           to its text): the engine's public key, so the worker serves only
                           requests the engine signed, and the workers' secret, which it proves
                           to the engine's proxy before it is sent any run; it does not start
                           without both
  --host ADDR              where it listens (default 127.0.0.1; another machine's address is
                           safe: unsigned requests are refused)
  --suites DIR[,DIR…]      the only folders whose eval cases it runs (default: none)
  --version V              the name of its code (default: a hash of the program and the setups
                           module; name it yourself when you run sources under tsx)
  --retry-max-ms N         the longest wait between the engine's retries of a run (default 2000)
  --cases N                eval cases at once (default 2)
  --tmpdir DIR             its TMPDIR (default: a new folder of its own, removed when it stops)
  --grace-ms N             on SIGTERM, how long runs in flight go on before their connections are
                           cut (default 5000; the engine retries them on another worker)
  --stop-with-stdin        stop when standard input closes (the parent that started it is gone)

The engine's admin address is not needed: the engine is given this worker's URL (\`engine --workers\`).
`;

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
  let values: ReturnType<typeof parse>["values"];
  try {
    ({ values } = parse(args));
  } catch (error) {
    throw new Error(`${error instanceof Error ? error.message : error}. Run with --help for the options.`);
  }
  if (values.help) {
    process.stdout.write(WORKER_HELP);
    return;
  }
  const usage = "Run with --help for the options.";
  const cases = values.cases === undefined ? 2 : Number(values.cases);
  if (!Number.isInteger(cases) || cases < 1) throw new Error(`--cases must be a whole number above 0. ${usage}`);
  const port = values.port === undefined ? 0 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port must be a port number. ${usage}`);
  const graceMs = values["grace-ms"] === undefined ? 5000 : Number(values["grace-ms"]);
  if (!Number.isInteger(graceMs) || graceMs < 0) throw new Error(`--grace-ms must be a whole number of ms. ${usage}`);
  if (builtIn !== undefined && values.setups !== undefined) {
    throw new Error(`this worker has its setups built in; it takes no --setups. ${usage}`);
  }
  const retryMaxMs = values["retry-max-ms"] === undefined ? undefined : Number(values["retry-max-ms"]);
  if (retryMaxMs !== undefined && (!Number.isInteger(retryMaxMs) || retryMaxMs < 1))
    throw new Error(`--retry-max-ms must be a whole number of ms above 0. ${usage}`);
  const host = values.host ?? "127.0.0.1";
  checkBind("--host", host);
  const credential = readWorkerCredential(values["identity-keys-file"]);
  // the credential leaves the environment: every case, check and tool this worker starts inherits
  // it, and a tool's output (`env`) is journaled and lands in reports
  delete process.env[IDENTITY_KEYS_ENV];
  let setups: RunSetups = builtIn?.setups ?? {};
  if (values.setups !== undefined) {
    const loaded = (await import(pathToFileURL(path.resolve(values.setups)).href)) as { setups?: RunSetups };
    if (loaded.setups === undefined || typeof loaded.setups !== "object") {
      throw new Error(`${values.setups} exports no \`setups\` object (name → RunSetup). ${usage}`);
    }
    setups = loaded.setups;
  }
  const ownTmp = values.tmpdir === undefined ? mkdtempSync(path.join(tmpdir(), "pi-course-worker-")) : undefined;
  if (values.tmpdir !== undefined) {
    // one the worker is alone in: another user's, or one others may write, would let them swap
    // a case's workspace or plant links where tools write
    mkdirSync(values.tmpdir, { recursive: true, mode: 0o700 });
    await guardFolder(values.tmpdir, WORKER_TMPDIR);
  }
  process.env.TMPDIR = ownTmp ?? path.resolve(values.tmpdir!);
  const version =
    values.version ??
    codeVersion([process.argv[1], values.setups === undefined ? undefined : path.resolve(values.setups)]);
  const worker = await startWorker({
    ...credential,
    setups,
    cases,
    port,
    host,
    version,
    suites: (values.suites ?? "").split(",").filter((dir) => dir !== ""),
    ...(retryMaxMs !== undefined && { retry: { maxIntervalMs: retryMaxMs } }),
  }).catch((error: unknown) => {
    if (ownTmp !== undefined) rmSync(ownTmp, { recursive: true, force: true });
    if ((error as { code?: string }).code !== "EADDRINUSE") throw error;
    throw new Error(
      `the worker's port ${host}:${port} is taken by another program. If it is another worker, this one is not needed there; ` +
        "if it is not, it gets no run (the engine's proxy sends runs only to listeners that prove they hold the workers' secret), " +
        "but this worker cannot serve either: free the port, or give --port one the engine's --workers names.",
    );
  });
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    const exit = () => {
      if (ownTmp !== undefined) rmSync(ownTmp, { recursive: true, force: true });
      process.exit(0);
    };
    setTimeout(exit, graceMs + 1000).unref(); // whatever still holds the server
    void worker.close(graceMs).then(exit);
  };
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
  if (values["stop-with-stdin"]) {
    process.stdin.once("end", stop);
    process.stdin.once("close", stop);
    process.stdin.on("error", stop);
    process.stdin.resume();
  }
  process.stdout.write(`worker ${process.pid} listening on ${worker.url} (version ${version})\n`);
}

function parse(args: string[]) {
  return parseArgs({
    args,
    options: {
      setups: { type: "string" },
      cases: { type: "string" },
      port: { type: "string" },
      host: { type: "string" },
      tmpdir: { type: "string" },
      "grace-ms": { type: "string" },
      "identity-keys-file": { type: "string" },
      suites: { type: "string" },
      version: { type: "string" },
      "retry-max-ms": { type: "string" },
      "stop-with-stdin": { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  });
}
