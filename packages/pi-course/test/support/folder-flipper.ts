/**
 * Race helpers for the coding tools: a child process that swaps a folder inside a workspace for a
 * symbolic link to an outside folder and back, as fast as it can, while the tools run in the test
 * process; and a snapshot of a folder tree to tell what changed or appeared in it.
 *
 * The child is bounded three ways: it stops when the stop file appears, after `maxMs`, or after
 * `maxFlips` swaps, whichever comes first, and it always leaves a real folder in place. One swap
 * is four system calls: rename the folder to its stash name, create the link, remove the link,
 * rename the folder back. A tool that creates the missing folder in the gaps (as `write` does for
 * a nested path) leaves an "intruder": the child moves it aside (still inside the workspace) and
 * counts it.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { lstat, readdir, readFile, readlink, writeFile } from "node:fs/promises";
import path from "node:path";

export interface FlipperOptions {
  /** The folder to flip (it must exist, as a real folder). */
  folder: string;
  /** Where the real folder waits while the link is in place (inside the workspace). */
  stash: string;
  /** What the link points to (outside the workspace). */
  target: string;
  /** Intruders are moved to `<intruders>-<n>` (inside the workspace). */
  intruders: string;
  maxMs: number;
  maxFlips: number;
  /**
   * After each flip back, keep the real folder in place for a random 0 to `holdUs` microseconds
   * (busy-waiting), so that a fair share of calls pass their check and meet the swap while in use.
   */
  holdUs: number;
  /**
   * `swap` (the default, plain Node): four system calls per flip, with a moment between them
   * where the folder is missing. `exchange`: one atomic `renameat2(RENAME_EXCHANGE)` per flip
   * (Linux; Node cannot call it, so the child is `python3` through ctypes): the folder is always
   * there, either real or a link, which lets a swap fall between the two lookups of one `rename`.
   */
  strategy?: "swap" | "exchange";
}

export interface FlipperReport {
  flips: number;
  intruders: number;
  ms: number;
}

/** The child's program (plain JavaScript, so it needs no loader). */
const CHILD = String.raw`
const fs = require("node:fs");
const o = JSON.parse(process.argv[1]);
let flips = 0, intruders = 0;
const started = Date.now();
const until = started + o.maxMs;
// Runs one step; when a tool created the folder in a gap, moves it aside and tries again.
function step(fn) {
  for (let tries = 0; ; tries++) {
    try { return fn(); } catch (error) {
      if (tries > 1000 || !["EEXIST", "ENOTEMPTY", "EISDIR", "ENOTDIR"].includes(error.code)) throw error;
      fs.renameSync(o.folder, o.intruders + "-" + ++intruders);
    }
  }
}
process.stdout.write("ready\n");
while (flips < o.maxFlips && Date.now() < until) {
  if ((flips & 255) === 0 && fs.existsSync(o.stopFile)) break;
  fs.renameSync(o.folder, o.stash);
  step(() => fs.symlinkSync(o.target, o.folder));
  fs.unlinkSync(o.folder);
  step(() => fs.renameSync(o.stash, o.folder));
  flips++;
  const hold = process.hrtime.bigint() + BigInt(Math.floor(Math.random() * o.holdUs * 1000));
  while (process.hrtime.bigint() < hold);
}
process.stdout.write(JSON.stringify({ flips, intruders, ms: Date.now() - started }) + "\n");
`;

