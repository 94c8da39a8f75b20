/**
 * The `edit` tool: exact text replacement in one file.
 *
 * Each `oldText` must occur exactly once in the file as it was read: zero matches means the model
 * misremembers the file, several mean the edit is ambiguous; both are refused with a message that
 * says what to do. Several edits are all checked in memory first (none may overlap another), then
 * the file is written once, atomically. A refused edit leaves the file untouched.
 */
import { constants } from "node:fs";
import path from "node:path";
import { Type } from "typebox";
import type { AgentTool } from "../types.js";
import { repairEdit } from "./repairs.js";
import { writeFileAtomic } from "./write.js";
import type { HeldFolder } from "./held-folder.js";
import type { Workspace } from "./workspace.js";

/** One replacement. */
export interface TextEdit {
  oldText: string;
  newText: string;
}

/** Where one edit landed. */
export interface AppliedEdit {
  /** The 1-based line where `oldText` started. */
  line: number;
  /** Lines removed and added. */
  removedLines: number;
  addedLines: number;
}

/**
 * Applies `edits` to `content`, each matched against the original content. Throws an `Error`
 * naming the edit (`edits[1]`) when an `oldText` is empty, missing, not unique, or overlaps
 * another edit, or when the edits change nothing.
 */
export function applyEdits(content: string, edits: readonly TextEdit[]): { content: string; applied: AppliedEdit[] } {
  // #region lab 8.4 applyEdits
  if (edits.length === 0) throw new Error("No edits were given.");
  const spans: { start: number; end: number; index: number; newText: string }[] = [];
  edits.forEach((edit, index) => {
    const name = edits.length === 1 ? "oldText" : `edits[${index}].oldText`;
    if (edit.oldText === "") throw new Error(`${name} is empty. Copy the exact text to replace.`);
    const start = content.indexOf(edit.oldText);
    if (start === -1) {
      throw new Error(
        `${name} was not found in the file. Read the file again and copy the text exactly, ` + `including whitespace.`,
      );
    }
    const again = content.indexOf(edit.oldText, start + 1);
    if (again !== -1) {
      let count = 2;
      for (let at = content.indexOf(edit.oldText, again + 1); at !== -1; at = content.indexOf(edit.oldText, at + 1))
        count++;
      throw new Error(
        `${name} matches ${count} places in the file. Include more surrounding lines so it ` + `matches exactly one.`,
      );
    }
    spans.push({ start, end: start + edit.oldText.length, index, newText: edit.newText });
  });
  spans.sort((a, b) => a.start - b.start);
  for (let i = 1; i < spans.length; i++) {
    const before = spans[i - 1]!;
    const after = spans[i]!;
    if (after.start < before.end) {
      throw new Error(`edits[${before.index}] and edits[${after.index}] overlap. Merge them into one edit.`);
    }
  }
  const parts: string[] = [];
  const applied: AppliedEdit[] = [];
  let cursor = 0;
  for (const span of spans) {
    parts.push(content.slice(cursor, span.start), span.newText);
    applied.push({
      line: countLines(content.slice(0, span.start)),
      removedLines: countLines(content.slice(span.start, span.end)),
      addedLines: span.newText === "" ? 0 : countLines(span.newText),
    });
    cursor = span.end;
  }
  parts.push(content.slice(cursor));
  const result = parts.join("");
  if (result === content) throw new Error("The edits change nothing: every newText equals its oldText.");
  return { content: result, applied };
  // #endregion
}

/** 1 + the number of newlines: the line a text ending here is on. */
function countLines(text: string): number {
  let lines = 1;
  for (let at = text.indexOf("\n"); at !== -1; at = text.indexOf("\n", at + 1)) lines++;
  return lines;
}

const editParameters = Type.Object({
  path: Type.String({ description: "File path, relative to the workspace root." }),
  edits: Type.Array(
    Type.Object({
      oldText: Type.String({ description: "Exact text to replace; must occur exactly once." }),
      newText: Type.String({ description: "The replacement text." }),
    }),
    { minItems: 1, description: "Replacements, each matched against the file as it is now." },
  ),
});

