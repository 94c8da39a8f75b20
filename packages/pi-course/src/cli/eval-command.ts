/**
 * Chapter 14: `pi-course eval SUITE` (`npm run eval -- SUITE` at the root).
 *
 * Reads the suite (eval/case-format.ts), then runs every case `--repeat` times, `--concurrency`
 * runs at once, each in a process of its own (eval-worker.ts) with a fresh temporary run folder,
 * against the configured model: offline each case's script, or the server named as for
 * `npm start` (`--base-url`, `--model`, `--provider`, the key options, the config file and the
 * environment, read by the same `parseArgs`). A progress line on stderr while it runs; then the
 * summary on stdout and the reports in `--out DIR` (default: a new temporary folder, printed at
 * the start): `report.json`, `report.html`, and each run's session file under `sessions/`.
 *
 * Exit code: 0 every case passed, 1 a case failed, 2 a usage or suite error, 130 Ctrl-C (the
 * runs that had finished are reported, the running ones as interrupted).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { killGroup } from "../coding-tools/processes.js";
import { CaseFormatError, loadSuite, type EvalCase } from "../eval/case-format.js";
import { readTranscripts, renderHtmlReport } from "../eval/html-report.js";
import { runPool } from "../eval/run-pool.js";
import type { RunRecord } from "../eval/run-record.js";
import { buildSuiteReport, formatSummary, suiteExitCode } from "../eval/suite-report.js";
import { CliUsageError, parseArgs, serverRoute } from "./args.js";
import { readConfigFile, resolveSettings } from "./settings.js";
import type { EvalServer } from "./eval-wiring.js";
import type { EvalJob } from "./eval-worker.js";
import { startTimer, userDuration } from "../base/timer.js";
import { ENGINE_HELP, engineKeyFlags, evalOnEngineCommand } from "./features/eval-engine.js";

export const EVAL_HELP = `pi-course eval SUITE [options]   run an agent on a suite of cases and report

A case is a folder: task.md (the prompt), files/ (the starting workspace), check (an executable
run in the workspace afterwards: exit 0 passes), optional case.json (timeLimitSeconds, maxTurns,
checkTimeLimitSeconds, minPassRate, model {id}, tags) and script.json (the scripted model that
plays it offline). A suite is a folder of cases.

  --concurrency N   runs at once, each in its own process (default 2)
  --repeat K        runs per case; the report gives pass rates (default 1)
  --out DIR         where report.json, report.html and the session files go
                    (default: a new temporary folder, printed)
  --keep            keep each run's folder (workspace, session) in --out/runs
  --base-url URL, --model NAME, --provider P, --api-key-env NAME, --api-key-file PATH,
  --no-api-key, --config FILE
                    the model, as for npm start (default: each case's script, offline)
${ENGINE_HELP}
Exit code: 0 every case passed, 1 a case failed, 2 usage, 130 stopped by Ctrl-C.
`;

/** Where the command writes (main.ts's `CliIO` fits it). */
export interface EvalIO {
  stdout: { write(text: string): unknown; isTTY?: boolean };
  stderr: { write(text: string): unknown; isTTY?: boolean };
  env: NodeJS.ProcessEnv;
}

/** `pi-course eval`'s options. */
export interface EvalOptions {
  suite: string;
  concurrency: number;
  repeat: number;
  out?: string;
  keep: boolean;
  server?: EvalServer;
  /** `--engine DIR`: the runs go to a durable engine, its credential read from DIR (features/eval-engine.ts). */
  engine?: string;
}

const MODEL_FLAGS_WITH_VALUE = ["--base-url", "--model", "--provider", "--api-key-env", "--api-key-file", "--config"];

