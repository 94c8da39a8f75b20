#!/usr/bin/env node
// Runs the side-by-side benchmarks: installs bench/ on first use and after its lockfile changes,
// builds @pi/course, typechecks bench/, then runs every bench/*.bench.ts (or those whose name
// contains one of the arguments), one process each.
//   npm run bench                 all of them
//   npm run bench -- event-stream only the matching ones
//   BENCH_BASELINE=<copy of packages/pi-course/dist>/index.js npm run bench -- agent
//                                 the agent benches also time that build of @pi/course, in the same run
//   BENCH_GC=full|minor           the collection before every timed run (see harness.ts)
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..");

function run(command, args, cwd) {
  const result = spawnSync(command, args, { cwd, stdio: "inherit" });
  if (result.status !== 0) {
    console.error(`bench: \`${command} ${args.join(" ")}\` failed in ${cwd}`);
    process.exit(result.status ?? 1);
  }
}

// npm ci when bench/ was never installed, or when its lockfile changed since the last install
// (npm writes node_modules/.package-lock.json at the end of every install).
const installed = join(here, "node_modules", ".package-lock.json");
const lockfile = join(here, "package-lock.json");
const why =
  !existsSync(join(here, "node_modules", "@earendil-works", "pi-ai")) || !existsSync(installed)
    ? "first run"
    : statSync(lockfile).mtimeMs > statSync(installed).mtimeMs
      ? "bench/package-lock.json changed since the last install"
      : undefined;
if (why) {
  console.log(`bench: installing the upstream packages (${why})…`);
  run("npm", ["ci", "--no-audit", "--no-fund"], here);
}
run("npm", ["run", "build"], root);
run(
  process.execPath,
  [join(root, "node_modules", "typescript", "bin", "tsc"), "-p", join(here, "tsconfig.json")],
  here,
);

const filters = process.argv.slice(2);
const files = readdirSync(here)
  .filter((name) => name.endsWith(".bench.ts"))
  .filter((name) => filters.length === 0 || filters.some((f) => name.includes(f)))
  .sort();
if (files.length === 0) {
  console.error(`bench: no bench/*.bench.ts matches ${filters.join(", ") || "(none present)"}`);
  process.exit(1);
}
// bench/00-startup runs pi 1.6's CLI, which needs Node >= 22.19: both come from bench/pi-cli/'s
// lockfile (the Node binary is a registry package), installed there without install scripts.
if (files.some((name) => name.startsWith("00-"))) {
  const piCli = join(here, "pi-cli");
  const piInstalled = join(piCli, "node_modules", ".package-lock.json");
  if (!existsSync(piInstalled) || statSync(join(piCli, "package-lock.json")).mtimeMs > statSync(piInstalled).mtimeMs) {
    console.log("bench: installing pi 1.6's CLI and Node 22 into bench/pi-cli…");
    run("npm", ["ci", "--no-audit", "--no-fund", "--ignore-scripts"], piCli);
  }
}
const tsx = join(root, "node_modules", "tsx", "dist", "esm", "index.mjs");
for (const file of files) {
  console.log(`\n=== ${file}`);
  run(process.execPath, ["--expose-gc", "--import", tsx, join(here, file)], here);
}
