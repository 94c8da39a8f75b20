/**
 * The chapter catalogue: one file per chapter in practice/chapters/NN-<slug>.ts, found by name.
 *
 * A chapter file default-exports `defineChapter({...})`. Everything else (which labs exist in
 * which file and symbol, which regions a chapter has in other chapters' files, which npm packages
 * its folder needs) is derived from the sources, so a chapter file holds only what a person must
 * say: the files it owns, its labs' names, and its guide text.
 */
import { readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/** Learner-facing text: Chinese first, with a short English line. */
export interface Text {
  zh: string;
  en: string;
}

export interface LabSpec {
  /** "N.M": N is the chapter number. Tests of this lab are named `Lab N.M · …`. */
  id: string;
  title: Text;
  /** A nudge printed in LEARNING.md under the lab. */
  hint?: Text;
  /**
   * The exact texts this lab's code produces that its tests check (error messages, output), as
   * the reference code writes them (`parentId "${parentId}" is not a written entry`). Printed in
   * LEARNING.md under the lab. The proof fails for a text a test requires that is said neither
   * here, in the chapter's other text, nor in src/ of the practice folder (practice/told.ts).
   */
  says?: string[];
  /**
   * Earlier labs of the same chapter whose construction sites this lab's tests may hit first in
   * practice(N) (e.g. a `textOf` test that builds its message with `userMessage`). The proof
   * accepts their not-implemented errors there, and fails for an entry no test needs. A later lab
   * cannot help: the lab-order check needs this lab's tests green before that one is written.
   */
  uses?: string[];
}

/**
 * A wrong but plausible implementation of a lab, which the lab's tests must catch: the proof
 * writes snapshot(N) with `find` replaced by `replace` in `file`, runs the lab's tests there
 * (`-t "Lab N\.M\b"`), and requires them to FAIL, by themselves and in time (a test that hangs
 * is a frozen terminal for a learner), with `failsWith` in some failure.
 */
export interface WrongImplementation {
  /**
   * The lab whose tests must catch it. An observe chapter has no labs: there it is the start of
   * the names of the tests that must catch it (`Prologue · npm start runs`), and the proof's
   * folder is the chapter's one folder with the mutation applied.
   */
  lab: string;
  /** What is wrong, in a few words (for the report). */
  what: string;
  /** Package-relative file holding the lab's code. */
  file: string;
  /** Text of the reference code (as generated, markers removed) that occurs exactly once in `file`. */
  find: string;
  replace: string;
  /** A text some failing test of the lab must report. */
  failsWith: string;
}

export interface ObserveStep {
  /** A shell command run in the practice folder. */
  command: string;
  text: Text;
}

export interface ChapterSpec {
  /** Two digits, as learners type it: "03". Must match the file name. */
  id: string;
  /** Must match the file name; the focused test is `test/<id>-<slug>.test.ts`. */
  slug: string;
  /** `rebuild` (default): the learner writes the labs. `observe`: run, predict, break. */
  mode?: "rebuild" | "observe";
  title: Text;
  /** One sentence that the chapter's tests defend. */
  invariant: Text;
  /** What the chapter adds and why: the opening of the guide. */
  adds: Text;
  /**
   * Files this chapter owns wholly, relative to packages/pi-course ("src/messages.ts",
   * "test/fixtures/chat.sse"). The focused test file and the test/ files it imports (relative
   * imports, followed transitively) are included without being listed.
   */
  files: string[];
  /** The labs in the order a learner does them. Empty for observe chapters. */
  labs: LabSpec[];
  /** A "break it on purpose" experiment. */
  breakIt: Text;
  /** Where the chapter's idea goes beyond the course (a package, a next step): the guide's closing section. */
  next?: Text;
  /** Observe chapters: the commands to run, each with what to predict or look for. */
  observe?: ObserveStep[];
  /** Extra package.json scripts for the practice folder (e.g. `start`). */
  scripts?: Record<string, string>;
  /** Extra dev dependencies by name (versions are the repository's pins), e.g. `tsx`. */
  devDependencies?: string[];
  /**
   * A temporary, explicit exception to the proof's "red for the right reason" rule: a test of
   * this chapter (by its exact name) that does not yet fail with its lab's not-implemented error
   * in practice(N), and why. The proof prints each waiver and fails once a waived test behaves,
   * so a fixed test's waiver must be removed. Keep this empty.
   */
  waivers?: { test: string; why: string }[];
  /**
   * A temporary, explicit exception to the proof's rule that each test file of the chapter holds
   * its tests in lab order: why they are not in order yet. Printed on every run; the proof fails
   * once the order is right, so the waiver must then be removed. Keep this unset.
   */
  testOrderWaiver?: string;
  /**
   * A temporary, explicit exception to the told rule's sentences in expected values (told.ts:
   * `prose`): why the texts it finds are not told yet. They are printed on every run instead of
   * failing the proof; the proof fails once none is left, so the waiver must then be removed.
   * Keep this unset.
   */
  proseToldWaiver?: string;
  /** Wrong implementations the chapter's tests must catch by failing, never by hanging (see the type). */
  wrong?: WrongImplementation[];
}

/** A chapter as loaded: the spec plus its number and where it was declared. */
export interface Chapter extends ChapterSpec {
  number: number;
  mode: "rebuild" | "observe";
  /** The focused test, relative to the package: `test/03-message-ir.test.ts`. */
  testFile: string;
  /** practice/chapters/03-message-ir.ts */
  source: string;
}

/** Type-checks a chapter file's default export. */
export function defineChapter(spec: ChapterSpec): ChapterSpec {
  return spec;
}

const here = dirname(fileURLToPath(import.meta.url));
/** The repository root (the folder holding practice/ and packages/). */
export const REPO_ROOT = dirname(here);
export const PACKAGE_DIR = join(REPO_ROOT, "packages", "pi-course");
export const CHAPTERS_DIR = join(here, "chapters");

const FILE_RE = /^(\d\d)-([a-z0-9]+(?:-[a-z0-9]+)*)\.ts$/;

/** The catalogue: every chapter, validated, sorted by number. */
export class Catalogue {
  constructor(readonly chapters: readonly Chapter[]) {}

  /** The chapter for "3" or "03"; throws with the valid ids for anything else. */
  get(arg: string): Chapter {
    const valid = this.chapters.map((c) => c.id).join(", ");
    if (!/^\d{1,2}$/.test(arg)) {
      throw new UsageError(
        `"${arg}" is not a chapter number. 章节号应为一到两位数字 (a chapter is one or two digits), ` +
          `one of: ${valid}.`,
      );
    }
    const chapter = this.chapters.find((c) => c.number === Number(arg));
    if (!chapter) {
      throw new UsageError(`没有第 ${arg} 章 (no chapter ${arg}). Valid chapters: ${valid}.`);
    }
    return chapter;
  }

  /** Rebuild chapters, in order. */
  get rebuild(): Chapter[] {
    return this.chapters.filter((c) => c.mode === "rebuild");
  }

  /** The chapter that owns a package-relative path, if any. */
  ownerOf(path: string): Chapter | undefined {
    return this.chapters.find((c) => c.files.includes(path) || c.testFile === path);
  }
}

/** A mistake by the person running a command: printed without a stack trace. */
export class UsageError extends Error {
  override name = "UsageError";
}

/** Validates specs and builds the catalogue. `source` names where each spec came from. */
export function buildCatalogue(specs: { spec: ChapterSpec; source: string }[]): Catalogue {
  const chapters: Chapter[] = [];
  const owners = new Map<string, string>();
  for (const { spec, source } of specs) {
    const problem = (what: string) => new Error(`${source}: ${what}`);
    if (!/^\d\d$/.test(spec.id)) throw problem(`id must be two digits, got "${spec.id}".`);
    const name = source.split(/[\\/]/).pop()!;
    const match = FILE_RE.exec(name);
    if (match && (match[1] !== spec.id || match[2] !== spec.slug)) {
      throw problem(`the file name must be ${spec.id}-${spec.slug}.ts to match its id and slug.`);
    }
    const number = Number(spec.id);
    const mode = spec.mode ?? "rebuild";
    if (chapters.some((c) => c.number === number)) throw problem(`chapter ${spec.id} is declared twice.`);
    if (mode === "rebuild" && spec.labs.length === 0) throw problem("a rebuild chapter needs at least one lab.");
    if (mode === "observe" && spec.labs.length > 0) throw problem("an observe chapter has no labs.");
    const seen = new Set<string>();
    for (const lab of spec.labs) {
      const m = /^(\d{1,2})\.(\d{1,2})$/.exec(lab.id);
      if (!m || Number(m[1]) !== number) {
        throw problem(`lab "${lab.id}" must be "${number}.M" (chapter ${spec.id}'s labs).`);
      }
      if (seen.has(lab.id)) throw problem(`lab ${lab.id} is declared twice.`);
      seen.add(lab.id);
    }
    for (const wrong of spec.wrong ?? []) {
      if (mode === "rebuild" && !seen.has(wrong.lab))
        throw problem(`the wrong implementation "${wrong.what}" names unknown lab ${wrong.lab}.`);
    }
    for (const lab of spec.labs) {
      for (const used of lab.uses ?? []) {
        if (!seen.has(used)) throw problem(`lab ${lab.id} uses unknown lab ${used}.`);
      }
    }
    const testFile = `test/${spec.id}-${spec.slug}.test.ts`;
    for (const file of [...spec.files, testFile]) {
      if (file.startsWith("/") || file.includes("..") || file.includes("\\")) {
        throw problem(`file "${file}" must be relative to packages/pi-course, with forward slashes.`);
      }
      const other = owners.get(file);
      if (other) throw problem(`${file} is already owned by ${other}; a file has one owner.`);
      owners.set(file, source);
    }
    chapters.push({ ...spec, number, mode, testFile, source });
  }
  chapters.sort((a, b) => a.number - b.number);
  return new Catalogue(chapters);
}

/** Loads every practice/chapters/NN-<slug>.ts (or those of another folder, for tests). */
export async function loadCatalogue(dir: string = CHAPTERS_DIR): Promise<Catalogue> {
  const names = readdirSync(dir)
    .filter((name) => FILE_RE.test(name))
    .sort();
  const specs: { spec: ChapterSpec; source: string }[] = [];
  for (const name of names) {
    const module = (await import(pathToFileURL(join(dir, name)).href)) as { default?: ChapterSpec };
    if (!module.default) throw new Error(`${name}: export default defineChapter({...}) is missing.`);
    specs.push({ spec: module.default, source: `practice/chapters/${name}` });
  }
  return buildCatalogue(specs);
}
