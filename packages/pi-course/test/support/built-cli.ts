/**
 * The CLI as the tests start it: the package's sources bundled by esbuild, as the published
 * `pi-course` bin runs them (`node …/cli/start.js`, scripts/bundle.ts).
 *
 * Contract: `builtStart()` returns the path of `cli/start.js` in a folder that holds the entry
 * points the published `dist/` has (`index.js`, `cli/start.js`, `cli/eval-worker.js`) bundled
 * with TypeBox, their shared code in chunks beside `start.js` in `cli/` (the eval command starts
 * `eval-worker.js` from the folder its own code is in), and the package's dependencies (`yaml`,
 * `jiti`, `quickjs-wasi`) loaded by name, as in `dist/`. What it leaves out is the published
 * bundle's stand-ins for modules loaded on first use (scripts/on-first-use.ts): they need an
 * esbuild plugin, which only the asynchronous build runs; the package test runs the published
 * bundle with them. The folder is named by a hash of the sources, so a changed source gives a new
 * build; it sits inside the package (`.test-build/`, ignored by git) so that the bundle resolves
 * the package's dependencies as the sources do. Any number of test processes may call it at once:
 * each builds into a folder of its own and renames it into place; the first rename wins.
 *
 * Why: under tsx each start of the CLI paid for a TypeScript loader in three processes (tsx's own,
 * the launcher, the agent); compiled one file for one file, each start still opened the package's
 * ~160 modules and TypeBox's ~680 (0.47 s of CPU for `--help`, where bundled it is 0.13 s), and
 * the tests start the CLI some hundreds of times.
 */
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { type BuildOptions, buildSync } from "esbuild";

const PACKAGE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const SOURCES = path.join(PACKAGE, "src");
const BUILDS = path.join(PACKAGE, ".test-build");
/** The package's dependencies: loaded by name at run time, not bundled (as in `dist/`). */
const DEPENDENCIES: Readonly<Record<string, string>> =
  JSON.parse(readFileSync(path.join(PACKAGE, "package.json"), "utf8")).dependencies ?? {};
/**
 * How the tests bundle what they start (the CLI here, scripts in bundled-script.ts): ESM for
 * node 20, the package's dependencies loaded by name, as `dist/` has them.
 */
export const BUNDLE_OPTIONS = {
  bundle: true,
  format: "esm",
  platform: "node",
  target: "node20",
  external: Object.keys(DEPENDENCIES),
  logLevel: "error",
} as const satisfies BuildOptions;

/** A build older than this, of other sources, is removed when a new one is made. */
const STALE_MS = 60 * 60 * 1000;

let built: string | undefined;

/** The compiled `cli/start.js` of the current sources (built on first use). */
export function builtStart(): string {
  built ??= build();
  return path.join(built, "cli", "start.js");
}

function sourceFiles(folder: string, into: string[] = []): string[] {
  for (const entry of readdirSync(folder, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    const full = path.join(folder, entry.name);
    if (entry.isDirectory()) sourceFiles(full, into);
    else if (entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts")) into.push(full);
  }
  return into;
}

function build(): string {
  const files = sourceFiles(SOURCES);
  const hash = createHash("sha256");
  hash.update(JSON.stringify(DEPENDENCIES)).update("\0");
  for (const file of files)
    hash.update(path.relative(SOURCES, file)).update("\0").update(readFileSync(file)).update("\0");
  const name = hash.digest("hex").slice(0, 16);
  const target = path.join(BUILDS, name);
  if (exists(target)) return target;
  const staging = path.join(BUILDS, `.staging-${process.pid}-${Math.random().toString(36).slice(2)}`);
  buildSync({
    // scripts/bundle.ts's ENTRY_POINTS (a practice folder has no scripts/ to import them from)
    entryPoints: ["index", "cli/start", "cli/eval-worker"].map((entry) => path.join(SOURCES, `${entry}.ts`)),
    ...BUNDLE_OPTIONS,
    outbase: SOURCES,
    outdir: staging,
    splitting: true,
    chunkNames: "cli/chunk-[name]-[hash]",
  });
  writeFileSync(path.join(staging, "package.json"), '{ "type": "module" }\n');
  try {
    renameSync(staging, target);
  } catch (error) {
    // Another process renamed its build into place first: the same sources, so the same files.
    rmSync(staging, { recursive: true, force: true });
    if (!exists(target)) throw error;
  }
  removeStale(name);
  return target;
}

function exists(folder: string): boolean {
  try {
    return statSync(folder).isDirectory();
  } catch {
    return false;
  }
}

function removeStale(current: string): void {
  for (const entry of readdirSync(BUILDS)) {
    // builds and their staging folders only: packs/ and scripts/ keep their own
    if (entry === current || !/^([0-9a-f]{16}|\.staging-.*)$/.test(entry)) continue;
    const full = path.join(BUILDS, entry);
    try {
      if (Date.now() - statSync(full).mtimeMs > STALE_MS) rmSync(full, { recursive: true, force: true });
    } catch {
      // Removed by another process meanwhile.
    }
  }
}
