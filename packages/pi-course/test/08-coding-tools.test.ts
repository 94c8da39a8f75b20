import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { getEventListeners } from "node:events";
import { promises as fsPromises, readdirSync, readFileSync, readlinkSync } from "node:fs";
import {
  type FileHandle,
  chmod,
  link,
  lstat,
  mkdir,
  mkdtemp,
  open,
  readdir,
  readFile,
  realpath,
  rename,
  rm,
  stat,
  symlink,
  unlink,
  writeFile,
} from "node:fs/promises";
import { tmpdir } from "node:os";
import { syncBuiltinESMExports } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import {
  PathLocks,
  Workspace,
  WorkspaceEscapeError,
  applyEdits,
  createBashTool,
  createCodingTools,
  createEditTool,
  createLsTool,
  createReadTool,
  createWriteTool,
  formatReadOutput,
  runCommand,
  writeFileAtomic,
} from "../src/coding-tools/index.js";
import type { AgentTool, AgentToolResult } from "../src/types.js";
import { PiCourseError } from "../src/base/errors.js";
import { Flipper, compareTrees, snapshotTree } from "./support/folder-flipper.js";

const packageDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
let base: string;
let root: string;
let outside: string;

beforeEach(async () => {
  // The real path: on macOS the temporary folder is a symlink (/var -> /private/var).
  base = await realpath(await mkdtemp(path.join(tmpdir(), "pi-course-08-")));
  root = path.join(base, "workspace");
  outside = path.join(base, "outside");
  await mkdir(root);
  await mkdir(outside);
  await writeFile(path.join(outside, "secret.txt"), "TOP SECRET\n");
});

/**
 * Every process this file starts carries this variable (a command inherits the environment), so
 * whatever a test leaves running, say a bash whose process group was never killed, dies after it.
 */
const LEFTOVER_ID = randomUUID();
process.env.PI_COURSE_TEST_08 = LEFTOVER_ID;
const LEFTOVER_TAG = Buffer.from(`PI_COURSE_TEST_08=${LEFTOVER_ID}\0`);

