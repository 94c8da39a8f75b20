/**
 * The proof's side of a chapter's test runs (the runner is practice/folder-runner.ts): one folder
 * that holds one view at a time, and one vitest runner serving it. `run(view, …)` makes the folder
 * hold exactly `view` (it writes the files whose text differs from the folder's, a test may have
 * changed one; removes the files the view does not hold, leftovers of earlier runs included; and
 * tells the runner which files changed), then runs the view's tests there.
 *
 * A view whose package.json (apart from its description), tsconfig.json or vitest.config.ts
 * differs from the folder's gets a fresh folder and a fresh runner: those decide what node_modules
 * links and how vitest is configured, which a running instance does not re-read. A run that does
 * not end within its limit is stopped (the runner's whole process group, its workers included)
 * and reported; the next run starts a new runner.
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import ts from "typescript";
import { REPO_ROOT } from "./catalogue.js";
import type { FolderRun, RunReport } from "./folder-runner.js";
import { type View, writeView } from "./generate.js";

export type { RunReport } from "./folder-runner.js";

/** A run's report, or why there is none (the run hung, or the runner stopped). */
export type RunOutcome = { report: RunReport } | { failed: string };

interface Runner {
  child: ChildProcessWithoutNullStreams;
  /** Answers not yet taken, and the one call waiting for the next. */
  lines: string[];
  wake?: () => void;
  exited?: string;
  output: string;
}

export class ChapterFolder {
  private held: View | undefined;
  private runner: Runner | undefined;
  /** CPU milliseconds of the runners that ended normally (see `close`). */
  private cpu = 0;
  private cpuKnown = true;

  /**
   * @param folder where the views are written, which must not exist yet; its parent holds the
   *   compiled runner too (the caller removes the parent when done)
   * @param nodeModules the node_modules the folder links to (see `writeView`)
   * @param env the runner's environment
   */
  constructor(
    readonly folder: string,
    private readonly nodeModules: string,
    private readonly env: NodeJS.ProcessEnv,
  ) {}

  /** Runs `testFiles` of `view` (with the `-t` pattern, if any) in the folder, holding exactly `view`. */
  async run(view: View, testFiles: string[], pattern: string | undefined, limitMs: number): Promise<RunOutcome> {
    if (this.held !== undefined && !sameSetup(this.held, view)) {
      await this.end();
      rmSync(this.folder, { recursive: true, force: true });
      this.held = undefined;
    }
    const changed = this.hold(view);
    const runner = (this.runner ??= this.start());
    const request: FolderRun = { changed, testFiles, ...(pattern === undefined ? {} : { pattern }) };
    runner.child.stdin.write(`${JSON.stringify(request)}\n`);
    const line = await within(this.next(runner, "@@run "), limitMs);
    if (line === undefined) {
      this.stop(runner);
      return { failed: `the test run did not end in ${limitMs / 1000} s (stopped):\n${tail(runner.output)}` };
    }
    if (line === null) {
      this.runner = undefined;
      return { failed: `the test runner stopped (${runner.exited}):\n${tail(runner.output)}` };
    }
    return { report: JSON.parse(line.slice("@@run ".length)) as RunReport };
  }

  /**
   * Ends the runner (vitest closes, its workers end); the CPU in milliseconds that the runners of
   * this folder used, workers included, or undefined when one had to be stopped or the platform
   * does not say.
   */
  async close(): Promise<number | undefined> {
    await this.end();
    return this.cpuKnown && process.platform === "linux" ? this.cpu : undefined;
  }

  /** Ends the runner, if any, counting its CPU; one that does not end within the limit is stopped. */
  private async end(limitMs = 60_000): Promise<void> {
    const runner = this.runner;
    if (runner === undefined) return;
    this.runner = undefined;
    runner.child.stdin.end();
    const line = await within(this.next(runner, "@@cpu "), limitMs);
    if (typeof line === "string") this.cpu += Number(line.slice("@@cpu ".length));
    else this.stop(runner);
  }

