/**
 * Session files shared or cut by a crash (issue 31, items 1–5 and 7): one writer per file, every
 * prefix of a file the library wrote opens, a torn tail marked twice still opens, absurd nesting
 * is refused naming the line with nothing left open, private permissions, and a FIFO in the
 * sessions folder hangs nothing.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { readdirSync } from "node:fs";
import { copyFile, mkdtemp, readFile, rm, stat, truncate, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { SessionFolder } from "../src/cli/sessions.js";
import { MAX_NESTING, SessionFileError } from "../src/session/session-entry.js";
import { SessionLockedError } from "../src/session/session-lock.js";
import { LineScan, readSessionFile } from "../src/session/session-reader.js";
import { SessionFile, type SessionEntryInput } from "../src/session/session.js";
import { compileForNode } from "./support/session-crash.js";

const HERE = dirname(fileURLToPath(import.meta.url));
let dir = "";
const opened: SessionFile[] = [];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "pi-course-harden-"));
});
afterEach(async () => {
  for (const session of opened.splice(0)) await session.close();
  await rm(dir, { recursive: true, force: true });
});

const note = (parentId: string | null, text: string): SessionEntryInput => ({
  type: "message",
  parentId,
  message: { role: "user", content: [{ type: "text", text }], timestamp: 1 },
});

const openFds = () => readdirSync("/proc/self/fd").length;

/** A real file: header and two entries, then a third entry cut in half (a crash mid-write). */
async function tornFile(path: string): Promise<{ ids: string[]; torn: Buffer }> {
  const session = await SessionFile.create(path, { cwd: "/w", id: "s", timestamp: "t" });
  const a = await session.append(note(null, "one"));
  const b = await session.append(note(a, "two"));
  const before = (await stat(path)).size;
  await session.append(note(b, "three, cut by a crash"));
  await session.close();
  const after = (await stat(path)).size;
  await truncate(path, before + Math.floor((after - before) / 2));
  return { ids: [a, b], torn: await readFile(path) };
}

describe("one writer per session file", () => {
  let build = "";
  let child = "";
  beforeAll(async () => {
    build = await mkdtemp(join(tmpdir(), "pi-course-harden-child-"));
    child = compileForNode(join(HERE, "support", "session-lock-child.ts"), build);
  });
  afterAll(async () => {
    await rm(build, { recursive: true, force: true });
  });

  /** Runs the child and resolves with its first line of output and the process. */
  function start(file: string, mode: "hold" | "try"): Promise<{ line: string; process: ChildProcess }> {
    const proc = spawn(process.execPath, [child, file, mode], { stdio: ["ignore", "pipe", "inherit"] });
    return new Promise((resolve, reject) => {
      const lines = createInterface({ input: proc.stdout! });
      lines.once("line", (line) => resolve({ line, process: proc }));
      proc.once("exit", (code) => reject(new Error(`the child exited with ${code} before it printed anything`)));
    });
  }
  const exited = (proc: ChildProcess) =>
    new Promise<number | null>((resolve) => {
      if (proc.exitCode !== null || proc.signalCode !== null) resolve(proc.exitCode);
      else proc.once("exit", (code) => resolve(code));
    });

  it("a second process is refused while one holds the file, with the holder's pid; viewers read; a killed holder's lock is taken over", async () => {
    const file = join(dir, "s.jsonl");
    const first = await SessionFile.create(file, { cwd: "/w" });
    const root = await first.append(note(null, "hello"));
    await first.close();

    const holder = await start(file, "hold");
    expect(holder.line).toBe(`holding ${holder.process.pid}`);
    try {
      // A second real process: refused, told who holds it.
      const second = await start(file, "try");
      expect(second.line).toBe(
        `refused SessionLockedError: ${file} is open for writing by process ${holder.process.pid} on ` +
          `${(await import("node:os")).hostname()} (lock file ${file}.lock): one writer per session. Close the session ` +
          "there first, or open it read-only (SessionFile.open(path, { readOnly: true })). If that process is gone " +
          "from another machine, delete the lock file.",
      );
      expect(await exited(second.process)).toBe(3);
      // This process too.
      const refused = await SessionFile.open(file).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(refused).toBeInstanceOf(SessionLockedError);
      expect((refused as SessionLockedError).owner?.pid).toBe(holder.process.pid);
      // A viewer reads it, and cannot append.
      const viewer = await SessionFile.open(file, { readOnly: true });
      expect(viewer.entries().map((e) => e.id)).toEqual([root]);
      await expect(viewer.append(note(root, "no"))).rejects.toThrow(/opened read-only/);
      await viewer.close();
    } finally {
      holder.process.kill("SIGKILL");
      await exited(holder.process);
    }
    // The holder died without releasing: its lock is stale and taken over.
    const third = await start(file, "try");
    expect(third.line).toMatch(/^appended [0-9a-f]{8}$/);
    expect(await exited(third.process)).toBe(0);
    const after = await readSessionFile(file);
    expect(after.entries.map((e) => e.parentId)).toEqual([null, root]);
    // Closing released the lock: this process can write now.
    const mine = await SessionFile.open(file);
    opened.push(mine);
    await mine.append(note(root, "mine"));
  }, 20_000);

  it("within one process a second writer is refused too, and closing the first lets it in", async () => {
    const file = join(dir, "s.jsonl");
    const first = await SessionFile.create(file, { cwd: "/w" });
    await expect(SessionFile.open(file)).rejects.toBeInstanceOf(SessionLockedError);
    await expect(SessionFile.create(file, { cwd: "/w" })).rejects.toThrow(/already exists/);
    await first.close();
    opened.push(await SessionFile.open(file));
  });
});