/** SIGKILL to every process started with LEFTOVER_TAG in its environment (Linux: /proc). */
function killLeftovers(): void {
  if (process.platform !== "linux") return;
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${name}/environ`).includes(LEFTOVER_TAG)) process.kill(Number(name), "SIGKILL");
    } catch {
      // gone, or not ours
    }
  }
}

afterEach(async () => {
  killLeftovers();
  await rm(base, { recursive: true, force: true });
});

// The variable goes with the file: a worker that runs another file next (the course proof keeps
// its worker from one run to the next) is left as it was found.
afterAll(() => {
  delete process.env.PI_COURSE_TEST_08;
});

function run<T>(tool: AgentTool<any, T>, params: unknown, signal?: AbortSignal): Promise<AgentToolResult<T>> {
  const prepared = tool.prepareArguments ? tool.prepareArguments(structuredClone(params)) : params;
  return tool.execute("call-1", prepared as never, signal);
}

function textOfResult(result: AgentToolResult<unknown>): string {
  return result.content.map((block) => (block.type === "text" ? block.text : "")).join("\n");
}

/** A construction site's error is rethrown as it is, so a failing test names its lab. */
function rethrowSite(error: unknown): void {
  if (error instanceof Error && error.message.includes("尚未实现")) throw error;
}

/** Awaits a rejection and checks its message. */
async function expectRejection(promise: Promise<unknown>, expected: string | RegExp, why?: string): Promise<void> {
  const outcome = await promise.then(
    () => new Error("expected a rejection, but the call succeeded"),
    (error: unknown) => error,
  );
  rethrowSite(outcome);
  const message = outcome instanceof Error ? outcome.message : String(outcome);
  if (typeof expected === "string") expect(message, why).toContain(expected);
  else expect(message, why).toMatch(expected);
}

/** Calls `fn`, expecting a throw, and checks its message. */
function expectThrow(fn: () => unknown, expected: string | RegExp): void {
  let outcome: unknown = new Error("expected a throw, but the call returned");
  try {
    fn();
  } catch (error) {
    outcome = error;
  }
  rethrowSite(outcome);
  const message = outcome instanceof Error ? outcome.message : String(outcome);
  if (typeof expected === "string") expect(message).toContain(expected);
  else expect(message).toMatch(expected);
}

/** Awaits a refusal; anything but a WorkspaceEscapeError is rethrown as it is (so it names its lab). */
async function expectEscape(promise: Promise<unknown>): Promise<WorkspaceEscapeError> {
  const outcome = await promise.then(
    () => new Error("expected a WorkspaceEscapeError, but the call succeeded"),
    (error: unknown) => error,
  );
  if (!(outcome instanceof WorkspaceEscapeError)) throw outcome;
  return outcome;
}

/** Alive and not a zombie (a container's init may not reap orphans at once). */
function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  }
}

async function waitUntilDead(pid: number, ms = 2000): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (!isAlive(pid)) return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return !isAlive(pid);
}

/** Calls per kind in the workspace race test: PI_RACE_ITERATIONS, or a size CI affords. */
function raceIterations(): number {
  const given = Number(process.env.PI_RACE_ITERATIONS ?? 150);
  if (!Number.isInteger(given) || given < 1) throw new Error("PI_RACE_ITERATIONS must be a positive whole number.");
  return given;
}

function raceTimeoutMs(): number {
  return 30_000 + raceIterations() * 30;
}

describe("chapter 08 · containment", () => {
  it("Lab 8.1 · resolves relative, absolute-inside and not-yet-existing paths to real paths", async () => {
    await writeFile(path.join(root, "a.txt"), "a\n");
    const ws = new Workspace(root);
    const real = ws.root;
    expect(await ws.resolve("a.txt")).toEqual({ absolute: path.join(real, "a.txt"), relative: "a.txt", exists: true });
    expect(await ws.resolve(path.join(root, "a.txt"))).toEqual({
      absolute: path.join(real, "a.txt"),
      relative: "a.txt",
      exists: true,
    });
    expect(await ws.resolve("./sub/../a.txt")).toEqual({
      absolute: path.join(real, "a.txt"),
      relative: "a.txt",
      exists: true,
    });
    expect(await ws.resolve("new/deep/b.txt")).toEqual({
      absolute: path.join(real, "new", "deep", "b.txt"),
      relative: path.join("new", "deep", "b.txt"),
      exists: false,
    });
    expect(await ws.resolve(".")).toEqual({ absolute: real, relative: ".", exists: true });
  }, 10_000);

  it("Lab 8.1 · resolve explains an empty path, a NUL character and a path outside in words", async () => {
    const ws = new Workspace(root);
    // Without the check, "" would resolve to the root itself.
    for (const empty of ["", "   ", undefined as unknown as string]) {
      await expectRejection(ws.resolve(empty), "The path is empty. Give a path relative to the workspace root.");
    }
    await expectRejection(ws.resolve("a\0b.txt"), "The path contains a NUL character.");
    const refusal = await expectEscape(ws.resolve("../outside/secret.txt"));
    expect(refusal.message).toBe(
      `The path "../outside/secret.txt" is outside the workspace ${ws.root}. ` +
        "Use a path inside it (relative paths are relative to the workspace root).",
    );
  }, 10_000);

  it("Lab 8.1 · a path under a file does not exist yet (ENOTDIR); other errors, such as a name too long, are not taken for a missing file", async () => {
    await writeFile(path.join(root, "a.txt"), "a\n");
    const ws = new Workspace(root);
    expect(await ws.resolve("a.txt/b")).toEqual({
      absolute: path.join(ws.root, "a.txt", "b"),
      relative: path.join("a.txt", "b"),
      exists: false,
    });
    // The tool says so in words (a raw ENOTDIR would reach the model otherwise).
    const [read] = createCodingTools(root);
    await expectRejection(run(read!, { path: "a.txt/b" }), "a.txt/b does not exist.");
    // A name over 255 bytes is an error of its own (ENAMETOOLONG), not a file to create.
    await expectRejection(ws.resolve("n".repeat(300)), /^ENAMETOOLONG/);
  }, 10_000);

  it("Lab 8.1 · refuses `..` for every file tool and touches nothing outside", async () => {
    const [read, write, edit, ls] = createCodingTools(root);
    const escape = "../outside/secret.txt";
    await expectEscape(run(read!, { path: escape }));
    await expectEscape(run(write!, { path: escape, content: "pwned" }));
    await expectEscape(run(edit!, { path: escape, edits: [{ oldText: "TOP", newText: "NO" }] }));
    await expectEscape(run(ls!, { path: "../outside" }));
    await expectRejection(run(write!, { path: "a/../../outside/new.txt", content: "x" }), /outside the workspace/);
    expect(await readFile(path.join(outside, "secret.txt"), "utf8")).toBe("TOP SECRET\n");
    expect(await readdir(outside)).toEqual(["secret.txt"]);
  }, 10_000);

  it("Lab 8.1 · refuses an absolute path outside the root", async () => {
    const [read, write] = createCodingTools(root);
    await expectRejection(run(read!, { path: path.join(outside, "secret.txt") }), /outside the workspace/);
    await expectEscape(run(write!, { path: path.join(outside, "new.txt"), content: "x" }));
    await expectEscape(run(read!, { path: "/etc/passwd" }));
    expect(await readdir(outside)).toEqual(["secret.txt"]);
  }, 10_000);

  it("Lab 8.1 · refuses a symlink that points out, for reading, writing and editing", async () => {
    await symlink(path.join(outside, "secret.txt"), path.join(root, "link.txt"));
    await symlink(path.join(outside, "missing.txt"), path.join(root, "dangling.txt"));
    const [read, write, edit] = createCodingTools(root);
    await expectRejection(run(read!, { path: "link.txt" }), /symbolic link/);
    await expectEscape(run(write!, { path: "link.txt", content: "pwned" }));
    await expectEscape(run(edit!, { path: "link.txt", edits: [{ oldText: "TOP", newText: "NO" }] }));
    expect(await readFile(path.join(outside, "secret.txt"), "utf8")).toBe("TOP SECRET\n");
    const ws = new Workspace(root);
    expect((await expectEscape(ws.resolve("link.txt"))).message).toBe(
      `The path "link.txt" leads outside the workspace through a symbolic link (to ${path.join(outside, "secret.txt")}); it is refused.`,
    );
    expect((await expectEscape(ws.resolve("dangling.txt"))).message).toBe(
      'The path "dangling.txt" goes through a symbolic link whose target does not exist; it is refused.',
    );
  }, 10_000);

  it("Lab 8.1 · refuses a symlinked parent folder, for existing and new files", async () => {
    await symlink(outside, path.join(root, "door"));
    const [read, write, , ls] = createCodingTools(root);
    await expectEscape(run(read!, { path: "door/secret.txt" }));
    await expectEscape(run(write!, { path: "door/new.txt", content: "x" }));
    await expectEscape(run(write!, { path: "door/deeper/new.txt", content: "x" }));
    await expectEscape(run(ls!, { path: "door" }));
    expect(await readdir(outside)).toEqual(["secret.txt"]);
  }, 10_000);

  it("Lab 8.1 · a file swapped for a symlink between check and open is not read", async () => {
    await writeFile(path.join(root, "notes.txt"), "harmless\n");
    const swap = async (target: string) => {
      if (path.basename(target) !== "notes.txt") return;
      await unlink(target);
      await symlink(path.join(outside, "secret.txt"), target);
    };
    const [read] = createCodingTools(root, { beforeOpen: swap });
    const refusal = await expectEscape(run(read!, { path: "notes.txt" }));
    expect(refusal.message, "the open itself refuses the swapped-in symlink (O_NOFOLLOW)").toMatch(
      /symbolic link after it was checked/,
    );
  }, 10_000);

  it("Lab 8.1 · a parent folder swapped for a symlink between check and open is refused after the open", async () => {
    await mkdir(path.join(root, "dir"));
    await writeFile(path.join(root, "dir", "secret.txt"), "inside\n");
    const swap = async (target: string) => {
      if (!target.includes(`${path.sep}dir${path.sep}`)) return;
      await rename(path.join(root, "dir"), path.join(root, "dir-moved"));
      await symlink(outside, path.join(root, "dir"));
    };
    const [read] = createCodingTools(root, { beforeOpen: swap });
    await expectRejection(run(read!, { path: "dir/secret.txt" }), /moved outside the workspace/);
  }, 10_000);

  it("Lab 8.1 · verifyOpened refuses a descriptor that lies outside the root, naming the path it expected", async () => {
    await writeFile(path.join(root, "a.txt"), "inside\n");
    const ws = new Workspace(root);
    const inside = await open(path.join(root, "a.txt"), "r");
    const secret = await open(path.join(outside, "secret.txt"), "r");
    const outsideFolder = await open(outside, "r");
    try {
      await ws.verifyOpened(inside, path.join(ws.root, "a.txt"));
      const refusal = await expectEscape(ws.verifyOpened(secret, path.join(ws.root, "a.txt")));
      expect(refusal.message).toBe("a.txt was moved outside the workspace while it was being opened; it is refused.");
      const atRoot = await expectEscape(ws.verifyOpened(outsideFolder, ws.root));
      expect(atRoot.message).toBe(". was moved outside the workspace while it was being opened; it is refused.");
    } finally {
      await Promise.all([inside.close(), secret.close(), outsideFolder.close()]);
    }
  }, 10_000);

  // An inode comparison would take the inside hard link for the file: only /proc/self/fd/<fd> says
  // where the descriptor was opened.
  it.runIf(process.platform === "linux")(
    "Lab 8.1 · on Linux verifyOpened asks the descriptor where it lies: a file opened outside is refused even when an inside hard link names it",
    async () => {
      await link(path.join(outside, "secret.txt"), path.join(root, "hard.txt"));
      const ws = new Workspace(root);
      const secret = await open(path.join(outside, "secret.txt"), "r");
      try {
        const refusal = await expectEscape(ws.verifyOpened(secret, path.join(ws.root, "hard.txt")));
        expect(refusal.message).toBe(
          "hard.txt was moved outside the workspace while it was being opened; it is refused.",
        );
      } finally {
        await secret.close();
      }
    },
    10_000,
  );

  it("Lab 8.1 · without /proc/self/fd, verifyOpened compares the descriptor with the file at the expected path (inode and device)", async () => {
    await writeFile(path.join(root, "a.txt"), "inside\n");
    await writeFile(path.join(root, "b.txt"), "another\n");
    const ws = new Workspace(root);
    // As on a system without /proc: reading a descriptor's link fails (for this test only).
    const realReadlink = fsPromises.readlink;
    const noProc = vi.spyOn(fsPromises, "readlink").mockImplementation((async (target: string) => {
      if (String(target).startsWith("/proc/"))
        throw Object.assign(new Error(`ENOENT: no ${target}`), { code: "ENOENT" });
      return realReadlink(target);
    }) as typeof realReadlink);
    syncBuiltinESMExports();
    const handle = await open(path.join(root, "a.txt"), "r");
    try {
      await ws.verifyOpened(handle, path.join(ws.root, "a.txt"));
      expect(noProc).toHaveBeenCalled();
      const refused = (name: string) =>
        `${name} was moved outside the workspace while it was being opened; it is refused.`;
      // another file at the expected path, or none at all
      expect((await expectEscape(ws.verifyOpened(handle, path.join(ws.root, "b.txt")))).message).toBe(refused("b.txt"));
      expect((await expectEscape(ws.verifyOpened(handle, path.join(ws.root, "gone.txt")))).message).toBe(
        refused("gone.txt"),
      );
      // the same inode number on another device is another file
      const onOtherDevice = {
        fd: handle.fd,
        stat: async () => {
          const info = await handle.stat();
          return Object.assign(info, { dev: info.dev + 1 });
        },
      } as unknown as FileHandle;
      expect((await expectEscape(ws.verifyOpened(onOtherDevice, path.join(ws.root, "a.txt")))).message).toBe(
        refused("a.txt"),
      );
    } finally {
      await handle.close();
      noProc.mockRestore();
      syncBuiltinESMExports();
    }
  }, 10_000);

  it("Lab 8.1 · read refuses a FIFO at once instead of blocking on it", async () => {
    execFileSync("mkfifo", [path.join(root, "pipe")]);
    const [read] = createCodingTools(root);
    const started = Date.now();
    await expectRejection(run(read!, { path: "pipe" }), "pipe is not a regular file");
    expect(Date.now() - started).toBeLessThan(2000);
  }, 5_000);

  it("Lab 8.1 · read refuses a hard link (it may be another name for a file outside)", async () => {
    await link(path.join(outside, "secret.txt"), path.join(root, "hard.txt"));
    const [read] = createCodingTools(root);
    const refusal = await expectEscape(run(read!, { path: "hard.txt" }));
    expect(refusal.message).toBe(
      "hard.txt has 2 hard links: another name for it may lie outside the workspace, so it is refused. Copy it (cp) to a new file to work on it.",
    );
  }, 10_000);

  it("Lab 8.1 · ls lists one folder, sorted and marked, and a missing root is a clear error", async () => {
    await mkdir(path.join(root, "src"));
    await writeFile(path.join(root, "b.txt"), "");
    await writeFile(path.join(root, "a.txt"), "");
    await symlink(path.join(root, "a.txt"), path.join(root, "c-link"));
    const ls = createLsTool(new Workspace(root));
    const result = await run(ls, {});
    expect(textOfResult(result)).toBe("a.txt\nb.txt\nc-link@\nsrc/");
    expect(result.details).toEqual({
      path: ".",
      entries: [
        { name: "a.txt", kind: "file" },
        { name: "b.txt", kind: "file" },
        { name: "c-link", kind: "symlink" },
        { name: "src", kind: "directory" },
      ],
      total: 4,
      truncated: false,
    });
    expect(textOfResult(await run(ls, { limit: 2 }))).toBe(
      "a.txt\nb.txt\n\n[Showing 2 of 4 entries. Use limit=4 to see all.]",
    );
    await expectRejection(run(ls, { path: "a.txt" }), /not a folder/);
    expectThrow(() => new Workspace(path.join(base, "nope")), /does not exist/);
  }, 10_000);
});

describe("chapter 08 · atomic, serialised writes", () => {
  it("Lab 8.2 · writeFileAtomic replaces the content, keeps the mode, and leaves no temporary file", async () => {
    const target = path.join(root, "a.sh");
    await writeFile(target, "old\n");
    await chmod(target, 0o755);
    await writeFileAtomic(target, "new\n");
    expect(await readFile(target, "utf8")).toBe("new\n");
    expect((await stat(target)).mode & 0o777).toBe(0o755);
    expect(await readdir(root)).toEqual(["a.sh"]);
  }, 10_000);

  it.runIf(process.platform === "linux")(
    "Lab 8.2 · writeFileAtomic closes the temporary file's descriptor, when the write succeeds and when it fails",
    async () => {
      /** What this process's descriptors point at inside the workspace. */
      const heldInRoot = () =>
        readdirSync("/proc/self/fd").flatMap((fd) => {
          try {
            const target = readlinkSync(`/proc/self/fd/${fd}`);
            return target.startsWith(`${root}${path.sep}`) ? [target] : [];
          } catch {
            return []; // the descriptor readdirSync itself used is closed already
          }
        });
      await writeFileAtomic(path.join(root, "a.txt"), "new\n");
      const refused = writeFileAtomic(path.join(root, "b.txt"), "new\n", {
        verify: async () => {
          throw new Error("refused by verify");
        },
      });
      await expectRejection(refused, "refused by verify");
      expect(heldInRoot()).toEqual([]);
    },
    10_000,
  );

  it("Lab 8.2 · a write that fails before the rename leaves the old content and no temporary file", async () => {
    const target = path.join(root, "a.txt");
    await writeFile(target, "old\n");
    const failing = writeFileAtomic(target, "new\n", {
      verify: async () => {
        throw new Error("refused by verify");
      },
    });
    await expectRejection(failing, "refused by verify");
    expect(await readFile(target, "utf8")).toBe("old\n");
    expect(await readdir(root)).toEqual(["a.txt"]);
  }, 10_000);

  it("Lab 8.2 · a file name near the 255-byte limit can be written (the temporary name stays short)", async () => {
    const name = `${"n".repeat(236)}.txt`;
    expect(name.length).toBe(240);
    await writeFileAtomic(path.join(root, name), "direct\n");
    expect(await readFile(path.join(root, name), "utf8")).toBe("direct\n");
    await run(createWriteTool(new Workspace(root)), { path: name, content: "two\n" });
    expect(await readFile(path.join(root, name), "utf8")).toBe("two\n");
    expect(await readdir(root)).toEqual([name]);
  }, 10_000);

  it("Lab 8.2 · edit refuses a FIFO at once, and the path lock is free afterwards", async () => {
    execFileSync("mkfifo", [path.join(root, "pipe")]);
    const edit = createEditTool(new Workspace(root));
    const started = Date.now();
    await expectRejection(
      run(edit, { path: "pipe", edits: [{ oldText: "a", newText: "b" }] }),
      "pipe is not a regular file",
    );
    await expectRejection(
      run(edit, { path: "pipe", edits: [{ oldText: "a", newText: "b" }] }),
      "pipe is not a regular file",
    );
    expect(Date.now() - started).toBeLessThan(2000);
  }, 5_000);

  it("Lab 8.2 · a parent folder swapped for an outside symlink before write opens its temporary file: refused, nothing written outside", async () => {
    await mkdir(path.join(root, "dir"));
    await writeFile(path.join(root, "dir", "notes.txt"), "inside\n");
    const swap = async (target: string) => {
      if (!target.includes(`${path.sep}dir${path.sep}`)) return;
      await rename(path.join(root, "dir"), path.join(root, "dir-moved"));
      await symlink(outside, path.join(root, "dir"));
    };
    // The hook runs once, after the check and right before the write walks to the folder: the
    // walk (no symlink followed) must see that the folder was swapped.
    const [, write] = createCodingTools(root, { beforeOpen: swap });
    await expectRejection(run(write!, { path: "dir/notes.txt", content: "pwned\n" }), /moved outside the workspace/);
    expect(await readdir(outside)).toEqual(["secret.txt"]);
    expect(await readFile(path.join(root, "dir-moved", "notes.txt"), "utf8")).toBe("inside\n");
  }, 10_000);

  it("Lab 8.2 · a parent folder swapped for an outside symlink before a nested write makes its folders: refused, no folder made outside", async () => {
    await mkdir(path.join(root, "dir"));
    const swap = async (target: string) => {
      if (!target.includes(`${path.sep}dir${path.sep}`)) return;
      await rename(path.join(root, "dir"), path.join(root, "dir-moved"));
      await symlink(outside, path.join(root, "dir"));
    };
    const [, write] = createCodingTools(root, { beforeOpen: swap });
    // The missing folders are made one level at a time inside held folders, never `mkdir -p` through the path.
    const refusal = await expectEscape(run(write!, { path: "dir/new/deeper/f.txt", content: "x\n" }));
    expect(refusal.message).toBe(
      "dir/new/deeper/f.txt is refused: the folder dir became a symbolic link after the path was checked, so it may have been moved outside the workspace. Nothing was read or written.",
    );
    expect(await readdir(outside)).toEqual(["secret.txt"]);
    expect(await readdir(path.join(root, "dir-moved"))).toEqual([]);
  }, 10_000);

  it("Lab 8.2 · edit refuses a hard link; write replaces the link and the outside file keeps its content", async () => {
    await link(path.join(outside, "secret.txt"), path.join(root, "hard.txt"));
    const [, write, edit] = createCodingTools(root);
    await expectEscape(run(edit!, { path: "hard.txt", edits: [{ oldText: "TOP", newText: "NO" }] }));
    await run(write!, { path: "hard.txt", content: "mine\n" });
    expect(await readFile(path.join(root, "hard.txt"), "utf8")).toBe("mine\n");
    expect(await readFile(path.join(outside, "secret.txt"), "utf8")).toBe("TOP SECRET\n");
  }, 10_000);

  it("Lab 8.2 · PathLocks runs one task at a time per key, in order, and other keys meanwhile", async () => {
    const locks = new PathLocks();
    const log: string[] = [];
    let running = 0;
    let most = 0;
    const task =
      (name: string, ms: number, fail = false) =>
      async () => {
        running++;
        most = Math.max(most, running);
        log.push(`start ${name}`);
        await new Promise((resolve) => setTimeout(resolve, ms));
        log.push(`end ${name}`);
        running--;
        if (fail) throw new Error(`${name} failed`);
        return name;
      };
    const a1 = locks.run("a", task("a1", 30, true));
    const a2 = locks.run("a", task("a2", 5));
    const b1 = locks.run("b", task("b1", 5));
    await expectRejection(a1, "a1 failed");
    // a1's failure is a1's alone: the task queued after it still runs, and its caller gets its result.
    expect(await a2.catch((error: Error) => `a2 was rejected with a1's failure: ${error.message}`)).toBe("a2");
    expect(await b1).toBe("b1");
    expect(log).toEqual(["start a1", "start b1", "end b1", "end a1", "start a2", "end a2"]);
    expect(most).toBe(2);
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(locks.size).toBe(0);
    // c1 is done and its bookkeeping ran while c2 still runs: the key stays taken, so c3 waits for c2.
    const c1 = locks.run("c", task("c1", 5));
    const c2 = locks.run("c", task("c2", 30));
    await c1;
    await new Promise((resolve) => setTimeout(resolve, 0));
    const c3 = locks.run("c", task("c3", 5));
    await Promise.all([c2, c3]);
    expect(log.slice(6)).toEqual(["start c1", "end c1", "start c2", "end c2", "start c3", "end c3"]);
  }, 10_000);

  it("Lab 8.2 · concurrent writes to one path never interleave: the last to finish is on disk, whole", async () => {
    const write = createWriteTool(new Workspace(root));
    const finished: number[] = [];
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        run(write, { path: "deep/er/out.txt", content: `version ${i}\n`.repeat(500) }).then((result) => {
          finished.push(i);
          return result;
        }),
      ),
    );
    const last = finished.at(-1)!;
    expect(await readFile(path.join(root, "deep", "er", "out.txt"), "utf8")).toBe(`version ${last}\n`.repeat(500));
    expect(await readdir(path.join(root, "deep", "er"))).toEqual(["out.txt"]);
    const created = results.filter((r) => r.details.created);
    expect(created.length).toBe(1);
    expect(results[0]!.details).toMatchObject({ path: path.join("deep", "er", "out.txt"), bytes: 5000 });
    expect(textOfResult(created[0]!)).toMatch(/^Created deep\/er\/out\.txt \(\d+ bytes\)\.$/);
  }, 30_000);

  it("Lab 8.2 · a file swapped for a symlink before a write or an edit: the outside file is untouched", async () => {
    await writeFile(path.join(root, "notes.txt"), "TOP harmless\n");
    const swap = async (target: string) => {
      if (path.basename(target) !== "notes.txt") return;
      await rm(target, { force: true });
      await symlink(path.join(outside, "secret.txt"), target);
    };
    const [, write, edit] = createCodingTools(root, { beforeOpen: swap });
    await run(write!, { path: "notes.txt", content: "new content\n" });
    // The rename replaced the link itself: the workspace holds the file, the outside is intact.
    expect(await readFile(path.join(outside, "secret.txt"), "utf8")).toBe("TOP SECRET\n");
    expect((await stat(path.join(root, "notes.txt"))).isFile()).toBe(true);
    await writeFile(path.join(root, "notes.txt"), "TOP harmless\n");
    await expectEscape(run(edit!, { path: "notes.txt", edits: [{ oldText: "TOP", newText: "NO" }] }));
    expect(await readFile(path.join(outside, "secret.txt"), "utf8")).toBe("TOP SECRET\n");
  }, 10_000);
});

