/**
 * A TypeScript script the tests start as a child process (`node <file>`), bundled by esbuild.
 *
 * Contract: `bundledScript(entry)` returns the path of one ESM file that holds `entry` (a `.ts` or
 * `.mts` file) and everything it imports but the package's dependencies (`yaml`, `jiti`, `quickjs-wasi`),
 * which it loads by name as the published bundle does (built-cli.ts's `BUNDLE_OPTIONS`). The file
 * sits in the package's `.test-build/scripts/` (ignored by git), so that those names resolve as
 * they do for the sources, and is named by a hash of its content: a test process bundles each
 * entry once, processes that bundle the same code share one file, and a changed source gives a
 * new one. The child is one plain `node` process, as under tsx: a SIGKILL ends all of it.
 *
 * Why: under tsx every start of such a child paid for a TypeScript loader and for opening the
 * library's modules one by one (1.3 s of CPU for a script that imports `src/index.ts`, 0.2 s
 * bundled); the bundle costs about 0.1 s once.
 */
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { buildSync } from "esbuild";
import { BUNDLE_OPTIONS } from "./built-cli.js";

const PACKAGE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const SCRIPTS = path.join(PACKAGE, ".test-build", "scripts");
/** A bundle older than this is removed when a new one is made. */
const STALE_MS = 60 * 60 * 1000;

const made = new Map<string, string>();

/** The bundle of `entry` (an absolute path, or relative to the working folder), made on first use. */
export function bundledScript(entry: string): string {
  const full = path.resolve(entry);
  let file = made.get(full);
  if (file === undefined) {
    const [output] = buildSync({ ...BUNDLE_OPTIONS, entryPoints: [full], write: false, outdir: SCRIPTS }).outputFiles!;
    const hash = createHash("sha256").update(output!.contents).digest("hex").slice(0, 16);
    file = path.join(SCRIPTS, `${path.parse(full).name}-${hash}.mjs`);
    if (exists(file)) {
      // in use again: not stale for the processes that remove stale bundles
      const now = new Date();
      utimesSync(file, now, now);
    } else {
      mkdirSync(SCRIPTS, { recursive: true });
      removeStale();
      // written whole under a name of its own, then renamed: a reader never sees half a file
      const staging = `${file}.${process.pid}-${Math.random().toString(36).slice(2)}`;
      writeFileSync(staging, output!.contents);
      renameSync(staging, file);
    }
    made.set(full, file);
  }
  return file;
}

function exists(file: string): boolean {
  try {
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

function removeStale(): void {
  for (const entry of readdirSync(SCRIPTS)) {
    const full = path.join(SCRIPTS, entry);
    try {
      if (Date.now() - statSync(full).mtimeMs > STALE_MS) rmSync(full, { force: true });
    } catch {
      // Removed by another process meanwhile.
    }
  }
}