describe("torn marks", () => {
  it("every prefix of the last two writes (torn mark, entry) of a real file opens, and appending to it gives a file that opens", async () => {
    const file = join(dir, "s.jsonl");
    const { ids, torn } = await tornFile(file);
    const recovering = await SessionFile.open(file);
    expect(recovering.recovery.tail).not.toBeNull();
    const next = await recovering.append(note(ids[1]!, "after the crash"));
    await recovering.close();
    const whole = await readFile(file);
    expect(whole.length).toBeGreaterThan(torn.length + 60);

    // The end of the torn-mark write ("\n" + mark + "\n"): a clean line end.
    const markEnd = whole.indexOf("\n", torn.length + 1) + 1;
    const cutFile = join(dir, "cut.jsonl");
    let nested = 0;
    for (let cut = torn.length; cut <= whole.length; cut++) {
      await writeFile(cutFile, whole.subarray(0, cut));
      const session = await SessionFile.open(cutFile);
      const expected = cut === whole.length ? [...ids, next] : ids;
      expect(session.entries().map((e) => e.id)).toEqual(expected);
      expect(session.recovery.tail === null).toBe(cut === whole.length || cut === markEnd);
      // Recovering from the cut file: its own two writes may be cut again.
      const before = (await stat(cutFile)).size;
      const again = await session.append(note(ids[1]!, `recovered at ${cut}`));
      await session.close();
      const twice = await readFile(cutFile);
      const reopened = await readSessionFile(cutFile);
      expect(reopened.entries.map((e) => e.id)).toEqual([...expected, again]);
      expect(reopened.recovery.tail).toBeNull();
      // The second recovery cut at every byte (read from memory by the same scanner as a file),
      // after every 4th first cut and the last two.
      if ((cut - torn.length) % 4 !== 0 && cut < whole.length - 1) continue;
      for (let second = before; second <= twice.length; second++) {
        const scan = new LineScan(cutFile);
        scan.push(twice.subarray(0, second));
        const contents = scan.end();
        const got = contents.entries.map((e) => e.id);
        // What was written before stays; a torn line that was a whole entry but for its newline
        // may come back as an entry once the mark write gives it one.
        expect(got.slice(0, expected.length)).toEqual(expected);
        expect(got.slice(expected.length).every((id) => id === next || id === again)).toBe(true);
        expect(got.includes(again)).toBe(second === twice.length);
        nested++;
      }
    }
    expect(nested).toBeGreaterThan(10_000 / 4);
  }, 60_000);

  it("a torn tail marked by two openers (a second mark after one empty line) still opens, with both entries", async () => {
    const file = join(dir, "s.jsonl");
    const { ids, torn } = await tornFile(file);
    const other = join(dir, "other.jsonl");
    await copyFile(file, other);
    // Each opener, on its own copy, writes a torn mark and an entry, as two processes appending
    // to one file would (O_APPEND): the second one's bytes land after the first one's.
    const a = await SessionFile.open(file);
    const fromA = await a.append(note(ids[1]!, "from A"));
    await a.close();
    const b = await SessionFile.open(other);
    const fromB = await b.append(note(ids[1]!, "from B"));
    await b.close();
    const bytesA = (await readFile(file)).subarray(torn.length);
    const bytesB = (await readFile(other)).subarray(torn.length);
    const markA = bytesA.subarray(0, bytesA.indexOf("\n", 1) + 1);
    const markB = bytesB.subarray(0, bytesB.indexOf("\n", 1) + 1);
    for (const [order, bytes] of [
      ["A's mark and entry, then B's", [bytesA, bytesB]],
      [
        "A's mark, B's mark, then both entries",
        [markA, markB, bytesA.subarray(markA.length), bytesB.subarray(markB.length)],
      ],
    ] as const) {
      await writeFile(file, Buffer.concat([torn, ...bytes]));
      const contents = await readSessionFile(file).catch((error: unknown) => {
        throw new Error(`${order}: ${(error as Error).message}`);
      });
      expect(contents.entries.map((e) => e.id)).toEqual([...ids, fromA, fromB]);
      expect(contents.recovery.kept).toHaveLength(1);
      expect(contents.recovery.tail).toBeNull();
    }
    // A mark that names bytes nobody kept is still refused as hand-edited.
    const bogus = Buffer.from(`\n${JSON.stringify({ type: "torn", offset: 3, length: 4, timestamp: "t" })}\n`);
    await writeFile(file, Buffer.concat([torn, bytesA, bogus]));
    await expect(readSessionFile(file)).rejects.toThrow(/edited by hand/);
  });
});