describe("chapter 08 · the read window", () => {
  it("Lab 8.3 · numbers lines from an offset, within a limit, with a hint to continue", () => {
    const text = Array.from({ length: 12 }, (_, i) => `line ${i + 1}`).join("\n") + "\n";
    expect(formatReadOutput("a\nb\n")).toEqual({
      text: "1\ta\n2\tb",
      window: { startLine: 1, endLine: 2, totalLines: 2, truncatedBy: null },
    });
    expect(formatReadOutput(text, { offset: 9, limit: 2 })).toEqual({
      text: " 9\tline 9\n10\tline 10\n\n[Showing lines 9-10 of 12. Use offset=11 to continue.]",
      window: { startLine: 9, endLine: 10, totalLines: 12, truncatedBy: "lines" },
    });
    expect(formatReadOutput(text, { offset: 11 }).text).toBe("11\tline 11\n12\tline 12");
    expect(formatReadOutput(text, { maxLines: 3 }).window).toEqual({
      startLine: 1,
      endLine: 3,
      totalLines: 12,
      truncatedBy: "lines",
    });
    expect(formatReadOutput("a\r\nb\r\n").text).toBe("1\ta\n2\tb");
    expect(formatReadOutput("")).toEqual({
      text: "(empty file)",
      window: { startLine: 0, endLine: 0, totalLines: 0, truncatedBy: null },
    });
    expectThrow(() => formatReadOutput(text, { offset: 13 }), "offset 13 is past the end of the file (12 lines).");
  });

  it("Lab 8.3 · stops at the byte cap, and cuts a single huge line instead of showing nothing", () => {
    const text = Array.from({ length: 100 }, () => "x".repeat(98)).join("\n");
    const out = formatReadOutput(text, { maxBytes: 1024 });
    // Each numbered line takes 4 + 98 + 1 = 103 bytes: 9 fit in 1024.
    expect(out.window).toEqual({ startLine: 1, endLine: 9, totalLines: 100, truncatedBy: "bytes" });
    expect(out.text.endsWith("[Showing lines 1-9 of 100, 1 KB limit. Use offset=10 to continue.]")).toBe(true);
    // A line that fills the cap to the last byte still fits.
    expect(formatReadOutput(text, { maxBytes: 9 * 103 }).window).toEqual({
      startLine: 1,
      endLine: 9,
      totalLines: 100,
      truncatedBy: "bytes",
    });
    const huge = formatReadOutput("y".repeat(5000) + "\nnext\n", { maxBytes: 100 });
    expect(huge.window).toEqual({ startLine: 1, endLine: 1, totalLines: 2, truncatedBy: "bytes" });
    expect(huge.text).toBe(
      `1\t${"y".repeat(98)} … [line cut at 100 bytes]\n\n[Showing lines 1-1 of 2, 100 bytes limit. Use offset=2 to continue.]`,
    );
    // The cap counts bytes: a cut inside a character drops its broken half; a U+FFFD the line holds stays.
    const wide = formatReadOutput(`\uFFFD${"é".repeat(3000)}\n`, { maxBytes: 100 });
    expect(wide.text.split("\n")[0]).toBe(`1\t\uFFFD${"é".repeat(47)} … [line cut at 100 bytes]`);
  });

  it("Lab 8.3 · read refuses a file larger than it loads (64 MiB by default), with a hint to use bash", async () => {
    await writeFile(path.join(root, "small.txt"), "x".repeat(99) + "\n");
    await writeFile(path.join(root, "big.txt"), "x".repeat(100) + "\n");
    const read = createReadTool(new Workspace(root), { maxFileBytes: 100 });
    expect(textOfResult(await run(read, { path: "small.txt" }))).toBe(`1\t${"x".repeat(99)}`);
    await expectRejection(
      run(read, { path: "big.txt" }),
      "big.txt is 101 bytes, more than read loads (100 bytes). Look at parts of it with bash: head -n 100 big.txt,",
    );
    // The default: a sparse 64 MiB + 1 file is refused before it is loaded.
    const handle = await open(path.join(root, "huge.log"), "w");
    await handle.truncate(64 * 1024 * 1024 + 1);
    await handle.close();
    await expectRejection(
      run(createReadTool(new Workspace(root)), { path: "huge.log" }),
      `huge.log is ${64 * 1024 * 1024 + 1} bytes, more than read loads (64 MiB).`,
    );
  }, 10_000);

  it("Lab 8.3 · the read tool returns the window and its details, and refuses folders and binaries", async () => {
    await writeFile(path.join(root, "main.ts"), "const a = 1;\nconst b = 2;\nexport { a, b };\n");
    await writeFile(path.join(root, "blob.bin"), Buffer.from([1, 0, 2, 3]));
    await mkdir(path.join(root, "src"));
    const read = createReadTool(new Workspace(root));
    const result = await run(read, { path: "main.ts", offset: 2, limit: 1 });
    expect(result.content).toEqual([
      { type: "text", text: "2\tconst b = 2;\n\n[Showing lines 2-2 of 3. Use offset=3 to continue.]" },
    ]);
    expect(result.details).toEqual({
      path: "main.ts",
      bytes: 43,
      startLine: 2,
      endLine: 2,
      totalLines: 3,
      truncatedBy: "lines",
    });
    await expectRejection(run(read, { path: "src" }), "src is a folder; use ls to list it.");
    await expectRejection(run(read, { path: "blob.bin" }), /binary/);
    await expectRejection(run(read, { path: "missing.ts" }), "missing.ts does not exist.");
  }, 10_000);

  it("Lab 8.3 · refuses a dangling symlink, and reads through a symlink that stays inside", async () => {
    await symlink(path.join(outside, "missing.txt"), path.join(root, "dangling.txt"));
    await writeFile(path.join(root, "real.txt"), "inside\n");
    await symlink(path.join(root, "real.txt"), path.join(root, "alias.txt"));
    const [read, write] = createCodingTools(root);
    await expectEscape(run(write!, { path: "dangling.txt", content: "x" }));
    expect(await readdir(outside)).toEqual(["secret.txt"]);
    const result = await run(read!, { path: "alias.txt" });
    expect(textOfResult(result)).toBe("1\tinside");
    expect(result.details).toMatchObject({ path: "real.txt" });
  }, 10_000);

  it("Lab 8.3 · a limit above maxLines is held to maxLines; the byte cap counts each line's UTF-8 bytes", () => {
    const text = Array.from({ length: 10 }, (_, i) => `line ${i + 1}`).join("\n");
    expect(formatReadOutput(text, { maxLines: 3, limit: 5 }).window, "a caller's limit above maxLines").toEqual({
      startLine: 1,
      endLine: 3,
      totalLines: 10,
      truncatedBy: "lines",
    });
    // "1\t" + 20 × "é" (2 bytes each in UTF-8) + a newline = 43 bytes a line: two fit in 100 bytes, a third does not
    const wide = Array.from({ length: 5 }, () => "é".repeat(20)).join("\n");
    expect(formatReadOutput(wide, { maxBytes: 100 }).window, "lines counted in UTF-8 bytes").toEqual({
      startLine: 1,
      endLine: 2,
      totalLines: 5,
      truncatedBy: "bytes",
    });
  });
});

