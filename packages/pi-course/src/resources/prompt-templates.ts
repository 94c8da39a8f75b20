/**
 * Prompt templates: Markdown files whose text a slash command sends as the user's message.
 *
 * `NAME.md` in the project's `.pi-course/prompts/` (only for a trusted project) or the user's
 * `~/.pi-course/prompts/` becomes `/NAME`; the project's wins a name (a warning names the one it
 * hides). Optional frontmatter: `description` (shown by `/help`; without it, the first line of
 * the body, cut to 60 characters) and `argument-hint` (e.g. `<file> [focus]`).
 *
 * `/NAME args` splits `args` as a shell splits words (quotes group, a backslash escapes) and
 * substitutes them into the body: `$1`…`$9` (and `${10}`…), `$@` and `$ARGUMENTS` (all of them,
 * joined by spaces), `${N:-default}` (the default when argument N is missing or empty),
 * `${@:N}` and `${@:N:L}` (the arguments from N on, L of them). Substitution is one pass over the
 * template: text that came from an argument is never expanded again, so an argument holding `$1`
 * stays `$1`.
 */
import { readdirSync } from "node:fs";
import path from "node:path";
import { parseFrontmatter } from "./frontmatter.js";
import { readResourceFile } from "./resource-file.js";
import type { ResourceLocations, ResourceScope, ResourceWarning } from "./types.js";

/** One template. */
export interface PromptTemplate {
  /** The command without its slash: the file name without `.md`. */
  name: string;
  description: string;
  argumentHint?: string;
  /** The text to expand (the file without its frontmatter). */
  body: string;
  /** Absolute path of the file. */
  path: string;
  scope: Exclude<ResourceScope, "flag">;
}

