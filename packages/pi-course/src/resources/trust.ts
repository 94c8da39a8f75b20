/**
 * The trust gate: whether the project resources of a folder may load.
 *
 * A repository the user just cloned can hold files that run code in the agent's process
 * (extensions) or steer the model (skills, prompt templates). Those load only for a folder the
 * user trusts. Context files (`AGENTS.md`) are plain text the user can read and load without
 * trust, as in pi.
 *
 * Decisions are kept in `~/.pi-course/trust.json`, one per folder; a decision covers the folder
 * and everything below it, and the closest decision wins (a project marked untrusted inside a
 * trusted parent stays untrusted). `decideTrust` puts the rule of one run together: a flag
 * (`--approve` / `--no-approve`) decides for that run only; else a saved decision; else, where
 * someone can be asked (interactive mode), the answer, which is saved; else the folder is not
 * trusted and the caller says so (print and json modes skip untrusted project resources).
 *
 * Other layers use this too (e.g. MCP servers of a project's `.pi-course/mcp.json`): call
 * `isTrusted(folder, piHome)` for the saved decision, or `decideTrust` for the whole rule.
 */
import { mkdirSync, realpathSync, renameSync, unlinkSync, writeFileSync } from "node:fs";
import { randomBytes } from "node:crypto";
import path from "node:path";
import { Type } from "typebox";
import { type JsonFailure, readJsonFile } from "../base/read-json.js";
import { PiCourseError } from "../base/errors.js";

/** The file name of the trust store inside the pi-course home (`~/.pi-course`). */
export const TRUST_FILE = "trust.json";

/** One remembered decision. */
export interface TrustDecision {
  /** The folder it covers, with everything below it (absolute, symlinks resolved). */
  folder: string;
  trusted: boolean;
  /** When it was decided (ISO 8601). */
  decidedAt: string;
}

/** What `trust.json` holds; `version` and `decidedAt` are read leniently (older files lack them). */
const TrustFileSchema = Type.Object(
  {
    folders: Type.Record(
      Type.String(),
      Type.Object(
        { trusted: Type.Boolean(), decidedAt: Type.Optional(Type.Unknown()) },
        {
          expected: '{"trusted": true or false, "decidedAt": "…"}',
        },
      ),
      { expected: 'an object of absolute folders: {"/abs/folder": {"trusted": true or false}}' },
    ),
  },
  { expected: '{"version": 1, "folders": {…}}' },
);

/** A trust file that cannot be read as a trust file: the message names it and says what to do. */
export class TrustStoreError extends PiCourseError {
  override name = "TrustStoreError";
  /** Stable: `"TRUST_FILE"`. */
  override readonly code = "TRUST_FILE";
}

/** `folder` made absolute, with symlinks resolved where the folder exists. */
export function canonicalFolder(folder: string): string {
  const absolute = path.resolve(folder);
  try {
    return realpathSync(absolute);
  } catch {
    return absolute;
  }
}

/** Whether `inner` is `outer` or lies below it (both canonical). */
function covers(outer: string, inner: string): boolean {
  const relative = path.relative(outer, inner);
  return relative === "" || (!relative.startsWith("..") && !path.isAbsolute(relative));
}

/**
 * The saved trust decisions, in a JSON file:
 * `{"version": 1, "folders": {"/abs/folder": {"trusted": true, "decidedAt": "…"}}}`.
 * Every call reads the file again, so two agents that share it see each other's decisions.
 */
export class TrustStore {
  /** The store at `piHome/trust.json` (`piHome`: usually `~/.pi-course`). */
  static inHome(piHome: string): TrustStore {
    return new TrustStore(path.join(piHome, TRUST_FILE));
  }

  constructor(readonly file: string) {}

  /**
   * Every saved decision. A missing file holds none. Throws `TrustStoreError` for a file that is
   * not a trust file (it is never overwritten then: the user fixes or removes it).
   */
  decisions(): TrustDecision[] {
    const where = `the trust file ${this.file}`;
    const error = (message: string, failure: JsonFailure) =>
      new TrustStoreError(
        failure === "unreadable"
          ? `${message}.`
          : `${message}; fix it or remove it (every folder is then asked about again).`,
      );
    const { folders } = readJsonFile(this.file, TrustFileSchema, { where, error, ifMissing: () => ({ folders: {} }) });
    const decisions: TrustDecision[] = [];
    for (const [folder, entry] of Object.entries(folders)) {
      if (!path.isAbsolute(folder)) {
        throw error(`${where}: folders has a key that is not an absolute folder, ${JSON.stringify(folder)}`, "shape");
      }
      decisions.push({
        folder,
        trusted: entry.trusted,
        decidedAt: typeof entry.decidedAt === "string" ? entry.decidedAt : "",
      });
    }
    return decisions;
  }