/** Parses `argv` (after `eval`); throws `CliUsageError`. Returns "help" for --help. */
export function parseEvalArgs(argv: readonly string[], env: NodeJS.ProcessEnv): EvalOptions | "help" {
  const from = env.INIT_CWD ?? process.cwd();
  const positional: string[] = [];
  const modelFlags: string[] = [];
  let concurrency = 2;
  let repeat = 1;
  let out: string | undefined;
  let keep = false;
  let engine: string | undefined;
  const count = (flag: string, text: string | undefined, max: number): number => {
    if (text === undefined || !/^[0-9]+$/.test(text) || Number(text) < 1 || Number(text) > max) {
      throw new CliUsageError(
        `${flag} needs a whole number from 1 to ${max}, got ${text === undefined ? "nothing" : JSON.stringify(text)}.`,
      );
    }
    return Number(text);
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "-h" || arg === "--help") return "help";
    else if (arg === "--concurrency") concurrency = count(arg, argv[++i], 64);
    else if (arg === "--repeat") repeat = count(arg, argv[++i], 1000);
    else if (arg === "--keep") keep = true;
    else if (arg === "--engine") {
      engine = argv[++i];
      if (engine === undefined || engine.startsWith("-")) {
        throw new CliUsageError("--engine needs the engine's folder (its --dir, or its client.json).");
      }
    } else if (arg === "--out") {
      out = argv[++i];
      if (out === undefined || out === "") throw new CliUsageError("--out needs a folder.");
      out = path.resolve(from, out);
    } else if (MODEL_FLAGS_WITH_VALUE.includes(arg)) {
      const value = argv[++i];
      if (value === undefined) throw new CliUsageError(`${arg} needs a value.`);
      modelFlags.push(arg, value);
    } else if (arg === "--no-api-key") modelFlags.push(arg);
    else if (arg.startsWith("-")) throw new CliUsageError(`unknown option ${arg} for eval.`);
    else positional.push(arg);
  }
  if (positional.length !== 1) {
    throw new CliUsageError(
      positional.length === 0
        ? "name the suite: pi-course eval SUITE (a folder of cases)."
        : `give one suite, got ${positional.join(", ")}.`,
    );
  }
  const suite = path.resolve(from, positional[0]!);
  // The model comes from the same settings as npm start's: flags, environment, config file.
  const at = (flag: string) => (modelFlags.includes(flag) ? modelFlags[modelFlags.indexOf(flag) + 1] : undefined);
  let file = {};
  try {
    const config = at("--config");
    file = readConfigFile(env, config === undefined ? undefined : path.resolve(from, config)).settings;
  } catch {
    // parseArgs below reports it.
  }
  const named = resolveSettings({ baseUrl: at("--base-url"), provider: at("--provider") }, env, file);
  let onServer = named.baseUrl !== undefined || named.provider?.value === "anthropic";
  // A feature may pick the server too (a catalogue name alone, see serverRoute).
  try {
    const model = resolveSettings({ model: at("--model") }, env, file).model;
    onServer ||= serverRoute({ ...named, ...(model !== undefined && { model }) }, env) !== undefined;
  } catch {
    // parseArgs below reports a file a feature cannot use.
  }
  // On the engine the workers hold the key: it is not read here (their variable is what travels).
  const { flags, keyVariable } =
    engine !== undefined && onServer ? engineKeyFlags(modelFlags) : { flags: modelFlags, keyVariable: undefined };
  const parsed = parseArgs(
    [...flags, "--no-session", "--print", ...(onServer ? ["--cwd", tmpdir(), "eval"] : [])],
    env,
    false,
  );
  if (parsed.kind !== "run") return "help";
  let server: EvalServer | undefined;
  if (parsed.server !== undefined) {
    const { workspace: _unused, ...rest } = parsed.server;
    server = { ...rest, ...(keyVariable !== undefined && { apiKeyEnv: keyVariable }) };
  }
  return {
    suite,
    concurrency,
    repeat,
    keep,
    ...(out !== undefined && { out }),
    ...(server !== undefined && { server }),
    ...(engine !== undefined && { engine }),
  };
}

/** The worker script beside this file (.ts under tsx, .js once built). */
function workerPath(): string {
  const here = fileURLToPath(import.meta.url);
  return path.join(path.dirname(here), `eval-worker${path.extname(here)}`);
}

/** Runs the eval command; resolves with the exit code. */
export async function runEval(argv: readonly string[], io: EvalIO, signal?: AbortSignal): Promise<number> {
  let options: EvalOptions | "help";
  let cases: EvalCase[];
  try {
    options = parseEvalArgs(argv, io.env);
    if (options === "help") {
      io.stdout.write(EVAL_HELP);
      return 0;
    }
    cases = await loadSuite(options.suite);
    if (options.out !== undefined && existsSync(options.out) && readdirSync(options.out).length > 0) {
      throw new CliUsageError(
        `--out ${options.out} is not empty; name a new or empty folder (reports are never overwritten).`,
      );
    }
  } catch (error) {
    if (!(error instanceof CliUsageError || error instanceof CaseFormatError)) throw error;
    io.stderr.write(`error: ${error.message}\nRun \`pi-course eval --help\` for the options.\n`);
    return 2;
  }
  if (options.engine !== undefined) return evalOnEngineCommand({ ...options, engine: options.engine }, io);
  const out = options.out ?? (await mkdtemp(path.join(tmpdir(), "pi-course-eval-")));
  await mkdir(out, { recursive: true });
  const scratch = await mkdtemp(path.join(tmpdir(), "pi-course-eval-runs-"));
  const modelName =
    options.server === undefined
      ? "scripted (offline, each case's script.json)"
      : `${options.server.model} at ${options.server.baseUrl ?? "https://api.anthropic.com"}`;
  io.stderr.write(
    `eval · ${cases.length} case(s) × ${options.repeat} · ${options.concurrency} at once · model: ${modelName}\nreports: ${out}\n`,
  );

  const jobs = cases.flatMap((evalCase) =>
    Array.from({ length: options.repeat }, (_, repeat) => ({ evalCase, repeat })),
  );
  const children = new Set<ChildProcess>();
  const killAll = () => {
    for (const child of children) killGroup(child.pid!);
  };
  process.on("exit", killAll);
  const tty = io.stdout.isTTY === true && io.stderr.isTTY === true;
  let done = 0;
  let running = 0;
  const tally = { passed: 0, failed: 0 };
  // One line per finished run; on a terminal, below them, a status line rewritten in place.
  const status = () =>
    `[${done}/${jobs.length}] running ${running} · passed ${tally.passed} · not passed ${tally.failed}`;
  const startedAt = new Date();
  const records = await runPool(
    jobs,
    options.concurrency,
    (job, stop) => runInWorker(job.evalCase, job.repeat, options as EvalOptions, out, scratch, stop, children),
    {
      ...(signal !== undefined && { signal }),
      onStart: () => {
        running++;
        if (tty) io.stderr.write(`\r\x1b[2K${status()}`);
      },
      onDone: (record) => {
        running--;
        done++;
        if (record.status === "passed") tally.passed++;
        else tally.failed++;
        const what = record.status === "passed" ? "PASS" : record.status.toUpperCase();
        const line = `[${done}/${jobs.length}] ${what} ${record.case} #${record.repeat} (${(record.wallMs / 1000).toFixed(1)} s)${record.reason ? `: ${record.reason}` : ""}`;
        io.stderr.write(tty ? `\r\x1b[2K${line}\n${status()}` : `${line}\n`);
      },
    },
  );
  process.off("exit", killAll);
  if (tty) io.stderr.write("\r\x1b[2K");
  const report = buildSuiteReport(
    {
      suite: options.suite,
      model: modelName,
      startedAt,
      finishedAt: new Date(),
      concurrency: options.concurrency,
      repeat: options.repeat,
      interrupted: signal?.aborted === true,
      cases: cases.map((c) => ({ name: c.name, tags: c.settings.tags, minPassRate: c.settings.minPassRate })),
    },
    records,
  );
  await writeFile(path.join(out, "report.json"), `${JSON.stringify(report, null, 2)}\n`);
  await writeFile(path.join(out, "report.html"), renderHtmlReport(report, await readTranscripts(report)));
  if (!options.keep) await rm(scratch, { recursive: true, force: true });
  io.stdout.write(formatSummary(report));
  io.stdout.write(`report: ${path.join(out, "report.html")}\njson:   ${path.join(out, "report.json")}\n`);
  if (options.keep) io.stdout.write(`runs:   ${scratch}\n`);
  return suiteExitCode(report);
}