/** What `edit` reports to programs. */
export interface EditDetails {
  /** Relative to the workspace root. */
  path: string;
  /** Where each edit landed, in file order. */
  applied: AppliedEdit[];
  /** The first changed line (1-based), for UIs that jump to it. */
  firstChangedLine: number;
}

/** The `edit` tool over one workspace. */
export function createEditTool(workspace: Workspace): AgentTool<typeof editParameters, EditDetails> {
  return {
    name: "edit",
    label: "Edit file",
    description:
      "Replace exact text in a file. Each oldText must match exactly one place in the current " +
      "file (copy it from read output, without the line numbers). All edits apply, or none.",
    parameters: editParameters,
    executionMode: "sequential",
    // The repairs of repairs.ts: path aliases, one flat edit.
    prepareArguments: repairEdit,
    async execute(_toolCallId, params, signal) {
      signal?.throwIfAborted();
      const resolved = await workspace.resolve(params.path);
      if (!resolved.exists) throw new Error(`${resolved.relative} does not exist; use write to create it.`);
      const folderPath = path.dirname(resolved.relative);
      const name = path.basename(resolved.relative);
      return workspace.locks.run(resolved.absolute, async () => {
        await workspace.beforeOpen(resolved.absolute);
        // Read and write inside one held folder, reached without following a symlink.
        const folder = await workspace.openFolder(folderPath, { target: resolved.relative });
        let applied: AppliedEdit[];
        try {
          const handle = await workspace.openIn(folder, name, constants.O_RDONLY, resolved.relative);
          let original: string;
          let mode: number;
          try {
            const info = await handle.stat();
            if (!info.isFile()) throw new Error(`${resolved.relative} is not a file.`);
            mode = info.mode & 0o7777;
            original = await handle.readFile("utf8");
          } finally {
            await handle.close();
          }
          // Files with CRLF line ends are edited as LF and written back with CRLF.
          const crlf = original.includes("\r\n");
          const toLf = (text: string) => (crlf ? text.replace(/\r\n/g, "\n") : text);
          const edits = params.edits.map((e) => ({ oldText: toLf(e.oldText), newText: toLf(e.newText) }));
          const result = applyEdits(toLf(original), edits);
          applied = result.applied;
          signal?.throwIfAborted();
          await workspace.beforeOpen(resolved.absolute);
          await sameFolderStill(workspace, folder, resolved.relative);
          await writeFileAtomic(folder.pathOf(name), crlf ? result.content.replace(/\n/g, "\r\n") : result.content, {
            mode,
            verify: (h, temp) => workspace.verifyOpened(h, path.join(folder.absolute, path.basename(temp))),
          }).catch((error: unknown) => {
            throw folder.writeError(error, resolved.relative);
          });
        } finally {
          await folder.close();
        }
        const count = applied.length;
        return {
          content: [
            {
              type: "text",
              text: `Edited ${resolved.relative}: ${count} replacement${count === 1 ? "" : "s"} (first change at line ${applied[0]!.line}).`,
            },
          ],
          details: { path: resolved.relative, applied, firstChangedLine: applied[0]!.line },
        };
      });
    },
  };
}

/**
 * Before the edit is written: walks to the file's folder again and requires the folder it holds.
 * A folder moved or replaced since the file was read is refused, so an edit never lands in a
 * folder the path no longer names.
 */
async function sameFolderStill(workspace: Workspace, held: HeldFolder, target: string): Promise<void> {
  const again = await workspace.openFolder(held.relative, { target });
  try {
    const [was, now] = await Promise.all([held.handle.stat(), again.handle.stat()]);
    if (was.dev !== now.dev || was.ino !== now.ino) {
      throw new Error(
        `${target} was not edited: its folder was moved or replaced while the edit was prepared. ` +
          `Read the file again and retry.`,
      );
    }
  } finally {
    await again.close();
  }
}