describe("chapter 08 · exact edits", () => {
  it("Lab 8.4 · applies several edits, each matched against the original, in one pass", () => {
    const before = "alpha\nbeta\ngamma\ndelta\n";
    expect(
      applyEdits(before, [
        { oldText: "delta", newText: "DELTA\nEPSILON" },
        { oldText: "alpha\n", newText: "" },
        { oldText: "beta", newText: "alpha" },
      ]),
    ).toEqual({
      content: "alpha\ngamma\nDELTA\nEPSILON\n",
      applied: [
        { line: 1, removedLines: 2, addedLines: 0 },
        { line: 2, removedLines: 1, addedLines: 1 },
        { line: 4, removedLines: 1, addedLines: 2 },
      ],
    });
  });

  it("Lab 8.4 · refuses zero matches, several matches, overlaps, empty oldText and no-ops", () => {
    const text = "foo bar foo baz\n";
    // One edit is named `oldText`, one of several `edits[i].oldText`.
    expectThrow(
      () => applyEdits(text, [{ oldText: "qux", newText: "x" }]),
      /^oldText was not found in the file\. Read the file again and copy the text exactly, including whitespace\.$/,
    );
    expectThrow(
      () => applyEdits(text, [{ oldText: "foo", newText: "x" }]),
      "oldText matches 2 places in the file. Include more surrounding lines so it matches exactly one.",
    );
    expectThrow(() => applyEdits("foo foo foo", [{ oldText: "foo", newText: "x" }]), "oldText matches 3 places");
    expectThrow(
      () =>
        applyEdits(text, [
          { oldText: "bar foo", newText: "x" },
          { oldText: "foo baz", newText: "y" },
        ]),
      "edits[0] and edits[1] overlap. Merge them into one edit.",
    );
    expectThrow(() => applyEdits(text, [{ oldText: "", newText: "x" }]), "oldText is empty");
    expectThrow(() => applyEdits(text, [{ oldText: "bar", newText: "bar" }]), /change nothing/);
    expectThrow(() => applyEdits(text, []), "No edits were given.");
    expectThrow(
      () =>
        applyEdits(text, [
          { oldText: "bar", newText: "x" },
          { oldText: "zzz", newText: "y" },
        ]),
      /^edits\[1\]\.oldText was not found/,
    );
  });

  it("Lab 8.4 · a parent folder swapped for an outside symlink before edit opens its temporary file: refused, nothing written outside", async () => {
    await mkdir(path.join(root, "dir"));
    await writeFile(path.join(root, "dir", "notes.txt"), "TOP inside\n");
    let calls = 0;
    const swap = async (target: string) => {
      // The first call opens the file to read it, the second the temporary file.
      if (!target.includes(`${path.sep}dir${path.sep}`) || ++calls !== 2) return;
      await rename(path.join(root, "dir"), path.join(root, "dir-moved"));
      await symlink(outside, path.join(root, "dir"));
    };
    const [, , edit] = createCodingTools(root, { beforeOpen: swap });
    await expectRejection(
      run(edit!, { path: "dir/notes.txt", edits: [{ oldText: "TOP", newText: "pwned" }] }),
      /moved outside the workspace/,
      "the temporary file's open refuses the swapped-in folder (O_NOFOLLOW)",
    );
    expect(calls).toBe(2);
    expect(await readdir(outside)).toEqual(["secret.txt"]);
    expect(await readFile(path.join(outside, "secret.txt"), "utf8")).toBe("TOP SECRET\n");
    expect(await readFile(path.join(root, "dir-moved", "notes.txt"), "utf8")).toBe("TOP inside\n");
  }, 10_000);

  it("Lab 8.4 · the edit tool writes once or not at all, keeps CRLF, and accepts a flat edit", async () => {
    const file = path.join(root, "win.txt");
    await writeFile(file, "one\r\ntwo\r\nthree\r\n");
    const edit = createEditTool(new Workspace(root));
    const result = await run(edit, { path: "win.txt", oldText: "two\nthree", newText: "2\n3" });
    expect(await readFile(file, "utf8")).toBe("one\r\n2\r\n3\r\n");
    expect(result.content).toEqual([{ type: "text", text: "Edited win.txt: 1 replacement (first change at line 2)." }]);
    expect(result.details).toEqual({
      path: "win.txt",
      applied: [{ line: 2, removedLines: 2, addedLines: 2 }],
      firstChangedLine: 2,
    });
    const refused = run(edit, {
      path: "win.txt",
      edits: [
        { oldText: "one", newText: "1" },
        { oldText: "missing", newText: "x" },
      ],
    });
    await expectRejection(refused, /edits\[1\]\.oldText was not found/);
    expect(await readFile(file, "utf8")).toBe("one\r\n2\r\n3\r\n");
    expect(await readdir(root)).toEqual(["win.txt"]);
    await expectRejection(
      run(edit, { path: "nope.txt", edits: [{ oldText: "a", newText: "b" }] }),
      "nope.txt does not exist; use write to create it.",
    );
  }, 10_000);

  // Named after the last lab it needs (edit's applyEdits), so the lab-order proof sees it go red
  // for the right reason. The iteration count is per kind of call: PI_RACE_ITERATIONS=10000.
  // PI_RACE_STRATEGY=exchange flips with one atomic exchange (needs Linux and python3).
  // Linux only: elsewhere Node cannot open a name inside a held folder (no openat, no
  // /proc/self/fd), so the window is narrowed there, not closed (held-folder.ts), and this fails.
  it.runIf(process.platform === "linux")(
    "Lab 8.4 · another process flips a folder between a real folder and an outside symlink: nothing outside changes or appears, every call succeeds inside or is refused clearly",
    async () => {
      const iterations = raceIterations();
      const race = path.join(root, "race");
      await mkdir(race);
      for (const dir of [race, outside]) {
        const where = dir === race ? "INSIDE" : "OUTSIDE";
        await writeFile(path.join(dir, "target.txt"), `${where} target\n`);
        await writeFile(path.join(dir, "edit.txt"), `EDIT-ME\n${where}\n`);
        await writeFile(path.join(dir, "read.txt"), `${where} READ\n`);
        await writeFile(path.join(dir, `${where.toLowerCase()}-marker`), "");
      }
      const outsideBefore = await snapshotTree(outside);
      const [read, write, edit, ls] = createCodingTools(root);
      type Tally = { successes: number; refusals: number; unclear: string[]; leaks: string[]; last?: number };
      const kinds = ["write", "mkdir", "edit", "read", "ls"] as const;
      const tallies = Object.fromEntries(
        kinds.map((k) => [k, { successes: 0, refusals: 0, unclear: [], leaks: [] } as Tally]),
      ) as Record<(typeof kinds)[number], Tally>;
      const refusalKinds = new Map<string, number>();
      const call: Record<(typeof kinds)[number], (i: number) => Promise<AgentToolResult<unknown>>> = {
        write: (i) => run(write!, { path: "race/target.txt", content: `written ${i}\n` }),
        mkdir: (i) => run(write!, { path: `race/d-${i}/e/new.txt`, content: `nested ${i}\n` }),
        edit: () => run(edit!, { path: "race/edit.txt", edits: [{ oldText: "EDIT-ME", newText: "EDIT-ME." }] }),
        read: () => run(read!, { path: "race/read.txt" }),
        ls: () => run(ls!, { path: "race", limit: 1_000_000 }),
      };
      const started = Date.now();
      const flipper = await Flipper.start({
        folder: race,
        stash: path.join(root, "race.real"),
        target: outside,
        intruders: path.join(root, "race.intruder"),
        maxMs: 600_000,
        maxFlips: 1e9,
        holdUs: Number(process.env.PI_RACE_HOLD_US ?? 200),
        strategy: process.env.PI_RACE_STRATEGY === "exchange" ? "exchange" : "swap",
      });
      let flips;
      // A construction site's error stops every kind of call, so none runs on after the test.
      let stopped = false;
      try {
        await Promise.all(
          kinds.map(async (kind) => {
            const tally = tallies[kind];
            for (let i = 0; i < iterations && !stopped; i++) {
              try {
                const result = await call[kind](i);
                const text = textOfResult(result);
                // The flipper may have moved aside a folder a nested write created: it is inside too.
                if (kind === "read" && text !== "1\tINSIDE READ") tally.leaks.push(text);
                if (kind === "ls" && text.includes("outside-marker")) tally.leaks.push(text);
                tally.successes++;
                tally.last = i;
              } catch (error) {
                stopped ||= error instanceof Error && error.message.includes("尚未实现");
                rethrowSite(error);
                const message = error instanceof Error ? error.message : String(error);
                // A clear refusal names the path in words; a raw system error (ENOENT: …) is not one.
                const raw = !(error instanceof PiCourseError) && (error as { code?: unknown }).code !== undefined;
                if (raw || /^E[A-Z]+: /.test(message)) tally.unclear.push(message);
                else tally.refusals++;
                const shape = message.replace(/\d+/g, "N").replace(/"[^"]*"/g, "…");
                refusalKinds.set(shape, (refusalKinds.get(shape) ?? 0) + 1);
              }
            }
          }),
        );
      } finally {
        flips = await flipper.stop();
      }
      const elapsed = Date.now() - started;
      const { changed, created } = compareTrees(outsideBefore, await snapshotTree(outside));
      const inside = await snapshotTree(root);
      const leftovers = [...inside.keys()].filter((name) => /\.pi-[0-9a-f]+\.tmp$/.test(name));
      // Every reported success landed inside (the nested files may sit in a folder the flipper moved aside).
      const nestedInside = [...inside.keys()].filter((name) => /(^|\/)d-\d+\/e\/new\.txt$/.test(name)).length;
      const summary = {
        iterationsPerKind: iterations,
        ms: elapsed,
        flips,
        changedOutside: changed.length,
        createdOutside: created.length,
        temporaryFilesOutside: created.filter((name) => name.endsWith(".tmp")).length,
        tmpLeftInside: leftovers.length,
        calls: Object.fromEntries(
          kinds.map((k) => [
            k,
            {
              successes: tallies[k].successes,
              refusals: tallies[k].refusals,
              unclear: tallies[k].unclear.length,
              leaks: tallies[k].leaks.length,
            },
          ]),
        ),
        refusals: Object.fromEntries(refusalKinds),
      };
      if (process.env.PI_RACE_ITERATIONS) console.log(JSON.stringify(summary, null, 2));
      expect({ changed, created: created.slice(0, 10) }).toEqual({ changed: [], created: [] });
      expect(leftovers).toEqual([]);
      for (const kind of kinds) {
        expect({ kind, unclear: tallies[kind].unclear.slice(0, 3), leaks: tallies[kind].leaks.slice(0, 3) }).toEqual({
          kind,
          unclear: [],
          leaks: [],
        });
        expect(tallies[kind].successes + tallies[kind].refusals).toBe(iterations);
      }
      // The race was real (the folder flipped, calls got through and calls were refused), and
      // once it is over every kind of call works again.
      expect(flips.flips).toBeGreaterThan(0);
      const successes = kinds.reduce((sum, kind) => sum + tallies[kind].successes, 0);
      expect(successes).toBeGreaterThan(0);
      expect(successes).toBeLessThan(kinds.length * iterations);
      expect(nestedInside).toBe(tallies.mkdir.successes);
      if (tallies.write.last !== undefined) {
        const targets = [...inside.keys()].filter((name) => path.basename(name) === "target.txt");
        const written = await Promise.all(targets.map((name) => readFile(path.join(root, name), "utf8")));
        expect(written).toContain(`written ${tallies.write.last}\n`);
      }
      expect((await lstat(race)).isDirectory()).toBe(true);
      const atRest: string[] = [];
      for (const kind of kinds) atRest.push(textOfResult(await call[kind](iterations)));
      expect(atRest[3]).toBe("1\tINSIDE READ");
      expect(atRest[4]).toContain("inside-marker");
      expect(await readFile(path.join(race, "edit.txt"), "utf8")).toBe(
        `EDIT-ME${".".repeat(tallies.edit.successes + 1)}\nINSIDE\n`,
      );
      expect(await readFile(path.join(race, "target.txt"), "utf8")).toBe(`written ${iterations}\n`);
    },
    raceTimeoutMs(),
  );

  it("Lab 8.4 · concurrent edits of one file all land (no lost update)", async () => {
    const lines = Array.from({ length: 20 }, (_, i) => `marker ${i};`);
    await writeFile(path.join(root, "list.txt"), lines.join("\n") + "\n");
    const edit = createEditTool(new Workspace(root));
    await Promise.all(
      lines.map((line, i) => run(edit, { path: "list.txt", edits: [{ oldText: line, newText: `done ${i};` }] })),
    );
    expect(await readFile(path.join(root, "list.txt"), "utf8")).toBe(
      lines.map((_, i) => `done ${i};`).join("\n") + "\n",
    );
  }, 30_000);
});

