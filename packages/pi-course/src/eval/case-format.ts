/**
 * Chapter 14: what an eval case is on disk, read and checked before anything runs.
 *
 * A case is a folder:
 *
 * ```
 * fix-greeting/
 *   task.md      the prompt, as the user would type it (required, not empty)
 *   files/       the starting workspace, copied fresh for every run (required, may be empty)
 *   check        an executable run in the workspace after the agent stops: exit 0 passes;
 *                its output is kept as evidence (required, must be executable)
 *   case.json    optional limits and settings (see `CaseSettings`)
 *   script.json  optional: the scripted model that plays this case offline (see script.ts);
 *                read only by the eval harness, and only when no server is configured
 * ```
 *
 * A suite is a folder of cases (each sub-folder holding a `task.md`); folders whose name
 * starts with `.` or `_` are skipped. The shapes follow what task formats share (Harbor's
 * instruction.md + tests/test.sh, SWE-bench's fail-to-pass tests): a prompt, a start state and
 * an executable judge.
 */
import { constants } from "node:fs";
import { access, readdir, stat } from "node:fs/promises";
import path from "node:path";
import { Type } from "typebox";
import { type JsonPlace, parseJson, readTextFile } from "../base/read-json.js";
import { PiCourseError } from "../base/errors.js";

/** The optional `case.json`: every field is optional. */
export interface CaseSettings {
  /** Wall-clock limit of the agent's run, in seconds (default 120). The check has its own. */
  timeLimitSeconds: number;
  /** The most model turns the run may take (default 20). */
  maxTurns: number;
  /** Wall-clock limit of the check, in seconds (default 60). */
  checkTimeLimitSeconds: number;
  /**
   * The share of runs that must pass for the case to pass under `--repeat` (default 1: every
   * run). A case known to be flaky says, e.g., 0.5.
   */
  minPassRate: number;
  /** Model settings for this case: `id` replaces the configured model id (servers only). */
  model: { id?: string };
  /** Free labels for filtering and reading the report. */
  tags: string[];
}

/** A case folder, read and checked. */
export interface EvalCase {
  /** The folder's name: unique in its suite. */
  name: string;
  /** The case folder (absolute). */
  dir: string;
  /** The prompt (task.md, trimmed). */
  task: string;
  /** The starting workspace (absolute). */
  filesDir: string;
  /** The executable judge (absolute). */
  check: string;
  settings: CaseSettings;
  /** script.json (absolute), when the case has one. */
  script?: string;
}

/** The defaults of `case.json`. */
export const DEFAULT_CASE_SETTINGS: Readonly<CaseSettings> = Object.freeze({
  timeLimitSeconds: 120,
  maxTurns: 20,
  checkTimeLimitSeconds: 60,
  minPassRate: 1,
  model: {},
  tags: [],
});

/** A case or suite folder that is not in the format: the message names the file and the fix. */
export class CaseFormatError extends PiCourseError {
  override name = "CaseFormatError";
  /** Stable: `"EVAL_CASE"`. */
  override readonly code = "EVAL_CASE";
}

const Positive = (expected: string, integer: boolean) =>
  integer ? Type.Integer({ exclusiveMinimum: 0, expected }) : Type.Number({ exclusiveMinimum: 0, expected });

/** What `case.json` may hold: every key optional, none other. */
const CaseSettingsSchema = Type.Object(
  {
    timeLimitSeconds: Type.Optional(Positive("a number above 0", false)),
    maxTurns: Type.Optional(Positive("a whole number above 0", true)),
    checkTimeLimitSeconds: Type.Optional(Positive("a number above 0", false)),
    minPassRate: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 1, expected: "a number in (0, 1]" })),
    model: Type.Optional(
      Type.Object(
        { id: Type.Optional(Type.String({ minLength: 1 })) },
        { additionalProperties: false, expected: 'an object like {"id": "model-name"} (only "id" is read)' },
      ),
    ),
    tags: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { expected: "a list of non-empty strings" })),
  },
  { additionalProperties: false, expected: 'one JSON object, e.g. {"timeLimitSeconds": 60}' },
);

/** `where` as read-json names it; every message of a case file ends with a period. */
export function casePlace(where: string): JsonPlace {
  return { where, error: (message) => new CaseFormatError(`${message}.`) };
}

