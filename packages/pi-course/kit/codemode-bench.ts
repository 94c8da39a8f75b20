/**
 * Chapter 16's bench, run where the learner is: `npm run bench` in a practice folder of chapter 16
 * (the folder's own `src/`, so it times YOUR sandbox), or `npx tsx kit/codemode-bench.ts` in the
 * repository (packages/pi-course). It times `CodeSandbox` against `@earendil-works/pi-codemode`
 * 1.6.0's `CodemodeSandbox` (the version `bench/` pins), both running QuickJS in a worker
 * thread, on the same no-op tool: one script with 1 nested call, and one with 100.
 *
 * pi-codemode is installed on first use (as `npm run bench` at the repository root does), into
 * `node_modules/.cache/pi-codemode-1.6.0/` of the folder: not a dependency of the folder, and gone
 * with `node_modules`. pi-codemode declares Node >= 22 but runs on 20.
 *
 * Each line gives the median wall time and the median CPU time of a run (user + system of the
 * whole process, the worker threads included). On a busy machine wall time swings with other
 * processes; CPU time barely does, so read the ratio from the CPU column there. The reference
 * sandbox keeps one warm worker and gives each script a fresh VM; pi starts a worker per script,
 * so ours is many times faster on short scripts. Start a worker per script in yours (the break-it
 * step of the guide) and watch the ratio fall to a few times.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { CodeSandbox } from "../src/index.js";

const PI_CODEMODE = "@earendil-works/pi-codemode";
const VERSION = "1.6.0";
const RUNS = Number(process.env.BENCH_RUNS ?? 15);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 3);

const ONE = "return await tools.noop({ i: 0 });";
const HUNDRED = "let last;\nfor (let i = 0; i < 100; i++) last = await tools.noop({ i });\nreturn last;";

/** The part of pi-codemode's API this bench uses. */
interface PiSandbox {
  execute(code: string): Promise<{ ok: true; value: unknown } | { ok: false; error: { message: string } }>;
  close(): Promise<void>;
}
type PiSandboxClass = new (options: {
  timeoutMs: number;
  tools: { name: string; execute: () => Promise<string> }[];
}) => PiSandbox;

/** Loads pi-codemode, installing it into the folder's node_modules/.cache the first time. */
async function loadPiCodemode(): Promise<PiSandboxClass> {
  const folder = fileURLToPath(new URL("..", import.meta.url));
  const dir = join(folder, "node_modules", ".cache", `pi-codemode-${VERSION}`);
  if (!existsSync(join(dir, "node_modules", PI_CODEMODE, "package.json"))) {
    console.log(`bench: installing ${PI_CODEMODE}@${VERSION} into ${dir} (first run only)…`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "package.json"), '{ "private": true }\n');
    const npm = process.platform === "win32" ? "npm.cmd" : "npm";
    execFileSync(
      npm,
      ["install", "--no-audit", "--no-fund", "--ignore-scripts", "--no-package-lock", `${PI_CODEMODE}@${VERSION}`],
      { cwd: dir, stdio: "inherit" },
    );
  }
  // an ESM-only package (its exports have `import`, no `require`): its entry read from its package.json
  const home = join(dir, "node_modules", PI_CODEMODE);
  const manifest = JSON.parse(readFileSync(join(home, "package.json"), "utf8")) as {
    exports: { ".": { import: string } };
  };
  const entry = join(home, manifest.exports["."].import);
  const loaded = (await import(pathToFileURL(entry).href)) as { CodemodeSandbox: PiSandboxClass };
  return loaded.CodemodeSandbox;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Warms each case up, then times them round-robin; the median wall and CPU milliseconds of each. */
async function measure(cases: { name: string; run: () => Promise<unknown> }[]) {
  for (let i = 0; i < WARMUP; i++) for (const c of cases) await c.run();
  const wall = cases.map(() => [] as number[]);
  const cpu = cases.map(() => [] as number[]);
  for (let i = 0; i < RUNS; i++) {
    for (const [k, c] of cases.entries()) {
      const cpu0 = process.cpuUsage();
      const start = performance.now();
      await c.run();
      wall[k]!.push(performance.now() - start);
      const used = process.cpuUsage(cpu0);
      cpu[k]!.push((used.user + used.system) / 1000);
    }
  }
  return cases.map((c, k) => ({ name: c.name, wall: median(wall[k]!), cpu: median(cpu[k]!) }));
}

const CodemodeSandbox = await loadPiCodemode();
const ours = new CodeSandbox();
const pi = new CodemodeSandbox({ timeoutMs: 60_000, tools: [{ name: "noop", execute: async () => "ok" }] });
try {
  const oursRun = async (code: string) => {
    const outcome = await ours.run({ code, tools: ["noop"], callTool: async () => ({ text: "ok", isError: false }) });
    if (!outcome.ok) throw new Error(`your sandbox failed: ${outcome.error?.message}`);
    return outcome.value;
  };
  const piRun = async (code: string) => {
    const result = await pi.execute(code);
    if (!result.ok) throw new Error(`pi-codemode failed: ${result.error.message}`);
    return result.value;
  };
  console.log(`median of ${RUNS} runs after ${WARMUP} warm-up runs each (BENCH_RUNS, BENCH_WARMUP)`);
  for (const [label, code] of [
    ["1 nested call", ONE],
    ["100 nested calls", HUNDRED],
  ] as const) {
    const [mine, theirs] = await measure([
      { name: "ours", run: () => oursRun(code) },
      { name: `pi-codemode ${VERSION}`, run: () => piRun(code) },
    ]);
    console.log(`\none script with ${label} to a no-op tool`);
    for (const r of [mine!, theirs!])
      console.log(
        `  ${r.name.padEnd(18)} wall ${r.wall.toFixed(2).padStart(8)} ms   cpu ${r.cpu.toFixed(2).padStart(8)} ms`,
      );
    console.log(
      `  pi-codemode / ours: wall ${(theirs!.wall / mine!.wall).toFixed(2)}x   cpu ${(theirs!.cpu / mine!.cpu).toFixed(2)}x`,
    );
  }
} finally {
  await Promise.all([ours.close(), pi.close()]);
}