describe("hostile files", () => {
  it("an entry nested 100,000 levels deep is refused with a SessionFileError naming its line, and nothing stays open", async () => {
    const file = join(dir, "deep.jsonl");
    const session = await SessionFile.create(file, { cwd: "/w" });
    const root = await session.append(note(null, "fine"));
    await session.close();
    const depth = 100_000;
    const deep = `{"type":"message","id":"dd","parentId":"${root}","timestamp":"t","message":{"role":"note","x":${"[".repeat(depth)}${"]".repeat(depth)}}}`;
    await writeFile(file, `${await readFile(file, "utf8")}${deep}\n${deep.replace('"dd"', '"ee"')}\n`);
    const fds = openFds();
    for (const readOnly of [false, true]) {
      const error = await SessionFile.open(file, { readOnly }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(SessionFileError);
      expect((error as SessionFileError).line).toBe(3);
      expect((error as Error).message).toContain(`:3: the entry is nested deeper than ${MAX_NESTING} levels`);
    }
    expect(openFds()).toBe(fds);
    // The failed open released its lock.
    await truncate(file, (await readFile(file, "utf8")).indexOf(deep));
    opened.push(await SessionFile.open(file));
    // And append never writes what the reader would refuse.
    let nested: unknown = "leaf";
    for (let i = 0; i < MAX_NESTING + 5; i++) nested = [nested];
    await expect(
      opened[0]!.append({
        type: "message",
        parentId: root,
        message: { role: "note", x: nested } as never,
      }),
    ).rejects.toThrow(`nested deeper than ${MAX_NESTING} levels`);
  });

  it("session files are created 0600 and their folders 0700 (lock files 0600 too)", async () => {
    const folder = new SessionFolder(join(dir, "root"), "/some/project");
    const session = await folder.create();
    opened.push(session);
    expect((await stat(session.path)).mode & 0o777).toBe(0o600);
    expect((await stat(`${session.path}.lock`)).mode & 0o777).toBe(0o600);
    expect((await stat(folder.dir)).mode & 0o777).toBe(0o700);
    expect((await stat(folder.root)).mode & 0o777).toBe(0o700);
    const direct = await SessionFile.create(join(dir, "direct.jsonl"), { cwd: "/w" });
    opened.push(direct);
    expect((await stat(direct.path)).mode & 0o777).toBe(0o600);
  });

  it("a FIFO named *.jsonl in the sessions folder is listed as a problem, never waited on", async () => {
    const folder = new SessionFolder(join(dir, "root"), "/some/project");
    const real = await folder.create();
    await real.append(note(null, "a real one"));
    await real.close();
    const fifo = join(folder.dir, "2026-01-01T00-00-00-000Z_fifo.jsonl");
    execFileSync("mkfifo", [fifo]);
    const listed = await Promise.race([
      folder.list(),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error("list() hangs on the FIFO")), 3000)),
    ]);
    expect(listed.map((s) => s.id).sort()).toEqual([real.header.id, "fifo"].sort());
    expect(listed.find((s) => s.id === "fifo")?.problem).toMatch(/not a regular file/);
    expect((await folder.newest())?.id).toBe(real.header.id);
    await expect(folder.find("fifo")).rejects.toThrow(/cannot be resumed: .*not a regular file/);
    await expect(SessionFile.open(fifo)).rejects.toThrow(/not a regular file/);
  });
});
