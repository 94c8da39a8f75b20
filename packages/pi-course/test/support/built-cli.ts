/**
 * The CLI as the tests start it: the package's sources compiled to JavaScript, as the published
 * `pi-course` bin runs them (`node …/cli/start.js`).
 *
 * Contract: `builtStart()` returns the path of `cli/start.js` in a folder that holds every `.ts`
 * file of `src/` compiled by TypeScript's `transpileModule` (types erased, one file for one file,
 * nothing bundled). The folder is named by a hash of the sources, so a changed source gives a new
 * build; it sits inside the package (`.test-build/`, ignored by git) so that the compiled files
 * resolve the package's dependencies as the sources do. Any number of test processes may call it
 * at once: each builds into a folder of its own and renames it into place; the first rename wins.
 *
 * Why: under tsx each start of the CLI paid for a TypeScript loader in three processes (tsx's own,
 * the launcher, the agent); compiled, a start costs what node costs.
 */
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const PACKAGE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const SOURCES = path.join(PACKAGE, "src");
const BUILDS = path.join(PACKAGE, ".test-build");
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
  const texts = files.map((file) => {
    const text = readFileSync(file, "utf8");
    hash.update(path.relative(SOURCES, file)).update("\0").update(text).update("\0");
    return text;
  });
  const name = hash.digest("hex").slice(0, 16);
  const target = path.join(BUILDS, name);
  if (exists(target)) return target;
  const staging = path.join(BUILDS, `.staging-${process.pid}-${Math.random().toString(36).slice(2)}`);
  for (const [i, file] of files.entries()) {
    const { outputText } = ts.transpileModule(texts[i]!, {
      fileName: file,
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: true },
    });
    const out = path.join(staging, path.relative(SOURCES, file)).replace(/\.ts$/, ".js");
    mkdirSync(path.dirname(out), { recursive: true });
    writeFileSync(out, outputText);
  }
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
    if (entry === current) continue;
    const full = path.join(BUILDS, entry);
    try {
      if (Date.now() - statSync(full).mtimeMs > STALE_MS) rmSync(full, { recursive: true, force: true });
    } catch {
      // Removed by another process meanwhile.
    }
  }
}