describe("chapter 08 · argument repairs", () => {
  it("Lab 8.4 · every path tool takes file_path/filePath for path; edit takes one flat edit in either naming", async () => {
    const workspace = new Workspace(root);
    const tools = {
      read: createReadTool(workspace),
      write: createWriteTool(workspace),
      ls: createLsTool(workspace),
      edit: createEditTool(workspace),
    };
    for (const tool of Object.values(tools)) {
      expect(tool.prepareArguments?.({ file_path: "a.txt" })).toEqual({ path: "a.txt" });
      expect(tool.prepareArguments?.({ filePath: "a.txt" })).toEqual({ path: "a.txt" });
      // `path` wins, and two aliases at once are not guessed between
      expect(tool.prepareArguments?.({ path: "b.txt", file_path: "a.txt" })).toEqual({
        path: "b.txt",
        file_path: "a.txt",
      });
      expect(tool.prepareArguments?.({ file_path: "a.txt", filePath: "c.txt" })).toEqual({
        file_path: "a.txt",
        filePath: "c.txt",
      });
    }
    expect(tools.write.prepareArguments?.({ file_path: "a.txt", content: "x" })).toEqual({
      path: "a.txt",
      content: "x",
    });
    const file = path.join(root, "notes.txt");
    await writeFile(file, "alpha\nbeta\n");
    await run(tools.edit, { file_path: "notes.txt", old_string: "beta", new_string: "BETA" });
    await run(tools.edit, { filePath: "notes.txt", oldText: "alpha", newText: "ALPHA" });
    expect(await readFile(file, "utf8")).toBe("ALPHA\nBETA\n");
    // an edit that already has `edits` is left as sent
    const both = { path: "notes.txt", edits: [{ oldText: "ALPHA", newText: "a" }], old_string: "x", new_string: "y" };
    expect(tools.edit.prepareArguments?.(structuredClone(both))).toEqual(both);
  }, 10_000);
});

