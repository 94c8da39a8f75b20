/**
 * Runs the official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned in the
 * root package.json) against the library's client (`client.ts`), one scenario at a time, and
 * prints the table scenario → pass/fail. `npm run conformance` (all client scenarios) or
 * `npm run conformance -- auth/pre-registration auth/basic-cimd` (those). Exit code 0 when every
 * scenario ends as `EXPECTED` says (every one passes but the one the library refuses on
 * purpose), 1 otherwise. The test `mcp.conformance.test.ts` runs it too.
 *
 * On Node 20 the suite is started with `node20-register.mjs` (it imports a Node 22 `fs` export
 * for a report this runner does not use).
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { bundledScript } from "../support/bundled-script.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const suite = path.join(
  path.dirname(require.resolve("@modelcontextprotocol/conformance/package.json")),
  "dist/index.js",
);

/**
 * The scenarios that must fail, and why. `auth/2025-03-26-oauth-metadata-backcompat` serves
 * authorization server metadata whose `issuer` is not the URL it was fetched for: RFC 8414 §3.3
 * says to refuse it, and the library does.
 */
export const EXPECTED_FAILURES: Record<string, string> = {
  "auth/2025-03-26-oauth-metadata-backcompat": "RFC 8414 §3.3",
};

/** One scenario's outcome. */
export interface ScenarioResult {
  scenario: string;
  passed: boolean;
  /** Checks that failed (id: description). */
  failures: string[];
  /** What the client printed on stderr (its error, if any). */
  clientError: string;
}

/** The client scenarios of the suite (`conformance list`). */
export async function listScenarios(): Promise<string[]> {
  const { stdout } = await run(["list"]);
  const client = stdout.slice(stdout.indexOf("Client scenarios"));
  return [...client.matchAll(/^\s+- (\S+)/gm)].map((m) => m[1]!);
}

/** Runs one scenario against `client.ts`. */
export async function runScenario(scenario: string): Promise<ScenarioResult> {
  const out = mkdtempSync(path.join(tmpdir(), "pi-conformance-"));
  try {
    const command = `${process.execPath} ${bundledScript(path.join(here, "client.ts"))}`;
    const { stdout, stderr } = await run(["client", "--command", command, "--scenario", scenario, "-o", out]);
    const checks = readChecks(out);
    const failures = checks
      .filter((c) => c.status === "FAILURE")
      .map((c) => `${c.id}: ${c.errorMessage ?? c.description}`);
    const clientError = /conformance client: (.*)/.exec(stdout + stderr)?.[1] ?? "";
    return { scenario, passed: checks.length > 0 && failures.length === 0, failures, clientError };
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

function readChecks(folder: string): { id: string; status: string; description: string; errorMessage?: string }[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name === "checks.json") found.push(full);
    }
  };
  walk(folder);
  return found.flatMap((file) => JSON.parse(readFileSync(file, "utf8")));
}

function run(args: string[]): Promise<{ stdout: string; stderr: string; code: number | null }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", path.join(here, "node20-register.mjs"), suite, ...args], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.stderr.on("data", (chunk) => (stderr += chunk));
    child.on("error", reject);
    child.on("close", (code) => resolve({ stdout, stderr, code }));
  });
}

async function main(): Promise<void> {
  const wanted = process.argv.slice(2);
  const scenarios = wanted.length > 0 ? wanted : await listScenarios();
  let ok = true;
  console.log("| scenario | result | as expected |\n| --- | --- | --- |");
  for (const scenario of scenarios) {
    const result = await runScenario(scenario);
    const expected = !(scenario in EXPECTED_FAILURES);
    const asExpected = result.passed === expected;
    ok &&= asExpected;
    const why = result.passed ? "" : ` (${result.clientError || result.failures[0]})`;
    console.log(
      `| ${scenario} | ${result.passed ? "pass" : "fail"}${why.slice(0, 200)} | ${asExpected ? "yes" : "NO"} |`,
    );
  }
  process.exitCode = ok ? 0 : 1;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
