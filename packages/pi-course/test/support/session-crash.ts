/**
 * The machinery of the chapter 10 crash test: compile the child, run it, kill it.
 *
 * A child started through tsx pays for a TypeScript loader at every start; hundreds of kills
 * would take minutes. So the child and the sources it imports are compiled once (TypeScript's
 * `transpileModule`, types erased, nothing bundled) into a temporary folder that mirrors the
 * package, and each child is a plain `node` process.
 */
import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const PACKAGE = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** Compiles `entry` (a .ts file of the package) and its relative imports into `out`; returns the entry's .js path. */
export function compileForNode(entry: string, out: string): string {
  const todo = [resolve(entry)];
  const done = new Set<string>();
  while (todo.length > 0) {
    const file = todo.pop()!;
    if (done.has(file)) continue;
    done.add(file);
    const { outputText } = ts.transpileModule(readFileSync(file, "utf8"), {
      fileName: file,
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: true },
    });
    for (const match of outputText.matchAll(/from "(\.\.?\/[^"]+)\.js"/g))
      todo.push(resolve(dirname(file), `${match[1]}.ts`));
    const target = join(out, relative(PACKAGE, file)).replace(/\.ts$/, ".js");
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, outputText);
  }
  writeFileSync(join(out, "package.json"), '{ "type": "module" }\n');
  return join(out, relative(PACKAGE, resolve(entry))).replace(/\.ts$/, ".js");
}

/** One run of the child, ended by the parent's SIGKILL. */
export interface CrashRun {
  /** Ids the child saw written (its append resolved) before the kill. */
  confirmed: string[];
  /** Milliseconds between the start of the clock (`ready` or the first id) and the kill. */
  killedAfter: number;
}

/**
 * Starts the child on `file`, waits for `ready` (or its first written id), kills it with SIGKILL
 * `killAfter` ms later.
 * Rejects, with the child's stderr, if the child ends by itself or never gets ready.
 */
export function crashChild(
  child: string,
  file: string,
  options: { durable: boolean; killAfter: number; budget: number; from: "ready" | "first write" },
): Promise<CrashRun> {
  return new Promise((resolvePromise, reject) => {
    const proc = spawn(process.execPath, [child, file, options.durable ? "1" : "0", String(options.budget)], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    let readyAt = 0;
    let killedAt = 0;
    const deadline = setTimeout(() => proc.kill("SIGKILL"), 10_000);
    proc.stdout.setEncoding("utf8").on("data", (text: string) => {
      out += text;
      // The clock starts at `ready` (the file is open) or, to land among the writes, at the first written id.
      const started = options.from === "ready" ? out.startsWith("ready\n") : /^ready\n[0-9a-f]+\n/.test(out);
      if (readyAt === 0 && started) {
        readyAt = performance.now();
        setTimeout(() => {
          killedAt = performance.now();
          proc.kill("SIGKILL");
        }, options.killAfter);
      }
    });
    proc.stderr.setEncoding("utf8").on("data", (text: string) => (err += text));
    proc.on("error", reject);
    proc.on("close", (code, signal) => {
      clearTimeout(deadline);
      if (signal !== "SIGKILL" || killedAt === 0) {
        reject(
          new Error(
            `the crash child ended by itself (code ${code}, signal ${signal}) before the kill: ${err.trim() || "(no stderr)"}`,
          ),
        );
        return;
      }
      // A line cut by the kill is not a confirmed id.
      const lines = out.split("\n");
      lines.pop();
      resolvePromise({ confirmed: lines.slice(1), killedAfter: killedAt - readyAt });
    });
  });
}
