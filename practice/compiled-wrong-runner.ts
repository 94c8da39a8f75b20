/**
 * practice/wrong-runner.ts as JavaScript, so the proof starts it with plain `node` (tsx cost about
 * 1 s of CPU per start: one runner per chapter, and one more after a version that hung).
 * The runner and what it loads by path (kept-forks.ts; kept-fork-entry.mjs and
 * kept-fork-warm-up.ts beside it) are transpiled or copied into
 * `node_modules/.cache/pi-course-wrong-runner/<hash of their texts>/`, under the repository, so
 * `vitest/node` resolves as it does for the sources. Several processes may ask at once: each writes
 * a folder of its own and renames it into place; the first rename wins, and the texts are the same.
 */
import { createHash, randomUUID } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";
import { REPO_ROOT } from "./catalogue.js";

/** Transpiled to `.js`. */
const SOURCES = ["wrong-runner.ts", "kept-forks.ts"];
/** Copied as they are (an entry file Node loads; a test file vitest runs). */
const COPIES = ["kept-fork-entry.mjs", "kept-fork-warm-up.ts"];

let script: string | undefined;

/** The path of the runner's JavaScript, written on first use. */
export function compiledWrongRunner(): string {
  if (script !== undefined) return script;
  const practice = join(REPO_ROOT, "practice");
  const texts = new Map([...SOURCES, ...COPIES].map((file) => [file, readFileSync(join(practice, file), "utf8")]));
  const hash = createHash("sha256");
  for (const [file, text] of texts) hash.update(`${file}\0${text}\0`);
  const folder = join(REPO_ROOT, "node_modules", ".cache", "pi-course-wrong-runner", hash.digest("hex").slice(0, 16));
  const entry = join(folder, "wrong-runner.js");
  if (!existsSync(entry)) {
    const staging = `${folder}.${process.pid}.${randomUUID()}`;
    mkdirSync(staging, { recursive: true });
    // Under node_modules, Node looks no further up for a package.json: say the files are modules here.
    writeFileSync(join(staging, "package.json"), '{ "type": "module" }\n');
    for (const [file, text] of texts) {
      if (COPIES.includes(file)) {
        writeFileSync(join(staging, file), text);
        continue;
      }
      const js = ts.transpileModule(text, {
        compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: true },
      }).outputText;
      writeFileSync(join(staging, file.replace(/\.ts$/, ".js")), js);
    }
    try {
      renameSync(staging, folder);
    } catch {
      // another process put the same files there first
      rmSync(staging, { recursive: true, force: true });
    }
  }
  script = entry;
  return script;
}