  /**
   * The decision that covers `folder`: the saved decision of the folder itself or of its closest
   * ancestor; undefined when none covers it.
   */
  lookup(folder: string): TrustDecision | undefined {
    // #region lab 12.5 TrustStore.lookup
    const wanted = canonicalFolder(folder);
    let best: TrustDecision | undefined;
    for (const decision of this.decisions()) {
      if (covers(decision.folder, wanted) && (best === undefined || decision.folder.length > best.folder.length))
        best = decision;
    }
    return best;
    // #endregion
  }

  /**
   * Saves the decision for `folder` (replacing an earlier one for the same folder), atomically:
   * a reader sees the old file or the new one. Creates the pi-course home if needed.
   */
  remember(folder: string, trusted: boolean, now: Date = new Date()): TrustDecision {
    const decision: TrustDecision = { folder: canonicalFolder(folder), trusted, decidedAt: now.toISOString() };
    const folders: Record<string, { trusted: boolean; decidedAt: string }> = {};
    for (const d of this.decisions()) folders[d.folder] = { trusted: d.trusted, decidedAt: d.decidedAt };
    folders[decision.folder] = { trusted, decidedAt: decision.decidedAt };
    mkdirSync(path.dirname(this.file), { recursive: true });
    const temp = path.join(path.dirname(this.file), `.trust-${randomBytes(6).toString("hex")}.tmp`);
    try {
      writeFileSync(temp, `${JSON.stringify({ version: 1, folders }, null, 2)}\n`, { mode: 0o600 });
      renameSync(temp, this.file);
    } catch (error) {
      try {
        unlinkSync(temp);
      } catch {
        // never written
      }
      throw error;
    }
    return decision;
  }
}

/**
 * The saved decision for `folder` in the trust store of `piHome` (usually `~/.pi-course`):
 * `true` trusted, `false` not trusted, `undefined` never decided (treat it as untrusted unless
 * the user can be asked; see `decideTrust`). The closest folder's decision wins. Throws
 * `TrustStoreError` for a broken trust file.
 */
export function isTrusted(folder: string, piHome: string): boolean | undefined {
  return TrustStore.inHome(piHome).lookup(folder)?.trusted;
}

/** Where a run's trust came from. */
export type TrustSource = "flag" | "saved" | "asked" | "default";

/** The trust of one run for one folder. */
export interface TrustOutcome {
  /** The folder decided about (canonical). */
  folder: string;
  trusted: boolean;
  source: TrustSource;
  /** The saved decision used (`source: "saved"`), or the one just saved (`"asked"`). */
  decision?: TrustDecision;
}

export interface DecideTrustOptions {
  /** The project folder (usually the git root, else the working folder). */
  folder: string;
  store: TrustStore;
  /** `--approve` (true) or `--no-approve` (false): decides for this run, saves nothing. */
  override?: boolean;
  /**
   * Asks the user (interactive mode only). Contract: resolves with the answer, which is saved
   * for the folder; `undefined` (the question was dismissed) means untrusted for this run,
   * nothing saved. Absent: nobody can be asked, and an undecided folder is not trusted.
   */
  ask?: (folder: string) => Promise<boolean | undefined>;
}

/**
 * The trust rule of one run, in order: the flag; the saved decision (closest folder wins); the
 * user's answer (saved); else not trusted (`source: "default"`). Throws `TrustStoreError` for a
 * broken trust file (unless a flag decides).
 */
export async function decideTrust(options: DecideTrustOptions): Promise<TrustOutcome> {
  // #region lab 12.5 decideTrust
  const folder = canonicalFolder(options.folder);
  if (options.override !== undefined) return { folder, trusted: options.override, source: "flag" };
  const saved = options.store.lookup(folder);
  if (saved !== undefined) return { folder, trusted: saved.trusted, source: "saved", decision: saved };
  if (options.ask !== undefined) {
    const answer = await options.ask(folder);
    if (answer === undefined) return { folder, trusted: false, source: "default" };
    const decision = options.store.remember(folder, answer);
    return { folder, trusted: answer, source: "asked", decision };
  }
  return { folder, trusted: false, source: "default" };
  // #endregion
}