/** A template's name: a letter or digit first, then letters, digits, `.`, `_` or `-`. */
export const TEMPLATE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** The folders templates come from, in precedence order (the project's only when trusted). */
export function templateFolders(
  locations: ResourceLocations,
  trustedProject: boolean,
): { folder: string; scope: PromptTemplate["scope"] }[] {
  const folders: { folder: string; scope: PromptTemplate["scope"] }[] = [];
  if (trustedProject) folders.push({ folder: path.join(locations.cwd, ".pi-course", "prompts"), scope: "project" });
  folders.push({ folder: path.join(locations.piHome, "prompts"), scope: "user" });
  return folders;
}

/** The `*.md` names of `folder` (files, or links), sorted; none when it cannot be listed. */
function templateNames(folder: string): string[] {
  try {
    return readdirSync(folder, { withFileTypes: true })
      .filter((e) => (e.isFile() || e.isSymbolicLink()) && e.name.endsWith(".md"))
      .map((e) => e.name)
      .sort();
  } catch {
    return [];
  }
}

/**
 * The template files `loadPromptTemplates` would read in `folders`, listed without reading any
 * of them (what the trust question names before anything of an untrusted folder is read).
 */
export function templateFiles(folders: readonly { folder: string }[]): string[] {
  return folders.flatMap(({ folder }) => templateNames(folder).map((name) => path.join(folder, name)));
}

/**
 * Every template in `folders` (each folder's `*.md`, not below it), the first of a name winning.
 * Never throws: a file that cannot be read or whose frontmatter does not parse is skipped with a
 * warning, as is a file name that cannot be a command.
 */
export function loadPromptTemplates(folders: readonly { folder: string; scope: PromptTemplate["scope"] }[]): {
  templates: PromptTemplate[];
  warnings: ResourceWarning[];
} {
  const templates: PromptTemplate[] = [];
  const warnings: ResourceWarning[] = [];
  const byName = new Map<string, PromptTemplate>();
  for (const { folder, scope } of folders) {
    for (const file of templateNames(folder)) {
      const full = path.join(folder, file);
      const name = file.slice(0, -3);
      if (!TEMPLATE_NAME.test(name)) {
        warnings.push({
          path: full,
          message: `skipped: "${name}" cannot be a command (letters, digits, ".", "_" and "-", not first)`,
        });
        continue;
      }
      const read = readResourceFile(full);
      if ("problem" in read) {
        warnings.push({ path: full, message: `skipped: ${read.problem}` });
        continue;
      }
      const parsed = parseFrontmatter(read.text);
      if (!parsed.ok) {
        warnings.push({ path: full, message: `skipped: ${parsed.error}` });
        continue;
      }
      const winner = byName.get(name);
      if (winner !== undefined) {
        warnings.push({
          path: full,
          message: `skipped: the template /${name} of ${winner.path} comes first and wins the name`,
        });
        continue;
      }
      const body = parsed.body.replace(/^\n+/, "");
      const given = parsed.data.description;
      const firstLine =
        body
          .split("\n")
          .find((l) => l.trim() !== "")
          ?.trim() ?? "";
      const description =
        typeof given === "string" && given.trim() !== ""
          ? given.trim()
          : firstLine.length > 60
            ? `${firstLine.slice(0, 59)}…`
            : firstLine;
      const hint = parsed.data["argument-hint"];
      const template: PromptTemplate = {
        name,
        description,
        body,
        path: full,
        scope,
        ...(typeof hint === "string" && { argumentHint: hint }),
      };
      byName.set(name, template);
      templates.push(template);
    }
  }
  return { templates, warnings };
}

/**
 * Splits `text` into words as a POSIX shell does, without expanding anything: blanks separate
 * words; `'…'` keeps everything literally; `"…"` keeps everything but `\"`, `\\`, `\$` and
 * `` \` `` (a backslash before them escapes them); outside quotes a backslash escapes the next
 * character. `""` is an empty word. An unclosed quote runs to the end of the text.
 */
export function splitArguments(text: string): string[] {
  // #region lab 12.3 splitArguments
  const words: string[] = [];
  let word = "";
  let inWord = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === " " || c === "\t" || c === "\n" || c === "\r") {
      if (inWord) words.push(word);
      word = "";
      inWord = false;
      continue;
    }
    inWord = true;
    if (c === "'") {
      const end = text.indexOf("'", i + 1);
      const stop = end === -1 ? text.length : end;
      word += text.slice(i + 1, stop);
      i = stop;
    } else if (c === '"') {
      for (i++; i < text.length && text[i] !== '"'; i++) {
        if (text[i] === "\\" && i + 1 < text.length && '"\\$`'.includes(text[i + 1]!)) i++;
        word += text[i];
      }
    } else if (c === "\\" && i + 1 < text.length) {
      word += text[++i];
    } else {
      word += c;
    }
  }
  if (inWord) words.push(word);
  return words;
  // #endregion
}

const PLACEHOLDER = /\$\{(\d+):-([^}]*)\}|\$\{@:(\d+)(?::(\d+))?\}|\$\{(\d+)\}|\$(\d)|\$@|\$ARGUMENTS/g;

/**
 * `body` with the placeholders filled from `args` (see the file comment), in one pass: an
 * argument's text is never read for placeholders. A missing argument is the empty text.
 */
export function expandTemplate(body: string, args: readonly string[]): string {
  // #region lab 12.3 expandTemplate
  const at = (n: number) => args[n - 1] ?? "";
  return body.replace(PLACEHOLDER, (match, withDefault, fallback, from, count, braced, digit) => {
    if (withDefault !== undefined) return at(Number(withDefault)) === "" ? fallback : at(Number(withDefault));
    if (from !== undefined) {
      const start = Math.max(Number(from), 1) - 1;
      const slice = count === undefined ? args.slice(start) : args.slice(start, start + Number(count));
      return slice.join(" ");
    }
    if (braced !== undefined) return at(Number(braced));
    if (digit !== undefined) return at(Number(digit));
    // $@ and $ARGUMENTS
    return match === "$@" || match === "$ARGUMENTS" ? args.join(" ") : match;
  });
  // #endregion
}

/** A slash command as typed: `/NAME rest` (NAME up to the first blank; undefined if not a command). */
export function parseSlashCommand(line: string): { name: string; args: string } | undefined {
  const match = /^\/(\S+)(?:\s+([\s\S]*))?$/.exec(line.trim());
  if (match === null) return undefined;
  return { name: match[1]!, args: (match[2] ?? "").trim() };
}
