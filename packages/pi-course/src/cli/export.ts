/**
 * `pi-course export SESSION_FILE [--out page.html]` and `/export [FILE]`: a session as one HTML
 * page (see session-page/page.ts) that opens in any browser, offline, and can be shared.
 *
 * The page is written beside the session file by default (`x.jsonl` → `x.html`), through a
 * temporary file renamed into place, so a reader never sees half a page. The session file is
 * only read: an `--out` that names it, or any `.jsonl`, is refused.
 */
import { rename, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { type SessionPageInput, sessionPage } from "../session-page/page.js";
import { readSessionFile } from "../session/session-reader.js";
import { neutralize } from "./trace.js";

/** What `export` wrote. */
export interface ExportResult {
  out: string;
  messages: number;
  branches: number;
  bytes: number;
}

/** The page's default path: the session file's, with `.html` for `.jsonl`. */
export function defaultPagePath(sessionFile: string): string {
  return sessionFile.endsWith(".jsonl") ? `${sessionFile.slice(0, -".jsonl".length)}.html` : `${sessionFile}.html`;
}

/** Writes the page of `session` (read from `sessionFile`) to `out`. */
export async function writeSessionPage(
  session: SessionPageInput,
  sessionFile: string,
  out = defaultPagePath(sessionFile),
): Promise<ExportResult> {
  const target = path.resolve(out);
  if (target === path.resolve(sessionFile) || target.endsWith(".jsonl")) {
    throw new Error(`refusing to write the page to ${out}: that is a session file; give a path ending in .html`);
  }
  const { html, tree } = sessionPage(session, { source: path.resolve(sessionFile) });
  const temporary = `${target}.${process.pid}.tmp`;
  try {
    // 0600, as the session it shows: a transcript holds code, paths and sometimes secrets
    await writeFile(temporary, html, { mode: 0o600 });
    await rename(temporary, target);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
  return { out: target, messages: tree.byNumber.length, branches: tree.leaves.length, bytes: Buffer.byteLength(html) };
}

export const EXPORT_USAGE = "usage: pi-course export SESSION_FILE [--out page.html]";

/** `export ARGS…`; resolves with the exit code (0, 1 the file could not be read or written, 2 usage). */
export async function runExport(
  argv: readonly string[],
  io: { stdout: { write(text: string): unknown }; stderr: { write(text: string): unknown } },
): Promise<number> {
  let file: string | undefined;
  let out: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--out" || arg === "-o") {
      out = argv[++i];
      if (out === undefined || out === "") {
        io.stderr.write(`error: ${arg} needs a path\n${EXPORT_USAGE}\n`);
        return 2;
      }
    } else if (arg === "-h" || arg === "--help") {
      io.stdout.write(
        `${EXPORT_USAGE}\nWrites the session as one self-contained HTML page (default: beside the file, .jsonl → .html).\n`,
      );
      return 0;
    } else if (arg.startsWith("-") && arg !== "-") {
      io.stderr.write(`error: unknown option ${arg}\n${EXPORT_USAGE}\n`);
      return 2;
    } else if (file === undefined) file = arg;
    else {
      io.stderr.write(`error: one session file at a time (got ${file} and ${arg})\n${EXPORT_USAGE}\n`);
      return 2;
    }
  }
  if (file === undefined) {
    io.stderr.write(
      `error: which session? give its file (the sessions are under ~/.pi-course/sessions/)\n${EXPORT_USAGE}\n`,
    );
    return 2;
  }
  try {
    const session = await readSessionFile(file);
    const result = await writeSessionPage(session, file, out);
    io.stdout.write(
      `wrote ${result.out} (${result.messages} messages, ${result.branches} branch${result.branches === 1 ? "" : "es"}, ${result.bytes} bytes)\n`,
    );
    return 0;
  } catch (error) {
    io.stderr.write(`error: ${neutralize((error as Error).message)}\n`);
    return 1;
  }
}