/** One run in a worker process; an infrastructure record when the worker fails. */
async function runInWorker(
  evalCase: EvalCase,
  repeat: number,
  options: EvalOptions,
  out: string,
  scratch: string,
  stop: AbortSignal,
  children: Set<ChildProcess>,
): Promise<RunRecord> {
  const id = `${evalCase.name}-${repeat}`;
  const job: EvalJob = {
    caseDir: evalCase.dir,
    repeat,
    runRoot: path.join(scratch, id),
    resultFile: path.join(scratch, `${id}.result.json`),
    keepSessionAs: path.join(out, "sessions", evalCase.name, `${repeat}.jsonl`),
    ...(options.server !== undefined && { server: options.server }),
  };
  const started = Date.now();
  // Its own process group: a Ctrl-C on the terminal reaches this process, which passes it on.
  const child = spawn(process.execPath, [...process.execArgv, workerPath()], {
    detached: true,
    stdio: ["pipe", "ignore", "pipe"],
  });
  children.add(child);
  let stderr = "";
  child.stderr!.on("data", (data: Buffer) => (stderr = (stderr + data.toString("utf8")).slice(-4000)));
  child.stdin!.on("error", () => {});
  child.stdin!.end(`${JSON.stringify(job)}\n`);
  const interrupt = () => child.kill("SIGINT");
  stop.addEventListener("abort", interrupt, { once: true });
  // The worker owns the run's limits; this is the backstop for a worker that hangs.
  const limitSeconds = evalCase.settings.timeLimitSeconds + evalCase.settings.checkTimeLimitSeconds + 60;
  let hung = false;
  const timer = startTimer(
    () => {
      hung = true;
      killGroup(child.pid!);
    },
    userDuration(limitSeconds, "the case's time limits", "s"),
  );
  const exit = await new Promise<{ code: number | null; signal: string | null; error?: Error }>((resolve) => {
    child.on("error", (error) => resolve({ code: null, signal: null, error }));
    child.on("close", (code, sig) => resolve({ code, signal: sig }));
  });
  clearTimeout(timer);
  stop.removeEventListener("abort", interrupt);
  children.delete(child);
  const text = await readFile(job.resultFile, "utf8").catch(() => undefined);
  if (text !== undefined) return JSON.parse(text) as RunRecord;
  const why =
    exit.error !== undefined
      ? `the worker could not start: ${exit.error.message}`
      : hung
        ? `the worker did not finish within ${limitSeconds} s and was killed`
        : `the worker ended (${exit.signal ?? `exit code ${exit.code}`}) without a result${stderr.trim() ? `: ${stderr.trim().split("\n").slice(-3).join(" / ")}` : ""}`;
  return {
    case: evalCase.name,
    repeat,
    status: stop.aborted ? "interrupted" : "infrastructure",
    phase: "prepare",
    reason: why,
    protocolProblems: [],
    model: "?",
    turns: 0,
    tokens: { input: 0, output: 0, total: 0 },
    cost: null,
    startedAt: new Date(started).toISOString(),
    wallMs: Date.now() - started,
    notes: [],
  };
}
