/**
 * Eval suites across workers: the `EvalRun` workflow, one per case × repeat of a suite run.
 *
 * Its handler runs chapter 14's `runCase` as `pi-course eval` does (the CLI's runtime, the case's
 * script offline), in a fresh folder of its own, as ONE step: the whole case is the unit of retry.
 * A worker killed mid-case left no result, so the engine hands the case to another worker, which
 * runs it again from the start in a new folder (a case's workspace is the run's own, so running it
 * again is safe: half a workspace on a dead machine is nothing to resume). The step's result — the
 * run's record and its session file's text — is recorded once, so a case is never lost and never
 * counted twice: the suite reads one result per workflow.
 *
 * Offline on each case's script, or against a model server (`server`): the input names the server
 * and the model, never the key, which each worker reads from its own environment (`apiKeyEnv`, or
 * the provider's usual variable), so no key is ever in the engine's journal.
 * The case's folder must be at the same path on every worker (a shared checkout).
 *
 * A case is code (its `check` and its scripted commands run as the worker's user), so a worker runs
 * only cases inside the suite folders it was given at start (`suites`), compared as real paths with
 * every symlink resolved: a case folder anyone else made, or a link out of a suite, is refused
 * before anything of it is read.
 */
import { mkdtempSync } from "node:fs";
import { mkdtemp, readFile, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import * as restate from "@restatedev/restate-sdk";
import { caseModel, type EvalServer, loadCase, type RunRecord, runCase, runtimeWire } from "@pi/course";
import { type RetryOptions, retryPolicy } from "./agent-run.js";
import { secretField, secretInJournal } from "./journal-guard.js";

/** The workflow's name (the ingress path is `/EvalRun/<key>/run`). */
export const EVAL_RUN = "EvalRun";

/** One run of one case (plain JSON). */
export interface EvalRunInput {
  /** The case's folder, absolute, the same on every worker. */
  caseDir: string;
  repeat: number;
  /** The model server (default: offline, the case's script). No key: see `EngineModelServer`. */
  server?: EngineModelServer;
}

/**
 * A model server as a run names it through the engine: provider, address, model, and the NAME of
 * the variable the workers read the key from (default: the provider's, `OPENAI_API_KEY` or
 * `ANTHROPIC_API_KEY`). A worker without it calls the server with no key.
 */
export interface EngineModelServer {
  provider: EvalServer["provider"];
  baseUrl?: string;
  model: string;
  apiKeyEnv?: string;
}

/** What the step records: the record (without a session path: the suite places the file) and the session file's text. */
export interface EvalRunOutput {
  record: RunRecord;
  session?: string;
}

/** Lets `limit` cases run at once in this process; the rest wait their turn. */
function gate(limit: number): <T>(work: () => Promise<T>) => Promise<T> {
  let running = 0;
  const waiting: (() => void)[] = [];
  return async (work) => {
    if (running >= limit) await new Promise<void>((resolve) => waiting.push(resolve));
    running++;
    try {
      return await work();
    } finally {
      running--;
      waiting.shift()?.();
    }
  };
}

/** The real paths of `suites` (each must exist); throws naming one that does not. */
export async function suiteRoots(suites: readonly string[]): Promise<string[]> {
  return Promise.all(
    suites.map((suite) =>
      realpath(path.resolve(suite)).catch((error: Error) => {
        throw new Error(`the suite folder ${suite} cannot be used: ${error.message}`);
      }),
    ),
  );
}

/** `caseDir`'s real path, when it is inside one of `roots` (real paths); else a TerminalError saying so. */
export async function confinedCase(caseDir: string, roots: readonly string[]): Promise<string> {
  const real = await realpath(caseDir).catch(() => undefined);
  const inside = (root: string) => {
    // outside: the root itself, a path that climbs out (its first segment is exactly `..`; a
    // folder named `..foo` inside is not), or one on another root (Windows drives)
    const relative = path.relative(root, real ?? "");
    return relative !== "" && relative.split(path.sep)[0] !== ".." && !path.isAbsolute(relative);
  };
  if (real === undefined || !roots.some(inside)) {
    const known = roots.length === 0 ? "none (start it with --suites DIR)" : roots.join(", ");
    throw new restate.TerminalError(
      `EvalRun: ${caseDir} is not a case inside this worker's suite folders; it runs cases only from: ${known}`,
    );
  }
  return real;
}

/**
 * The `EvalRun` workflow; `concurrency` cases at once in this worker (default 2, as `pi-course eval`),
 * only cases inside `suites` (default none).
 */
export async function evalRunWorkflow(
  options: { concurrency?: number; suites?: readonly string[]; retry?: RetryOptions } = {},
) {
  const roots = await suiteRoots(options.suites ?? []);
  const limited = gate(options.concurrency ?? 2);
  // This worker's folder for its cases, made before it takes any: a case's protocol check watches
  // the top level of the system's temporary folder, where a folder made while it runs would count
  // as written outside its workspace. (Workers sharing a machine need a TMPDIR each, for the same
  // reason: `spawnWorker`'s `tmpdir`.)
  const casesFolder = mkdtempSync(path.join(tmpdir(), "pi-restate-cases-"));
  return restate.workflow({
    name: EVAL_RUN,
    handlers: {
      run: async (ctx: restate.WorkflowContext, input: EvalRunInput): Promise<EvalRunOutput> => {
        if (typeof input?.caseDir !== "string" || !path.isAbsolute(input.caseDir) || !Number.isInteger(input.repeat)) {
          throw new restate.TerminalError(
            "EvalRun: the input must be { caseDir: an absolute path, repeat: a whole number }",
          );
        }
        // the one guard of what a journal must not hold (journal-guard.ts): a key is named, never sent
        const secret = secretField(input.server, "server");
        if (secret !== undefined) throw new restate.TerminalError(`EvalRun: ${secretInJournal(secret)}`);
        const caseDir = await confinedCase(input.caseDir, roots);
        return limited(() => ctx.run("case", () => runOne({ ...input, caseDir }, casesFolder)));
      },
    },
    // a case waits for its turn in a busy worker without a step: more than Restate's default minute
    options: { retryPolicy: retryPolicy(options.retry), inactivityTimeout: 30 * 60_000 },
  });
}

async function runOne(input: EvalRunInput, casesFolder: string): Promise<EvalRunOutput> {
  const scratch = await mkdtemp(path.join(casesFolder, "case-"));
  try {
    const evalCase = await loadCase(input.caseDir);
    const server = withKey(input.server);
    const record = await runCase(evalCase, {
      repeat: input.repeat,
      runRoot: path.join(scratch, "run"),
      model: await caseModel(evalCase, server, input.repeat),
      wire: runtimeWire(server),
      keepSessionAs: path.join(scratch, "session.jsonl"),
    });
    const session = record.sessionFile === undefined ? undefined : await readFile(record.sessionFile, "utf8");
    const { sessionFile: _here, ...rest } = record;
    return { record: rest, ...(session !== undefined && { session }) };
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/** The variable a provider's key is read from when none is named (as `pi-course` reads it). */
const KEY_VARIABLE: Readonly<Record<EvalServer["provider"], string>> = {
  openai: "OPENAI_API_KEY",
  anthropic: "ANTHROPIC_API_KEY",
};

/** `server` with the key from this worker's environment (none if the variable is not set). */
function withKey(server: EngineModelServer | undefined): EvalServer | undefined {
  if (server === undefined) return undefined;
  const variable = server.apiKeyEnv ?? KEY_VARIABLE[server.provider];
  const apiKey = process.env[variable];
  return { ...server, ...(apiKey !== undefined && apiKey !== "" && { apiKey }) };
}
