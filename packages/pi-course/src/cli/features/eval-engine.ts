/**
 * `pi-course eval SUITE --engine DIR`: the suite's runs handed to a durable engine (the
 * `@pi/course-restate` package, installed beside this one) instead of this machine's processes.
 * Any number of workers take the cases; the reports are the same (`report.json`, `report.html`,
 * each run's session file), and so is the exit code. DIR is the engine's folder (or its
 * `client.json`): its address and the token its gate wants.
 *
 * Against a model server, the run names the server and the model, never the key: the workers read
 * it from their own environment (the provider's variable, or the one `--api-key-env` names), so it
 * is in no journal of the engine. A key given here (`--api-key-file`) is refused.
 *
 * The engine package is loaded by name at run time, so this package does not depend on it.
 */
import { formatSummary } from "../../eval/suite-report.js";
import type { RunRecord } from "../../eval/run-record.js";
import type { SuiteReport } from "../../eval/suite-report.js";
import type { EvalServer } from "../eval-wiring.js";
import { CliUsageError } from "../usage-error.js";

/** The package that runs suites on the engine. */
const ENGINE_PACKAGE = "@pi/course-restate";

export const ENGINE_HELP = `  --engine DIR      hand the runs to a durable engine (the @pi/course-restate package): DIR is
                    its --dir or its client.json; its workers run them and hold the model's
                    key (--api-key-env names their variable)
`;

/**
 * The model flags the eval command parses with `--engine` against a server: no key is read here
 * (`--no-api-key`), and `--api-key-env NAME` is kept aside as the workers' variable. Throws
 * `CliUsageError` for `--api-key-file` (a key this process would hold).
 */
export function engineKeyFlags(modelFlags: readonly string[]): { flags: string[]; keyVariable: string | undefined } {
  if (modelFlags.includes("--api-key-file")) {
    throw new CliUsageError(
      "with --engine the workers hold the model's key: start them with it in their environment and name the variable with --api-key-env, not --api-key-file.",
    );
  }
  const at = modelFlags.indexOf("--api-key-env");
  const named = (i: number) => at !== -1 && (i === at || i === at + 1);
  const flags = modelFlags.filter((flag, i) => !named(i) && flag !== "--no-api-key");
  return { flags: [...flags, "--no-api-key"], keyVariable: at === -1 ? undefined : modelFlags[at + 1] };
}

/** An engine's address and credential (`@pi/course-restate`'s `readConnection`). */
interface EngineConnection {
  url: string;
  token: string;
}

/** The part of `@pi/course-restate` this uses. */
interface EnginePackage {
  readConnection(where: string): Promise<EngineConnection>;
  evalOnEngine(options: {
    suite: string;
    engine: EngineConnection;
    repeat?: number;
    out?: string;
    onDone?: (record: RunRecord) => void;
    server?: { provider: EvalServer["provider"]; baseUrl?: string; model: string; apiKeyEnv?: string };
  }): Promise<{ report: SuiteReport; out: string; runId: string; exitCode: number }>;
}

interface EngineEvalIO {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
}

/** Runs the suite on the engine at `engine`; resolves with the exit code (2: the engine package is missing). */
export async function evalOnEngineCommand(
  options: { suite: string; repeat: number; out?: string; server?: EvalServer; engine: string },
  io: EngineEvalIO,
): Promise<number> {
  let engine: EnginePackage;
  try {
    const name = ENGINE_PACKAGE; // by name at run time: no dependency of this package
    engine = (await import(name)) as EnginePackage;
  } catch (error) {
    if ((error as { code?: string }).code !== "ERR_MODULE_NOT_FOUND") throw error;
    io.stderr.write(`error: --engine needs ${ENGINE_PACKAGE}: npm install ${ENGINE_PACKAGE}\n`);
    return 2;
  }
  const server = options.server;
  let connection: EngineConnection;
  try {
    connection = await engine.readConnection(options.engine);
  } catch (error) {
    io.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
  io.stderr.write(
    `eval · on the engine at ${connection.url} · model: ${server === undefined ? "scripted (offline, each case's script.json)" : `${server.model} (the workers' key)`}\n`,
  );
  let done = 0;
  try {
    const result = await engine.evalOnEngine({
      suite: options.suite,
      engine: connection,
      repeat: options.repeat,
      ...(options.out !== undefined && { out: options.out }),
      ...(server !== undefined && {
        server: {
          provider: server.provider,
          model: server.model,
          ...(server.baseUrl !== undefined && { baseUrl: server.baseUrl }),
          ...(server.apiKeyEnv !== undefined && { apiKeyEnv: server.apiKeyEnv }),
        },
      }),
      onDone: (record) => {
        const what = record.status === "passed" ? "PASS" : record.status.toUpperCase();
        io.stderr.write(
          `[${++done}] ${what} ${record.case} #${record.repeat}${record.reason ? `: ${record.reason}` : ""}\n`,
        );
      },
    });
    io.stdout.write(formatSummary(result.report));
    io.stdout.write(
      `report: ${result.out}/report.html\njson:   ${result.out}/report.json\nsuite run: ${result.runId}\n`,
    );
    return result.exitCode;
  } catch (error) {
    io.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}
