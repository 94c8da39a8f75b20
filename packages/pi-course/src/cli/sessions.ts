/**
 * The sessions folder of `npm start`: one chapter-10 session file per conversation, under
 * `<root>/<cwd-hash>/` (root: `~/.pi-course/sessions`, or `--session-dir`), so the sessions of
 * one working folder are found again (`--continue`: the newest, `--resume ID`: a given one).
 *
 * The folder key is a hash of the absolute working folder: short, safe as a file name on every
 * platform, and the same for the same folder. The header of each file keeps the folder itself.
 * File names are `<created>_<id>.jsonl`, so `ls` sorts them by creation; "newest" means the
 * session written to last (its file's modification time).
 */
import { createHash, randomUUID } from "node:crypto";
import { mkdir, readdir, stat } from "node:fs/promises";
import path from "node:path";
import { readSessionFile, type SessionRecovery } from "../session/session-reader.js";
import { SessionFile } from "../session/session.js";
import { textOf } from "../messages.js";

/** One session of the folder, as `list()` describes it. */
export interface SessionSummary {
  id: string;
  file: string;
  /** When it was created (the header's timestamp). */
  created: string;
  /** When it was last written to (ms since the epoch). */
  modified: number;
  /** Message entries in the file. */
  messages: number;
  /** The first user message's text, on one line (empty if none yet). */
  title: string;
  /** Torn lines found (a crash mid-write), reported when the session is resumed. */
  recovery: SessionRecovery;
  /** Why the file could not be read, if it could not (it is still listed, never deleted). */
  problem?: string;
}

/** The folder key of a working folder: 16 hex characters of its path's SHA-256. */
export function folderKey(cwd: string): string {
  return createHash("sha256").update(path.resolve(cwd)).digest("hex").slice(0, 16);
}

export class SessionFolder {
  /** `<root>/<cwd-hash>`. */
  readonly dir: string;

  constructor(
    /** Holds one folder per working folder. */
    readonly root: string,
    /** The working folder (absolute). */
    readonly cwd: string,
  ) {
    this.dir = path.join(root, folderKey(cwd));
  }

  /** Every session of this working folder, the most recently written first. */
  async list(): Promise<SessionSummary[]> {
    // #region lab 13.2 SessionFolder.list
    let names: string[];
    try {
      names = (await readdir(this.dir)).filter((name) => name.endsWith(".jsonl"));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw error;
    }
    const summaries = await Promise.all(names.map((name) => this.describe(path.join(this.dir, name))));
    return summaries.sort((a, b) => b.modified - a.modified || b.created.localeCompare(a.created));
    // #endregion
  }

  /**
   * The session whose id is `id` or starts with it. Throws an `Error` that says what to do when
   * none or several match, or when the file cannot be read.
   */
  async find(id: string): Promise<SessionSummary> {
    // #region lab 13.2 SessionFolder.find
    const all = await this.list();
    const exact = all.find((s) => s.id === id);
    const matches = exact !== undefined ? [exact] : all.filter((s) => id !== "" && s.id.startsWith(id));
    if (matches.length === 0) {
      const known = all
        .slice(0, 5)
        .map((s) => s.id.slice(0, 8))
        .join(", ");
      throw new Error(
        `no session "${id}" for ${this.cwd} in ${this.dir}` +
          (known ? ` (the newest: ${known}; /sessions lists them all)` : " (there is none yet)") +
          ".",
      );
    }
    if (matches.length > 1) {
      throw new Error(
        `"${id}" starts ${matches.length} session ids (${matches.map((s) => s.id.slice(0, 12)).join(", ")}); give more of it.`,
      );
    }
    const found = matches[0]!;
    if (found.problem !== undefined)
      throw new Error(`the session file ${found.file} cannot be resumed: ${found.problem}`);
    return found;
    // #endregion
  }

  /** The most recently written session that can be read and holds a message, if any. */
  async newest(): Promise<SessionSummary | undefined> {
    return (await this.list()).find((s) => s.problem === undefined && s.messages > 0);
  }

  /** A new, empty session file in this folder. */
  async create(): Promise<SessionFile> {
    await mkdir(this.dir, { recursive: true });
    const id = randomUUID();
    const created = new Date().toISOString();
    const file = path.join(this.dir, `${created.replace(/[:.]/g, "-")}_${id}.jsonl`);
    return SessionFile.create(file, { cwd: this.cwd, id, timestamp: created });
  }

  private async describe(file: string): Promise<SessionSummary> {
    const modified = await stat(file).then(
      (s) => s.mtimeMs,
      () => 0,
    );
    const fallbackId = /_([^_]+)\.jsonl$/.exec(file)?.[1] ?? path.basename(file, ".jsonl");
    try {
      const { header, entries, recovery } = await readSessionFile(file);
      const messages = entries.filter((e) => e.type === "message");
      const first = messages.find((e) => e.type === "message" && "role" in e.message && e.message.role === "user");
      const title =
        first?.type === "message" && "role" in first.message && first.message.role === "user"
          ? textOf(first.message)
          : "";
      return {
        id: header.id,
        file,
        created: header.timestamp,
        modified,
        messages: messages.length,
        title: oneLine(title),
        recovery,
      };
    } catch (error) {
      const recovery = { tail: null, kept: [] };
      return {
        id: fallbackId,
        file,
        created: "",
        modified,
        messages: 0,
        title: "",
        recovery,
        problem: (error as Error).message,
      };
    }
  }
}

function oneLine(text: string, max = 60): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
