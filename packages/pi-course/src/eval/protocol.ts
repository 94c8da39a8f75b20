/**
 * Chapter 14: the protocol checks, run on every eval run besides the case's own check.
 *
 * A task's check says whether the work is right; these say whether the agent kept its
 * contracts while doing it, whatever the task:
 *
 * 1. every tool call in the transcript has exactly one result with its id, after it, and no
 *    result answers a call that was never made (`checkToolPairing`);
 * 2. the session file reopens, and the messages on its path to the leaf are exactly the run's
 *    messages (`checkSessionReplay`);
 * 3. nothing was written outside the workspace: the folders the run could reach besides it
 *    are the same after the run as before (`snapshotFolders`, `diffSnapshots`), and nothing was
 *    created or removed at the top of the system's temporary folder, where a command's
 *    `/tmp/x` lands whatever its `TMPDIR` says (`snapshotTopLevel`).
 *
 * Each returns a list of problems in words; an empty list passes. A run with a problem is a
 * protocol failure, reported apart from a wrong answer (the task's check) and from a broken
 * harness or server (infrastructure).
 */
import { errorText } from "../base/errors.js";
import { isDeepStrictEqual } from "node:util";
import { lstat, readdir } from "node:fs/promises";
import path from "node:path";
import { SessionFile, messagesOf } from "../session/session.js";
import type { AgentMessage } from "../types.js";

/**
 * The pairing problems of `messages`: a tool call without a result, with two, or a result
 * before its call or for no call at all. Messages without a `role` (custom ones) are ignored.
 * Read in order; first the problems found while reading, then, by call in order of appearance:
 *
 * - `tool call id <id> (<name>) is used twice.` (a second call with an id already seen; the
 *   first call keeps it, so later results count for the first)
 * - `the result for <toolCallId> (<toolName>) answers no earlier tool call.`
 * - `tool call <id> (<name>) has no result.`
 * - `tool call <id> (<name>) has <n> results; it must have exactly one.`
 *
 * For example, a result for `z` (a `read`) before the call `z` is `the result for z (read) answers
 * no earlier tool call.`; a second call `a` of `read` is `tool call id a (read) is used twice.`
 */
export function checkToolPairing(messages: readonly AgentMessage[]): string[] {
  // #region lab 14.2 checkToolPairing
  const problems: string[] = [];
  const calls = new Map<string, { name: string; results: number }>();
  for (const message of messages) {
    if (!("role" in message)) continue;
    if (message.role === "assistant") {
      for (const block of message.content) {
        if (block.type !== "toolCall") continue;
        if (calls.has(block.id)) problems.push(`tool call id ${block.id} (${block.name}) is used twice.`);
        else calls.set(block.id, { name: block.name, results: 0 });
      }
    } else if (message.role === "toolResult") {
      const call = calls.get(message.toolCallId);
      if (call === undefined)
        problems.push(`the result for ${message.toolCallId} (${message.toolName}) answers no earlier tool call.`);
      else call.results++;
    }
  }
  for (const [id, call] of calls) {
    if (call.results === 0) problems.push(`tool call ${id} (${call.name}) has no result.`);
    else if (call.results > 1)
      problems.push(`tool call ${id} (${call.name}) has ${call.results} results; it must have exactly one.`);
  }
  return problems;
  // #endregion
}

/**
 * Reopens the session file at `file` read-only (`SessionFile.open(file, { readOnly: true })`: a
 * checker is no writer and takes no lock; closed again before returning) and
 * compares the messages on its path to the leaf (`messagesOf`) with `messages` (the run's, in
 * order, compared deeply). Problems:
 *
 * - `the session file <file> does not reopen: <the error's message>` (the only problem then)
 * - `the session file <file> has torn lines.` (a torn tail, or torn lines kept from earlier)
 * - `message <i> of the session file differs from message <i> of the run.` (the first index
 *   where both have a message and they differ), else, when the counts differ:
 *   `the session file holds <n> messages on its path, the run has <m>.`
 */