  /** Makes the folder hold exactly `view`; the folder-relative files that changed. */
  private hold(view: View): string[] {
    if (this.held === undefined) {
      writeView(view, this.folder, { linkNodeModules: this.nodeModules });
      this.held = view;
      return [];
    }
    const changed: string[] = [];
    // Against the files on disk, not the view held: a test may have changed one.
    for (const [file, content] of view.files) {
      const path = join(this.folder, file);
      if (existsSync(path) && same(readFileSync(path), content)) continue;
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, content);
      changed.push(file);
    }
    // What the view does not hold: the held view's other files, and what earlier runs left.
    for (const file of filesUnder(this.folder)) {
      if (view.files.has(file)) continue;
      rmSync(join(this.folder, file), { force: true });
      changed.push(file);
    }
    this.held = view;
    return changed;
  }

  private start(): Runner {
    // Beside the folder, not above it: a node_modules above it would lend the folder's code the
    // packages its package.json does not declare.
    const script = compiledRunner(join(dirname(this.folder), "runner"), this.nodeModules);
    // Its own process group, so that stopping it stops vitest's workers too.
    const child = spawn(process.execPath, [script], {
      cwd: this.folder,
      env: this.env,
      stdio: ["pipe", "pipe", "pipe"],
      detached: true,
    });
    const runner: Runner = { child, lines: [], output: "" };
    let rest = "";
    const wake = () => {
      const w = runner.wake;
      runner.wake = undefined;
      w?.();
    };
    child.stdout.setEncoding("utf8").on("data", (text: string) => {
      rest += text;
      for (let end = rest.indexOf("\n"); end >= 0; end = rest.indexOf("\n")) {
        const line = rest.slice(0, end);
        rest = rest.slice(end + 1);
        if (line.startsWith("@@")) runner.lines.push(line);
        else runner.output = (runner.output + line + "\n").slice(-5000);
      }
      wake();
    });
    child.stderr
      .setEncoding("utf8")
      .on("data", (text: string) => (runner.output = (runner.output + text).slice(-5000)));
    child.stdin.on("error", () => undefined); // a write after the child died: "close" reports it
    child.on("error", (error) => {
      runner.exited ??= error.message;
      wake();
    });
    child.on("close", (code, signal) => {
      runner.exited ??= `exit ${code ?? signal}`;
      wake();
    });
    return runner;
  }

  /** The runner's next line starting with `prefix`, or null once it has ended without one. */
  private async next(runner: Runner, prefix: string): Promise<string | null> {
    for (;;) {
      const at = runner.lines.findIndex((l) => l.startsWith(prefix));
      if (at >= 0) return runner.lines.splice(at, 1)[0]!;
      if (runner.exited !== undefined) return null;
      await new Promise<void>((resolve) => (runner.wake = resolve));
    }
  }

  private stop(runner: Runner): void {
    if (this.runner === runner) this.runner = undefined;
    this.cpuKnown = false;
    if (runner.exited !== undefined || runner.child.pid === undefined) return;
    try {
      process.kill(-runner.child.pid, "SIGKILL");
    } catch {
      runner.child.kill("SIGKILL");
    }
  }
}

let runnerJs: string | undefined;

/**
 * folder-runner.ts compiled to JavaScript (types erased) into a folder of its own, resolving its
 * packages from `nodeModules`: under tsx, whose loader sees every module vitest loads, each runner cost
 * about a second of CPU more (2.1 s instead of 1.1 s for one small run).
 */
function compiledRunner(into: string, nodeModules: string): string {
  runnerJs ??= ts.transpileModule(readFileSync(join(REPO_ROOT, "practice", "folder-runner.ts"), "utf8"), {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: true },
  }).outputText;
  const script = join(into, "folder-runner.mjs");
  if (!existsSync(script)) {
    mkdirSync(into, { recursive: true });
    writeFileSync(script, runnerJs);
    symlinkSync(nodeModules, join(into, "node_modules"), "dir");
  }
  return script;
}

/** What `promise` gives, or undefined once `ms` have passed. */
async function within<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<undefined>((done) => (timer = setTimeout(() => done(undefined), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

function same(a: string | Buffer, b: string | Buffer): boolean {
  return Buffer.from(a).equals(Buffer.from(b));
}

/** Whether a running vitest in a folder of `a` can run `b`: the same packages, compiler options and vitest config. */
function sameSetup(a: View, b: View): boolean {
  const pkg = (view: View) => {
    const { description: _, ...rest } = JSON.parse(String(view.files.get("package.json") ?? "{}")) as Record<
      string,
      unknown
    >;
    return JSON.stringify(rest);
  };
  return (
    pkg(a) === pkg(b) &&
    ["tsconfig.json", "vitest.config.ts"].every((file) => same(a.files.get(file) ?? "", b.files.get(file) ?? ""))
  );
}

/** Folder-relative paths of the files under `folder`, node_modules aside. */
function filesUnder(folder: string): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else out.push(relative(folder, path).split("\\").join("/"));
    }
  };
  for (const entry of readdirSync(folder, { withFileTypes: true })) {
    if (entry.name === "node_modules") continue;
    if (entry.isDirectory()) walk(join(folder, entry.name));
    else out.push(entry.name);
  }
  return out;
}

function tail(output: string): string {
  return output.trim().slice(-1500);
}