describe("chapter 08 · bounded bash", () => {
  it("Lab 8.5 · returns the exit code and stdout and stderr interleaved", async () => {
    const started = Date.now();
    const ok = await runCommand("echo out; sleep 0.05; echo err >&2; sleep 0.05; echo done", { cwd: root });
    expect(ok.durationMs).toBeGreaterThanOrEqual(100);
    expect(ok.durationMs).toBeLessThanOrEqual(Date.now() - started);
    expect({
      output: ok.output,
      exitCode: ok.exitCode,
      signal: ok.signal,
      timedOut: ok.timedOut,
      truncated: ok.truncated,
    }).toEqual({
      output: "out\nerr\ndone\n",
      exitCode: 0,
      signal: null,
      timedOut: false,
      truncated: false,
    });
    const failed = await runCommand("pwd; exit 3", { cwd: root });
    expect(failed.exitCode).toBe(3);
    expect(failed.output).toBe(`${new Workspace(root).root}\n`);
  }, 10_000);

  it("Lab 8.5 · a command that reads stdin gets end-of-file at once, and a shell that cannot start is exit code 127", async () => {
    // stdin is not a pipe left open: `cat` ends at once instead of waiting for the timeout.
    const reads = await runCommand("cat; echo after", { cwd: root, timeoutMs: 3000, killGraceMs: 200 });
    expect([reads.output, reads.exitCode, reads.timedOut]).toEqual(["after\n", 0, false]);
    const shell = path.join(base, "no-such-shell");
    const missing = await runCommand("echo never", { cwd: root, shell });
    expect(missing).toEqual({
      output: `spawn ${shell} ENOENT\n`,
      exitCode: 127,
      signal: null,
      timedOut: false,
      aborted: false,
      truncated: false,
      totalBytes: 0,
      durationMs: missing.durationMs,
      pid: undefined,
    });
    expect(missing.durationMs).toBeGreaterThanOrEqual(0);
  }, 10_000);

  it("Lab 8.5 · the call returns when the command exits, even if a process out of its reach holds the output pipe", async () => {
    const pidFile = path.join(base, "holder.pid");
    // setsid leaves the group and env -i drops the call's marker: nothing kills it, and its stdout is the pipe.
    const command =
      `(setsid env -i /bin/sh -c 'echo $$ > ${pidFile}; exec /bin/sleep 30' &); ` +
      `while [ ! -s ${pidFile} ]; do sleep 0.01; done; echo started`;
    const holder = () => {
      try {
        return Number(readFileSync(pidFile, "utf8").trim());
      } catch {
        return 0;
      }
    };
    try {
      const started = Date.now();
      const result = await runCommand(command, { cwd: root });
      expect(Date.now() - started).toBeLessThan(3000);
      expect([result.output, result.exitCode]).toEqual(["started\n", 0]);
      // The holder really escaped: the call ended while it still held the pipe.
      expect(isAlive(holder())).toBe(true);
    } finally {
      // afterEach's sweep finds processes by a variable this one dropped
      if (holder() > 0) process.kill(holder(), "SIGKILL");
    }
  }, 10_000);

  it("Lab 8.5 · a timeout kills the whole process group, grandchildren included", async () => {
    const started = Date.now();
    let late: NodeJS.Timeout | undefined;
    const result = await Promise.race([
      runCommand("sleep 30 & echo $!; wait", { cwd: root, timeoutMs: 300, killGraceMs: 500 }),
      new Promise<never>((_, reject) => {
        late = setTimeout(
          () =>
            reject(
              new Error(
                "the command still runs 3 s after its 300 ms timeout: the timeout did not kill its process group " +
                  "(is the shell spawned detached, leading a group of its own?)",
              ),
            ),
          3000,
        );
      }),
    ]).finally(() => clearTimeout(late));
    expect(Date.now() - started).toBeLessThan(3000);
    expect(result.timedOut).toBe(true);
    expect(result.exitCode).toBe(null);
    expect(result.signal).toBe("SIGTERM");
    const grandchild = Number(result.output.trim());
    expect(grandchild).toBeGreaterThan(0);
    expect(await waitUntilDead(grandchild)).toBe(true);
  }, 10_000);

  it("Lab 8.5 · a child that ignores SIGTERM gets SIGKILL after the grace period", async () => {
    const started = Date.now();
    const result = await runCommand("trap '' TERM; sleep 30 & echo $!; wait; wait", {
      cwd: root,
      timeoutMs: 200,
      killGraceMs: 300,
    });
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(450);
    expect(elapsed).toBeLessThan(3000);
    expect(result.timedOut).toBe(true);
    expect(result.signal).toBe("SIGKILL");
    expect(await waitUntilDead(Number(result.output.trim()))).toBe(true);
  }, 10_000);

  it("Lab 8.5 · timeout and abort signal the whole group: a child dies with SIGTERM even when the shell ignores it", async () => {
    // The child starts before the trap, so only the shell ignores SIGTERM. A shell-only SIGTERM
    // would leave both running until the SIGKILL at the end of the 4 s grace period.
    const command = "echo $$; sleep 30 & echo $!; trap '' TERM; wait; wait";
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 200);
    const started = Date.now();
    const [timedOut, aborted] = await Promise.all([
      runCommand(command, { cwd: root, timeoutMs: 200, killGraceMs: 4000 }),
      runCommand(command, { cwd: root, signal: controller.signal, killGraceMs: 4000 }),
    ]);
    expect(Date.now() - started).toBeLessThan(2000);
    expect([timedOut.timedOut, aborted.aborted]).toEqual([true, true]);
    for (const result of [timedOut, aborted]) {
      const pids = result.output.trim().split("\n").map(Number);
      expect(pids.length).toBe(2);
      for (const pid of pids) expect(await waitUntilDead(pid, 300)).toBe(true);
    }
  }, 10_000);

  it("Lab 8.5 · a process that exits during the grace period takes a TERM-ignoring command down with it", async () => {
    const pidFile = path.join(base, "pid");
    const bashModule = path.join(packageDir, "src", "coding-tools", "bash.ts");
    // The child process starts a command, lets the timeout's SIGTERM be ignored, then exits
    // (as a second Ctrl-C does) long before the 20 s grace period would send SIGKILL.
    const script = [
      `import { runCommand } from ${JSON.stringify(bashModule)};`,
      `void runCommand("trap '' TERM; sleep 30 & echo $! > ${pidFile}; wait; wait", { cwd: ${JSON.stringify(root)}, timeoutMs: 100, killGraceMs: 20000 });`,
      `setTimeout(() => process.exit(0), 600);`,
    ].join("\n");
    try {
      // A generous bound: on a loaded machine, tsx and the imports alone can take seconds.
      execFileSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
        cwd: packageDir,
        timeout: 25_000,
        stdio: "pipe",
      });
    } catch (error) {
      // The child's stderr names what failed (e.g. a construction site).
      throw new Error(String((error as { stderr?: Buffer }).stderr ?? error));
    }
    const pid = Number(readFileSync(pidFile, "utf8").trim());
    expect(pid).toBeGreaterThan(0);
    expect(await waitUntilDead(pid, 1000)).toBe(true);
  }, 30_000);

  it("Lab 8.5 · processes left in the background are killed when the command ends", async () => {
    const started = Date.now();
    const result = await runCommand("sleep 30 & echo $!", { cwd: root });
    expect(Date.now() - started).toBeLessThan(3000);
    expect(result.exitCode).toBe(0);
    expect(await waitUntilDead(Number(result.output.trim()))).toBe(true);
  }, 10_000);

  it("Lab 8.5 · processes that leave the group and the session (setsid after a double fork) die when the call ends, by exit, timeout or abort", async () => {
    // `( … & )` forks twice, so init adopts the process; `setsid` gives it its own session and
    // group, out of reach of kill(-pid). Its output goes elsewhere, so the pipes close.
    const escape = (name: string) =>
      `(setsid sh -c 'echo $$ > ${path.join(base, name)}; exec sleep 30' > /dev/null 2>&1 &); ` +
      `while [ ! -s ${path.join(base, name)} ]; do sleep 0.01; done`;
    const controller = new AbortController();
    const [ended, timedOut, aborted] = await Promise.all([
      runCommand(escape("exited"), { cwd: root }),
      runCommand(`${escape("timed-out")}; sleep 30`, { cwd: root, timeoutMs: 500, killGraceMs: 200 }),
      runCommand(`${escape("aborted")}; sleep 30`, { cwd: root, signal: controller.signal, killGraceMs: 200 }),
      new Promise((resolve) => setTimeout(resolve, 500)).then(() => controller.abort()),
    ]);
    expect([ended.exitCode, timedOut.timedOut, aborted.aborted]).toEqual([0, true, true]);
    for (const name of ["exited", "timed-out", "aborted"]) {
      const pid = Number(readFileSync(path.join(base, name), "utf8").trim());
      expect(pid).toBeGreaterThan(0);
      expect(await waitUntilDead(pid, 1000)).toBe(true);
    }
  }, 10_000);

  it("Lab 8.5 · a time bound a timer cannot hold is refused, not fired after 1 ms (2³¹−1 ms at most, finite)", async () => {
    for (const timeoutMs of [2 ** 31, Infinity, Number.NaN, 0, -5]) {
      expectThrow(
        () => runCommand("echo never", { cwd: root, timeoutMs }),
        /timeoutMs must be a finite number of milliseconds above 0 and at most 2147483647/,
      );
    }
    expectThrow(() => runCommand("echo never", { cwd: root, killGraceMs: Infinity }), "killGraceMs must be");
    // The largest bound a timer holds is a real one: the command ends on its own.
    const longest = await runCommand("echo done", { cwd: root, timeoutMs: 2 ** 31 - 1 });
    expect([longest.output, longest.timedOut]).toEqual(["done\n", false]);
  }, 10_000);

  it("Lab 8.5 · the bash tool refuses an unbounded maxTimeoutMs, and a requested timeout above its limit gets an error result", async () => {
    expectThrow(
      () => createBashTool(new Workspace(root), { maxTimeoutMs: Infinity }),
      "bash maxTimeoutMs must be a finite number",
    );
    expectThrow(() => createBashTool(new Workspace(root), { timeoutMs: 2 ** 31 }), "bash timeoutMs must be");
    const bash = createBashTool(new Workspace(root), { maxTimeoutMs: 2_000 });
    expect(bash.description).toContain("at most 2 s");
    const marker = path.join(root, "ran");
    await expectRejection(
      run(bash, { command: `touch ${marker}`, timeout: 1e9 }),
      "timeout 1000000000 s is outside what this tool allows (more than 0, at most 2 s). Ask for at most 2 s",
    );
    await expectRejection(run(bash, { command: `touch ${marker}`, timeout: 1e-9 }), "is outside what this tool allows");
    expect(await readdir(root)).toEqual([]);
    const ok = await run(bash, { command: "echo fine", timeout: 2 });
    expect(ok.content).toEqual([{ type: "text", text: "fine" }]);
  }, 10_000);

  it("Lab 8.5 · stdout and stderr share one cap; the tail is kept and the total counted", async () => {
    const result = await runCommand(
      "head -c 8000 /dev/zero | tr '\\0' o; sleep 0.1; head -c 8000 /dev/zero | tr '\\0' e >&2; sleep 0.1; printf END",
      { cwd: root, maxOutputBytes: 10_000 },
    );
    expect(result.truncated).toBe(true);
    expect(result.totalBytes).toBe(16_003);
    expect(Buffer.byteLength(result.output)).toBe(10_000);
    expect(result.output).toBe("o".repeat(1997) + "e".repeat(8000) + "END");
  }, 10_000);

  it("Lab 8.5 · the cap is exact, and output cut chunk by chunk is reported as cut", async () => {
    const capped = (command: string) => runCommand(command, { cwd: root, maxOutputBytes: 10 });
    const pick = (r: { output: string; truncated: boolean; totalBytes: number }) => [
      r.output,
      r.truncated,
      r.totalBytes,
    ];
    expect(pick(await capped("printf 123456"))).toEqual(["123456", false, 6]);
    expect(pick(await capped("printf 1234567890"))).toEqual(["1234567890", false, 10]);
    // Separate chunks (the sleeps let each arrive alone): the kept ones may add up to exactly the cap.
    expect(pick(await capped("printf 12345; sleep 0.1; printf abcdefghij"))).toEqual(["abcdefghij", true, 15]);
    expect(pick(await capped("for i in 1 2 3 4 5; do printf '<%s>\\n' $i; sleep 0.05; done"))).toEqual([
      ">\n<4>\n<5>\n",
      true,
      20,
    ]);
  }, 10_000);

  it("Lab 8.5 · a cut inside a UTF-8 character drops its broken bytes, and only then", async () => {
    const capped = (command: string, cap: number) => runCommand(command, { cwd: root, maxOutputBytes: cap });
    const pick = (r: { output: string; truncated: boolean }) => [r.output, r.truncated];
    const emoji = "\\xf0\\x9f\\x98\\x80";
    // 12 bytes, the last 10 start with 2 bytes of the first emoji
    expect(pick(await capped(`printf '${emoji.repeat(3)}'`, 10))).toEqual(["😀😀", true]);
    // a clean cut keeps a U+FFFD the output holds
    expect(pick(await capped("printf '0123ab\\xef\\xbf\\xbdcd'", 7))).toEqual(["ab\uFFFDcd", true]);
    // nothing cut: the output is left as it is
    expect(pick(await capped("printf '\\xef\\xbf\\xbdok'", 10))).toEqual(["\uFFFDok", false]);
  }, 10_000);

  it("Lab 8.5 · abort kills the command at once; a pre-aborted signal starts nothing", async () => {
    const controller = new AbortController();
    const pidFile = path.join(base, "shell.pid");
    const running = runCommand(`echo $$ > ${pidFile}; sleep 30`, {
      cwd: root,
      signal: controller.signal,
      killGraceMs: 300,
    });
    // Abort once the shell runs (a fixed 150 ms was shorter than a bash start on a loaded machine).
    let settled = false;
    running.then(
      () => (settled = true),
      () => (settled = true),
    );
    const deadline = Date.now() + 5000;
    const pid = () => {
      try {
        return Number(readFileSync(pidFile, "utf8").trim());
      } catch {
        return 0;
      }
    };
    while (!settled && pid() === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    const started = Date.now();
    controller.abort();
    const result = await running;
    expect(Date.now() - started).toBeLessThan(2000);
    expect(result.aborted).toBe(true);
    expect(pid()).toBeGreaterThan(0);
    expect(await waitUntilDead(pid())).toBe(true);
    const never = await runCommand(`touch ${path.join(root, "ran")}`, { cwd: root, signal: AbortSignal.abort() });
    expect(never).toEqual({
      output: "",
      exitCode: null,
      signal: null,
      timedOut: false,
      aborted: true,
      truncated: false,
      totalBytes: 0,
      durationMs: never.durationMs,
      pid: undefined,
    });
    expect(await readdir(root)).toEqual([]);
    // A signal that outlives its command keeps no listener (a later abort must not kill a recycled pid).
    const session = new AbortController();
    await runCommand("true", { cwd: root, signal: session.signal });
    expect(getEventListeners(session.signal, "abort")).toEqual([]);
  }, 10_000);

  it("Lab 8.5 · by default the bash tool's commands do not see secret-looking variables; an explicit env wins", async () => {
    const names = ["OPENAI_API_KEY", "MY_SERVICE_TOKEN", "db_password", "PI_COURSE_PLAIN"] as const;
    const saved = names.map((name) => process.env[name]);
    Object.assign(process.env, {
      OPENAI_API_KEY: "sk-lib",
      MY_SERVICE_TOKEN: "tok",
      db_password: "pw",
      PI_COURSE_PLAIN: "plain",
    });
    try {
      const command = 'echo "k=$OPENAI_API_KEY t=$MY_SERVICE_TOKEN p=$db_password plain=$PI_COURSE_PLAIN"';
      // What the command prints when it sees each secret as given (empty: the variable was dropped).
      const seen = (key: string, token: string, password: string) => [
        { type: "text", text: `k=${key} t=${token} p=${password} plain=plain` },
      ];
      const safe = await run(createBashTool(new Workspace(root)), { command });
      expect(safe.content).toEqual(seen("", "", ""));
      const given = await run(createBashTool(new Workspace(root), { env: { ...process.env } }), { command });
      expect(given.content).toEqual(seen("sk-lib", "tok", "pw"));
    } finally {
      names.forEach((name, i) => {
        if (saved[i] === undefined) delete process.env[name];
        else process.env[name] = saved[i];
      });
    }
  }, 10_000);

  it("Lab 8.5 · the bash tool reports exit codes, timeouts and cuts to the model, as errors when they fail", async () => {
    const bash = createBashTool(new Workspace(root), { maxOutputBytes: 64, killGraceMs: 200 });
    const ok = await run(bash, { command: "printf 'hi\\n'" });
    expect(ok.content).toEqual([{ type: "text", text: "hi" }]);
    expect(ok.isError).toBe(false);
    const failed = await run(bash, { command: "echo nope; exit 2" });
    expect(failed.content).toEqual([{ type: "text", text: "nope\n[exit code 2]" }]);
    expect(failed.isError).toBe(true);
    const slow = await run(bash, { command: "sleep 5", timeout: 0.2 });
    expect(slow.content).toEqual([
      { type: "text", text: "(no output)\n[timed out after 0.2 s: the command was killed]" },
    ]);
    expect(slow.isError).toBe(true);
    const long = await run(bash, { command: "seq 1 100" });
    expect(textOfResult(long).split("\n")[0]).toBe("[output cut: showing the last 64 of 292 bytes]");
    expect(long.details).toMatchObject({ command: "seq 1 100", exitCode: 0, truncated: true, totalBytes: 292 });
  }, 10_000);
});
