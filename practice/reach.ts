/**
 * Which earlier chapters' tests practice(N) must run: those that can reach one of chapter N's
 * labs. In practice(N) only N's lab bodies differ from the code the repository's own run and the
 * earlier proofs test (they are construction sites there), so an earlier test that cannot reach
 * them runs exactly as it did, green, and running it again in every later chapter's folder was
 * most of the proof's time (the suite of chapters 00–N, once per chapter).
 *
 * "Reach" is followed through the folder's files, transitively: a relative import, and any file
 * a test file (or a file under test/) names by a path in string literals (`"../src/cli/start.ts"`,
 * `"src/cli/start.ts"`, or the literals of one `join(root, "src", "cli", "start.ts")`): that is how
 * a test starts a child process on an entry point of the library, and the child runs whatever that
 * entry point imports. The named path must end with at least one folder and the file's name, and
 * every file whose path ends that way counts. A bare file name (`"main.ts"`) is a file a test
 * writes in its own workspace, not the library's (the tools' tests write a `main.ts` of their own,
 * which is not `src/cli/main.ts`): it leads nowhere. `src/index.ts`
 * re-exports everything, so a named import from it leads to the files that export those names
 * (a type-only import leads nowhere: it is erased); any other use of it leads to every file.
 */
import { posix } from "node:path";
import { relativeImports } from "./generate.js";

const CODE = /\.(ts|mts|tsx|js|mjs)$/;
/** A string literal that ends in a code file's name; group 2 is the text inside the quotes. */
const NAMED_FILE = /(["'`])([^"'`\s]*?[\w.-]+\.(?:ts|mts|tsx|js|mjs))\1/g;
/** The string literals that are arguments right before a match: `"src", "cli", ` of a `join(…)`. */
const JOINED_BEFORE = /(?:(["'`])[\w.-]+\1\s*,\s*)+$/;

const BARREL = "src/index.ts";
const NAMED_IMPORT = /import\s+(type\s+)?\{([^}]*)\}\s*from\s*["']([^"']+)["']/g;
const NAMED_EXPORT = /export\s+(type\s+)?\{([^}]*)\}\s*from\s*["']([^"']+)["']/g;

/** The value names of an import or export list (`a, type B, c as d` → a, c). */
function valueNames(list: string): string[] {
  return list
    .split(",")
    .map((part) => part.trim())
    .filter((part) => part !== "" && !part.startsWith("type "))
    .map((part) => part.split(/\s+as\s+/)[0]!.trim());
}

/** Where the barrel's value exports come from: name → file. */
function barrelSources(text: string): Map<string, string> {
  const sources = new Map<string, string>();
  for (const [, typeOnly, list, from] of text.matchAll(NAMED_EXPORT)) {
    if (typeOnly) continue;
    const file = posix.normalize(posix.join("src", from!)).replace(/\.js$/, ".ts");
    for (const name of valueNames(list!)) sources.set(name, file);
  }
  return sources;
}

/** The files `file` leads to directly: its relative imports and the files its strings name. */
function edges(
  file: string,
  text: string,
  byBaseName: Map<string, string[]>,
  files: Set<string>,
  barrel: Map<string, string>,
): string[] {
  const toBarrel = (specifier: string) =>
    posix.normalize(posix.join(posix.dirname(file), specifier)).replace(/\.js$/, ".ts") === BARREL;
  // Named imports from the barrel lead to the files behind the names; type-only ones nowhere.
  let barrelUses = 0;
  const out: string[] = [];
  for (const [, typeOnly, list, from] of text.matchAll(NAMED_IMPORT)) {
    if (!from!.startsWith(".") || !toBarrel(from!)) continue;
    barrelUses++;
    if (typeOnly) continue;
    for (const name of valueNames(list!)) out.push(barrel.get(name) ?? BARREL);
  }
  const imports = relativeImports(file, text).filter((target) => files.has(target));
  // Any other import of the barrel (a namespace, a side effect, a dynamic import) reaches it all.
  const plain = imports.filter((target) => target === BARREL).length;
  if (plain > barrelUses) out.push(BARREL);
  out.push(...imports.filter((target) => target !== BARREL));
  // Entry points are started by tests (and their support files); doc comments name files too.
  // Import specifiers are edges already (above), not entry points.
  const named = file.startsWith("test/")
    ? text
        .replace(/\/\*[\s\S]*?\*\//g, "")
        .replace(/^\s*\/\/.*$/gm, "")
        .replace(/(?:^|[\s;])(?:import|export)\s[^'"`;]*?from\s*["'][^"']+["']/g, "")
    : "";
  for (const match of named.matchAll(NAMED_FILE)) {
    const line = named.slice(named.lastIndexOf("\n", match.index) + 1, match.index);
    const joined = JOINED_BEFORE.exec(line)?.[0].match(/[\w.-]+/g) ?? [];
    const suffix = namedPath([...joined, match[2]!]);
    if (suffix === undefined) continue;
    const candidates = byBaseName.get(posix.basename(suffix)) ?? [];
    out.push(...candidates.filter((path) => path === suffix || path.endsWith(`/${suffix}`)));
  }
  return out;
}

/**
 * The path a test names with `parts` (the literals of one `join`, or one literal), as the end of a
 * folder-relative path: `../`, `./` and a leading `/` dropped, `.js` read as `.ts`. Undefined when
 * it names no folder (a bare file name).
 */
function namedPath(parts: string[]): string | undefined {
  const segments = parts
    .join("/")
    .split("/")
    .filter((segment) => segment !== "" && segment !== "." && segment !== "..");
  if (segments.length < 2) return undefined;
  return segments
    .join("/")
    .replace(/\.js$/, ".ts")
    .replace(/\.mjs$/, ".mts");
}

/**
 * The test files of `files` (folder-relative path → content) that reach any of `targets`,
 * following imports and named files transitively.
 */
export function testsReaching(files: ReadonlyMap<string, string | Buffer>, targets: ReadonlySet<string>): string[] {
  const code = new Map<string, string>();
  for (const [path, content] of files) if (CODE.test(path)) code.set(path, String(content));
  const byBaseName = new Map<string, string[]>();
  for (const path of code.keys()) {
    const base = posix.basename(path);
    byBaseName.set(base, [...(byBaseName.get(base) ?? []), path]);
  }
  const paths = new Set(code.keys());
  const next = new Map<string, string[]>();
  const barrel = barrelSources(code.get(BARREL) ?? "");
  for (const [path, text] of code) next.set(path, edges(path, text, byBaseName, paths, barrel));
  // Walk backwards from the targets: every file that leads to one of them.
  const reverse = new Map<string, string[]>();
  for (const [from, tos] of next) for (const to of tos) reverse.set(to, [...(reverse.get(to) ?? []), from]);
  const reaching = new Set<string>();
  const queue = [...targets].filter((t) => paths.has(t));
  for (const t of queue) reaching.add(t);
  while (queue.length > 0) {
    for (const from of reverse.get(queue.pop()!) ?? []) {
      if (reaching.has(from)) continue;
      reaching.add(from);
      queue.push(from);
    }
  }
  return [...reaching].filter((path) => path.endsWith(".test.ts")).sort();
}