/**
 * Reads `case.json`'s text (`where` names it in errors) into settings over the defaults
 * (`DEFAULT_CASE_SETTINGS`; a fresh `model` object and `tags` list each time). Throws
 * `CaseFormatError` for anything but a JSON object of the known keys with values in range, in
 * read-json's wording, e.g. (`<where>` is the argument):
 *
 * - `<where> is not JSON (<the parser's message>).`
 * - `<where> must be one JSON object, e.g. {"timeLimitSeconds": 60}, got an array of 0 items.`
 * - `<where> has an unknown key "<key>"; the keys are timeLimitSeconds, maxTurns, checkTimeLimitSeconds, minPassRate, model, tags.`
 * - `<where>: timeLimitSeconds must be a number above 0, got 0.` (checkTimeLimitSeconds too) and
 *   `<where>: maxTurns must be a whole number above 0, got 2.5.`
 * - `<where>: minPassRate must be a number in (0, 1], got 0.`
 * - `<where>: model must be an object like {"id": "model-name"} (only "id" is read), got a string of 3 characters.`
 * - `<where>: tags must be a list of non-empty strings, got an array of 1 item.`
 */
export function parseCaseSettings(text: string, where: string): CaseSettings {
  // #region lab 14.1 parseCaseSettings
  const given = parseJson(text, CaseSettingsSchema, casePlace(where));
  const settings: CaseSettings = { ...DEFAULT_CASE_SETTINGS, model: {}, tags: [] };
  for (const key of ["timeLimitSeconds", "checkTimeLimitSeconds", "maxTurns", "minPassRate"] as const) {
    if (given[key] !== undefined) settings[key] = given[key];
  }
  if (given.model?.id !== undefined) settings.model = { id: given.model.id };
  if (given.tags !== undefined) settings.tags = [...given.tags];
  return settings;
  // #endregion
}

/** Reads and checks the case folder `dir`. Throws `CaseFormatError` naming what is missing. */
export async function loadCase(dir: string): Promise<EvalCase> {
  const absolute = path.resolve(dir);
  const name = path.basename(absolute);
  const info = await stat(absolute).catch(() => undefined);
  if (info === undefined || !info.isDirectory())
    throw new CaseFormatError(`${absolute} is not a folder: a case is a folder.`);
  const taskFile = path.join(absolute, "task.md");
  const task = readTextFile(taskFile, {
    ...casePlace(`case ${name}: ${taskFile}`),
    ifMissing: () => undefined,
  })?.trim();
  if (task === undefined) throw new CaseFormatError(`case ${name}: ${taskFile} is missing; write the prompt there.`);
  if (task === "") throw new CaseFormatError(`case ${name}: ${taskFile} is empty; write the prompt there.`);
  const filesDir = path.join(absolute, "files");
  if (!(await stat(filesDir).catch(() => undefined))?.isDirectory()) {
    throw new CaseFormatError(
      `case ${name}: ${filesDir} is missing; it is the starting workspace (an empty folder is fine).`,
    );
  }
  const check = path.join(absolute, "check");
  if (!(await stat(check).catch(() => undefined))?.isFile()) {
    throw new CaseFormatError(
      `case ${name}: ${check} is missing; it is the executable that judges the run (exit 0 passes).`,
    );
  }
  if (
    !(await access(check, constants.X_OK).then(
      () => true,
      () => false,
    ))
  ) {
    throw new CaseFormatError(`case ${name}: ${check} is not executable; run chmod +x on it.`);
  }
  const settingsFile = path.join(absolute, "case.json");
  const settingsText = readTextFile(settingsFile, { ...casePlace(settingsFile), ifMissing: () => undefined });
  const settings =
    settingsText === undefined
      ? { ...DEFAULT_CASE_SETTINGS, model: {}, tags: [] }
      : parseCaseSettings(settingsText, settingsFile);
  const script = path.join(absolute, "script.json");
  const hasScript = (await stat(script).catch(() => undefined))?.isFile() === true;
  return { name, dir: absolute, task, filesDir, check, settings, ...(hasScript && { script }) };
}

/**
 * Reads every case of the suite folder `dir` (sub-folders with a `task.md`, by name), or `dir`
 * itself when it is one case. Throws `CaseFormatError` for an empty suite or a broken case.
 */
export async function loadSuite(dir: string): Promise<EvalCase[]> {
  const absolute = path.resolve(dir);
  const info = await stat(absolute).catch(() => undefined);
  if (info === undefined || !info.isDirectory()) {
    throw new CaseFormatError(`the suite ${absolute} is not a folder: a suite is a folder of case folders.`);
  }
  if ((await stat(path.join(absolute, "task.md")).catch(() => undefined)) !== undefined)
    return [await loadCase(absolute)];
  const names = (await readdir(absolute, { withFileTypes: true }))
    .filter((entry) => entry.isDirectory() && !entry.name.startsWith(".") && !entry.name.startsWith("_"))
    .map((entry) => entry.name)
    .sort();
  const cases: EvalCase[] = [];
  for (const name of names) {
    if ((await stat(path.join(absolute, name, "task.md")).catch(() => undefined)) === undefined) continue;
    cases.push(await loadCase(path.join(absolute, name)));
  }
  if (cases.length === 0) {
    throw new CaseFormatError(
      `the suite ${absolute} holds no case: a case is a folder with task.md, files/ and check.`,
    );
  }
  return cases;
}