/** The `exchange` child: the link waits at the stash name and trades places with the folder. */
const EXCHANGE_CHILD = String.raw`
import ctypes, json, os, random, sys, time
o = json.loads(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
os.symlink(o["target"], o["stash"])
def exchange():
    if libc.renameat2(-100, o["folder"].encode(), -100, o["stash"].encode(), 2) != 0:
        raise OSError(ctypes.get_errno(), "renameat2")
flips, started = 0, time.monotonic()
print("ready", flush=True)
while flips < o["maxFlips"] and time.monotonic() - started < o["maxMs"] / 1000:
    if flips % 256 == 0 and os.path.exists(o["stopFile"]):
        break
    exchange()
    exchange()
    flips += 1
    hold = time.perf_counter() + random.random() * o["holdUs"] / 1e6
    while time.perf_counter() < hold:
        pass
os.unlink(o["stash"])
print(json.dumps({"flips": flips, "intruders": 0, "ms": round((time.monotonic() - started) * 1000)}), flush=True)
`;

export class Flipper {
  private output = "";
  private readonly exited: Promise<number | null>;

  private constructor(
    private readonly child: ChildProcess,
    private readonly stopFile: string,
  ) {
    child.stdout!.setEncoding("utf8").on("data", (chunk: string) => (this.output += chunk));
    child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (this.output += chunk));
    this.exited = new Promise((resolve) => {
      child.on("exit", (code) => resolve(code));
      child.on("error", (error) => {
        this.output += `${error.message}\n`;
        resolve(null);
      });
    });
  }

  /** Starts the child and waits until it is flipping. */
  static async start(options: FlipperOptions): Promise<Flipper> {
    const stopFile = `${options.stash}.stop`;
    const config = JSON.stringify({ ...options, stopFile });
    const [command, args] =
      options.strategy === "exchange"
        ? ["python3", ["-c", EXCHANGE_CHILD, config]]
        : [process.execPath, ["-e", CHILD, config]];
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] });
    const flipper = new Flipper(child, stopFile);
    const ready = await Promise.race([
      new Promise<boolean>((resolve) => child.stdout!.once("data", () => resolve(true))),
      flipper.exited.then(() => false),
    ]);
    if (!ready) throw new Error(`the flipper did not start: ${flipper.output}`);
    return flipper;
  }

  /** Asks the child to stop, waits for it (killing it after 10 s), and returns its counts. */
  async stop(): Promise<FlipperReport> {
    await writeFile(this.stopFile, "");
    const timer = setTimeout(() => this.child.kill("SIGKILL"), 10_000);
    const code = await this.exited;
    clearTimeout(timer);
    const last = this.output.trim().split("\n").at(-1) ?? "";
    if (code !== 0 || !last.startsWith("{")) {
      throw new Error(`the flipper failed (exit ${code}): ${this.output.trim()}`);
    }
    return JSON.parse(last) as FlipperReport;
  }
}

/** One entry of a tree snapshot: what it is, and a fingerprint of its content and inode. */
export type TreeSnapshot = Map<string, string>;

/** Every entry under `root` (relative path → kind, inode, size, mtime and content hash). */
export async function snapshotTree(root: string): Promise<TreeSnapshot> {
  const entries: TreeSnapshot = new Map();
  async function walk(dir: string): Promise<void> {
    for (const name of await readdir(dir)) {
      const full = path.join(dir, name);
      const info = await lstat(full);
      const relative = path.relative(root, full);
      let content = "";
      if (info.isFile())
        content = createHash("sha256")
          .update(await readFile(full))
          .digest("hex");
      else if (info.isSymbolicLink()) content = await readlink(full);
      const kind = info.isFile() ? "file" : info.isDirectory() ? "dir" : info.isSymbolicLink() ? "link" : "other";
      entries.set(relative, `${kind} ino=${info.ino} size=${info.size} mtime=${info.mtimeMs} ${content}`);
      if (info.isDirectory()) await walk(full);
    }
  }
  await walk(root);
  return entries;
}

/** What differs between two snapshots: entries changed or removed, and entries created. */
export function compareTrees(before: TreeSnapshot, after: TreeSnapshot): { changed: string[]; created: string[] } {
  const changed = [...before].filter(([name, print]) => after.get(name) !== print).map(([name]) => name);
  const created = [...after.keys()].filter((name) => !before.has(name));
  return { changed, created };
}