export async function checkSessionReplay(file: string, messages: readonly AgentMessage[]): Promise<string[]> {
  // #region lab 14.2 checkSessionReplay
  let session: SessionFile;
  try {
    session = await SessionFile.open(file, { readOnly: true });
  } catch (error) {
    return [`the session file ${file} does not reopen: ${errorText(error)}`];
  }
  try {
    const problems: string[] = [];
    if (session.recovery.tail !== null || session.recovery.kept.length > 0)
      problems.push(`the session file ${file} has torn lines.`);
    const leaf = session.leaf;
    const stored = leaf === undefined ? [] : messagesOf(session.pathToLeaf(leaf.id));
    const same = Math.min(stored.length, messages.length);
    let at = 0;
    while (at < same && isDeepStrictEqual(stored[at], messages[at])) at++;
    if (at < same) problems.push(`message ${at} of the session file differs from message ${at} of the run.`);
    else if (stored.length !== messages.length) {
      problems.push(`the session file holds ${stored.length} messages on its path, the run has ${messages.length}.`);
    }
    return problems;
  } finally {
    await session.close();
  }
  // #endregion
}

/** What one path looked like: its kind, size and modification time. */
export interface PathState {
  kind: "file" | "folder" | "link" | "other";
  size: number;
  mtimeMs: number;
}

/** Every path under some folders, by absolute path. */
export type FolderSnapshot = Map<string, PathState>;

/**
 * Lists everything under each of `roots` (recursively, links not followed), skipping the
 * absolute paths in `skip` and all beneath them. A root that does not exist is recorded as absent.
 */
export async function snapshotFolders(roots: readonly string[], skip: readonly string[] = []): Promise<FolderSnapshot> {
  const snapshot: FolderSnapshot = new Map();
  const skipped = new Set(skip.map((p) => path.resolve(p)));
  const visit = async (at: string): Promise<void> => {
    if (skipped.has(at)) return;
    const info = await lstat(at).catch(() => undefined);
    if (info === undefined) return;
    const kind = info.isSymbolicLink() ? "link" : info.isDirectory() ? "folder" : info.isFile() ? "file" : "other";
    // A folder's own mtime changes when the workspace inside it is written: only files count.
    snapshot.set(at, { kind, size: kind === "folder" ? 0 : info.size, mtimeMs: kind === "folder" ? 0 : info.mtimeMs });
    if (kind !== "folder") return;
    for (const name of (await readdir(at).catch(() => [] as string[])).sort()) await visit(path.join(at, name));
  };
  for (const root of roots) await visit(path.resolve(root));
  return snapshot;
}

/**
 * The entries at the top of `folder` (by absolute path; kind only: size and time stay 0, so only
 * a created, removed or retyped entry differs), except those that hold or are one of `skip` (the
 * run's own folders). A shared folder such as `/tmp` is watched this way, not whole: other
 * processes write inside it all the time, and an entry another process creates at its top while
 * a run goes on counts too (the harness cannot tell who made it; give the eval a `TMPDIR` of its
 * own where that matters). Absent `folder`: empty.
 */
export async function snapshotTopLevel(folder: string, skip: readonly string[] = []): Promise<FolderSnapshot> {
  const snapshot: FolderSnapshot = new Map();
  const top = path.resolve(folder);
  const held = skip.map((p) => path.resolve(p));
  for (const name of (await readdir(top).catch(() => [] as string[])).sort()) {
    const at = path.join(top, name);
    if (held.some((p) => p === at || p.startsWith(`${at}${path.sep}`))) continue;
    const info = await lstat(at).catch(() => undefined);
    if (info === undefined) continue;
    const kind = info.isSymbolicLink() ? "link" : info.isDirectory() ? "folder" : info.isFile() ? "file" : "other";
    snapshot.set(at, { kind, size: 0, mtimeMs: 0 });
  }
  return snapshot;
}

/**
 * What changed from `before` to `after`, one line per path: first every path of `after` in its
 * order, `written outside the workspace: <path> was created.` (not in `before`) or
 * `… was changed.` (its state differs), then the paths of `before` missing from `after`:
 * `written outside the workspace: <path> was removed.`
 */
export function diffSnapshots(before: FolderSnapshot, after: FolderSnapshot): string[] {
  // #region lab 14.2 diffSnapshots
  const problems: string[] = [];
  for (const [at, state] of after) {
    const was = before.get(at);
    if (was === undefined) problems.push(`written outside the workspace: ${at} was created.`);
    else if (!isDeepStrictEqual(was, state)) problems.push(`written outside the workspace: ${at} was changed.`);
  }
  for (const at of before.keys())
    if (!after.has(at)) problems.push(`written outside the workspace: ${at} was removed.`);
  return problems;
  // #endregion
}
