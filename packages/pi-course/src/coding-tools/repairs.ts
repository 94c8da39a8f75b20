/**
 * The argument repairs of the coding tools, all in one place. Models trained on other agents'
 * tools send near-miss arguments; each repair below turns one such shape into the tool's own,
 * before validation (a tool's `prepareArguments`, which gets a copy: the transcript keeps what
 * the model sent). Nothing else is guessed: any other shape is validated as sent and, if wrong,
 * answered with an error result the model can read.
 *
 * | tools                 | the model sends                                   | the tool reads                  |
 * | --------------------- | ------------------------------------------------- | ------------------------------- |
 * | read, write, edit, ls | `file_path` or `filePath` (and no `path`)         | `path`                          |
 * | edit                  | `oldText`/`newText` at the top (and no `edits`)   | `edits: [{ oldText, newText }]` |
 * | edit                  | `old_string`/`new_string` at the top (no `edits`) | `edits: [{ oldText, newText }]` |
 *
 * The README lists the same table; `test/readme.test.ts` checks that both agree.
 */

/** Names a model may use for `path`. */
export const PATH_ALIASES = ["file_path", "filePath"] as const;

/** `file_path`/`filePath` → `path`, when `path` is absent and exactly one alias is a string. */
export function repairPath(args: unknown): unknown {
  if (typeof args !== "object" || args === null || Array.isArray(args)) return args;
  const record = args as Record<string, unknown>;
  if (record.path !== undefined) return args;
  const given = PATH_ALIASES.filter((alias) => typeof record[alias] === "string");
  if (given.length !== 1) return args;
  const { [given[0]!]: path, ...rest } = record;
  return { ...rest, path };
}

/** `repairPath`, then one flat edit (`oldText`/`newText` or `old_string`/`new_string`) → `edits`. */
export function repairEdit(args: unknown): unknown {
  const repaired = repairPath(args);
  if (typeof repaired !== "object" || repaired === null || Array.isArray(repaired)) return repaired;
  const record = repaired as Record<string, unknown>;
  if (record.edits !== undefined) return repaired;
  for (const [oldKey, newKey] of [
    ["oldText", "newText"],
    ["old_string", "new_string"],
  ] as const) {
    const oldText = record[oldKey];
    const newText = record[newKey];
    if (typeof oldText === "string" && typeof newText === "string") {
      const { [oldKey]: _old, [newKey]: _new, ...rest } = record;
      return { ...rest, edits: [{ oldText, newText }] };
    }
  }
  return repaired;
}
