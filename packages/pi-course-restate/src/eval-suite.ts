/**
 * A suite on the engine: every case × repeat handed to the engine as an `EvalRun` workflow, any
 * number of workers taking them; then the same report as `pi-course eval` (chapter 14's
 * `buildSuiteReport`, `report.json`, `report.html`, each run's session file under `sessions/`).
 *
 * A suite run has an id; its workflows are keyed `<id>/<case>/<repeat>`, so running the same id
 * again (after this process died, say) picks up the same runs instead of starting new ones.
 */
import { randomUUID } from "node:crypto";
import { existsSync, readdirSync } from "node:fs";
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  buildSuiteReport,
  loadSuite,
  type RunRecord,
  readTranscripts,
  renderHtmlReport,
  type SuiteReport,
  suiteExitCode,
} from "@pi/course";
import { attach } from "./attach.js";
import { type EngineConnection, engineFetch } from "./engine-client.js";
import { EVAL_RUN, type EngineModelServer, type EvalRunInput, type EvalRunOutput } from "./eval-run.js";
import { secretField, secretInJournal } from "./journal-guard.js";

export interface EngineEvalOptions {
  /** The suite's folder. */
  suite: string;
  /** The engine (its gate's URL and credential: `readConnection`). */
  engine: EngineConnection;
  /** Runs per case (default 1). */
  repeat?: number;
  /** Where the reports go (default: a new temporary folder); must be new or empty. */
  out?: string;
  /** The suite run's id (default: a new one); the same id resumes the same runs. */
  runId?: string;
  /** Hears each finished run. */
  onDone?: (record: RunRecord) => void;
  /** The model server (default: offline, each case's script); its key stays with the workers. */
  server?: EngineModelServer;
}

export interface EngineEvalResult {
  report: SuiteReport;
  out: string;
  runId: string;
  /** As `pi-course eval`: 0 every case passed, 1 a case failed. */
  exitCode: number;
}

/** Runs `options.suite` on the engine and writes the reports. */
export async function evalOnEngine(options: EngineEvalOptions): Promise<EngineEvalResult> {
  const secret = secretField(options.server, "server");
  if (secret !== undefined) throw new Error(`suite not submitted: ${secretInJournal(secret)}`);
  const suite = path.resolve(options.suite);
  const cases = await loadSuite(suite);
  const repeat = options.repeat ?? 1;
  if (options.out !== undefined && existsSync(options.out) && readdirSync(options.out).length > 0) {
    throw new Error(`--out ${options.out} is not empty; name a new or empty folder (reports are never overwritten).`);
  }
  const out = path.resolve(options.out ?? (await mkdtemp(path.join(tmpdir(), "pi-course-eval-"))));
  await mkdir(out, { recursive: true });
  const runId = options.runId ?? randomUUID();
  const startedAt = new Date();
  const jobs = cases.flatMap((evalCase) => Array.from({ length: repeat }, (_, i) => ({ evalCase, repeat: i })));
  const records = await Promise.all(
    jobs.map(async ({ evalCase, repeat: index }) => {
      const key = encodeURIComponent(`${runId}/${evalCase.name}/${index}`);
      const input: EvalRunInput = {
        caseDir: path.resolve(evalCase.dir),
        repeat: index,
        ...(options.server !== undefined && { server: options.server }),
      };
      const sent = await engineFetch(options.engine, `/${EVAL_RUN}/${key}/run/send`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(input),
      });
      if (!sent.ok)
        throw new Error(`the engine refused ${evalCase.name} #${index} (${sent.status}): ${await sent.text()}`);
      await sent.arrayBuffer();
      // a queued case can wait longer than fetch waits for headers: attach retries
      const done = await attach(`${options.engine.url}/restate/workflow/${EVAL_RUN}/${key}/attach`, {
        token: options.engine.token,
      });
      const text = done.text;
      if (!done.ok) throw new Error(`${evalCase.name} #${index} failed on the engine (${done.status}): ${text}`);
      const { record, session } = JSON.parse(text) as EvalRunOutput;
      if (session !== undefined) {
        const file = path.join(out, "sessions", evalCase.name, `${index}.jsonl`);
        await mkdir(path.dirname(file), { recursive: true });
        await writeFile(file, session);
        record.sessionFile = file;
      }
      options.onDone?.(record);
      return record;
    }),
  );
  const report = buildSuiteReport(
    {
      suite: options.suite,
      model:
        options.server === undefined
          ? "scripted (offline, each case's script.json)"
          : `${options.server.model} at ${options.server.baseUrl ?? "https://api.anthropic.com"} (through the engine)`,
      startedAt,
      finishedAt: new Date(),
      // every run is handed to the engine at once; each worker's own limit decides how many run together
      concurrency: jobs.length,
      repeat,
      interrupted: false,
      cases: cases.map((c) => ({ name: c.name, tags: c.settings.tags, minPassRate: c.settings.minPassRate })),
    },
    records,
  );
  await writeFile(path.join(out, "report.json"), `${JSON.stringify(report, null, 2)}\n`);
  await writeFile(path.join(out, "report.html"), renderHtmlReport(report, await readTranscripts(report)));
  return { report, out, runId, exitCode: suiteExitCode(report) };
}
