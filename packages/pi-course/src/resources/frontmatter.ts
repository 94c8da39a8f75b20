/**
 * YAML frontmatter, as `SKILL.md` and prompt templates carry it: a first line `---`, YAML, a
 * line `---`, then the Markdown body. The YAML is read by the `yaml` package (YAML 1.2, the
 * core schema), never by hand: a hand parser gets quoting, block scalars and comments wrong.
 */
import { createRequire } from "node:module";
import type * as Yaml from "yaml";
import { errorText } from "../base/errors.js";

/**
 * `yaml`, loaded on the first frontmatter (a quarter of a second of start-up on a busy machine,
 * paid only by a run that has a skill or a template to read).
 */
let yaml: typeof Yaml | undefined;
function loadYaml(): typeof Yaml {
  yaml ??= createRequire(import.meta.url)("yaml") as typeof Yaml;
  return yaml;
}

/** What a Markdown file with frontmatter holds. */
export type Frontmatter =
  /** `data`: the mapping (empty without frontmatter); `body`: the text after the closing `---`. */
  | { ok: true; data: Record<string, unknown>; body: string; hasFrontmatter: boolean }
  /** The frontmatter is there but is not a YAML mapping: `error` says why (with line numbers). */
  | { ok: false; error: string; body: string };

const FENCE = /^---[ \t]*$/;

/**
 * Splits `text` into frontmatter and body and parses the frontmatter. A byte order mark is
 * dropped, CRLF line ends are read as LF. A file without a first `---` line has no frontmatter
 * (`data` is `{}` and the body is the whole text). Never throws: an unclosed fence, YAML that
 * does not parse, duplicate keys, or YAML that is not a mapping are `ok: false`.
 */
export function parseFrontmatter(text: string): Frontmatter {
  const lines = text
    .replace(/^\uFEFF/, "")
    .replace(/\r\n?/g, "\n")
    .split("\n");
  if (!FENCE.test(lines[0] ?? "")) return { ok: true, data: {}, body: lines.join("\n"), hasFrontmatter: false };
  const close = lines.findIndex((line, i) => i > 0 && FENCE.test(line));
  if (close === -1) {
    return {
      ok: false,
      error: "the frontmatter opened by the first `---` line is never closed by another `---` line",
      body: "",
    };
  }
  const body = lines.slice(close + 1).join("\n");
  const yamlText = lines.slice(1, close).join("\n");
  const document = loadYaml().parseDocument(yamlText, { uniqueKeys: true, prettyErrors: true });
  if (document.errors.length > 0) {
    // the YAML text starts on the file's second line
    const first = document.errors[0]!;
    const line = first.linePos?.[0]?.line;
    const where = line === undefined ? "" : ` (line ${line + 1} of the file)`;
    return { ok: false, error: `the frontmatter is not valid YAML${where}: ${first.message.split("\n")[0]}`, body };
  }
  let data: unknown;
  try {
    // YAML's aliases can multiply a few lines into gigabytes (an "alias bomb"): at most 100 are expanded
    data = document.toJS({ maxAliasCount: 100 });
  } catch (error) {
    return { ok: false, error: `the frontmatter cannot be read as YAML: ${errorText(error)}`, body };
  }
  if (data === null || data === undefined) return { ok: true, data: {}, body, hasFrontmatter: true };
  if (typeof data !== "object" || Array.isArray(data)) {
    return { ok: false, error: "the frontmatter must be a YAML mapping of keys to values (`name: …`)", body };
  }
  return { ok: true, data: data as Record<string, unknown>, body, hasFrontmatter: true };
}
