/**
 * `tsc --noEmit -p <folder>/tsconfig.json` for many generated folders at once, in process.
 *
 * All folders go into one compiler program (their compiler options must agree), so the
 * libraries' declarations under node_modules (one symlinked place) are parsed, bound and resolved
 * once. Each folder's files are still its own files, resolved inside the folder, and a diagnostic
 * is reported for the folder its file lives in. A file that many folders hold in the same context
 * (the same text, reaching the same files) is checked once; see `typecheckFolders`.
 */
import { realpathSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import ts from "typescript";

const shared = new Map<string, ts.SourceFile>();

function keyOf(fileName: string, version: ts.ScriptTarget | ts.CreateSourceFileOptions): string | undefined {
  if (!fileName.includes("/node_modules/")) return undefined;
  let real: string;
  try {
    real = realpathSync(fileName);
  } catch {
    return undefined;
  }
  const options = typeof version === "object" ? version : { languageVersion: version };
  return `${real}\0${options.languageVersion}\0${options.impliedNodeFormat ?? ""}`;
}

/** The tsc-style text of a diagnostic. */
function formatted(diagnostic: ts.Diagnostic, folder: string): string {
  return ts
    .formatDiagnostic(diagnostic, {
      getCanonicalFileName: (f) => f,
      getCurrentDirectory: () => folder,
      getNewLine: () => "\n",
    })
    .trim();
}

/** How many files of the folders were checked, and how many were given an identical file's diagnostics. */
export interface TypecheckStats {
  checked: number;
  reused: number;
}

/**
 * Typechecks several generated folders in one program, as `tsc --noEmit -p <folder>` would each
 * (their tsconfig.json files must agree on compiler options, which generated folders do). The
 * folders share nothing but node_modules (a symlink to the same place), so one checker resolves
 * the libraries' types once for all of them. Returns each folder's diagnostics (empty when clean);
 * a diagnostic outside every folder is reported for all of them.
 *
 * Most files are the same in many folders (a test file of chapter 05 sits in ~20 views). A file
 * is checked once per distinct *context*: its text and path in the folder; the path and the
 * signatures of every file it reaches through its imports (followed transitively, as the compiler
 * resolved them; a signature is the file's text without the bodies behind a written return type,
 * which no other file can see); and the same for every file of its folder that can change types
 * outside itself (a module augmentation, `declare global`, a script, a declaration file). Two
 * files with the same context get the same diagnostics from the compiler, so the second one is
 * given the first one's (their paths rewritten to its folder) instead of being checked again. A folder where the
 * compiler's module resolutions cannot be read, or whose files hold triple-slash references, is
 * checked file by file as before.
 */
export function typecheckFolders(folders: readonly string[], stats?: TypecheckStats): Map<string, string[]> {
  const result = new Map<string, string[]>(folders.map((f) => [f, []]));
  const rootNames: string[] = [];
  let options: ts.CompilerOptions | undefined;
  let optionsKey: string | undefined;
  const configDiagnostics: ts.Diagnostic[] = [];
  for (const folder of folders) {
    const problems: ts.Diagnostic[] = [];
    const parsed = ts.getParsedCommandLineOfConfigFile(
      join(folder, "tsconfig.json"),
      {},
      {
        ...ts.sys,
        onUnRecoverableConfigFileDiagnostic: (d) => problems.push(d),
      },
    );
    if (!parsed) {
      result.set(
        folder,
        problems.map((d) => formatted(d, folder)),
      );
      continue;
    }
    configDiagnostics.push(...ts.getConfigFileParsingDiagnostics(parsed));
    const { configFilePath: _path, ...rest } = parsed.options;
    const key = JSON.stringify(rest);
    if (optionsKey !== undefined && key !== optionsKey) {
      throw new Error(`typecheckFolders: ${folder}/tsconfig.json has other compiler options than the first folder's.`);
    }
    optionsKey = key;
    options ??= parsed.options;
    rootNames.push(...parsed.fileNames);
  }
  if (!options) return result;
  const host = ts.createCompilerHost(options, true);
  const original = host.getSourceFile.bind(host);
  host.getSourceFile = (fileName, version, onError, shouldCreate) => {
    const key = keyOf(fileName, version);
    if (key === undefined) return original(fileName, version, onError, shouldCreate);
    let file = shared.get(key);
    if (!file) {
      file = original(fileName, version, onError, shouldCreate);
      if (file) shared.set(key, file);
    }
    return file;
  };
  const program = ts.createProgram({ rootNames, options, host, configFileParsingDiagnostics: configDiagnostics });
  const ownerOf = (file: string | undefined) =>
    file === undefined ? undefined : folders.find((f) => file.startsWith(f + "/"));
  const report = (diagnostic: ts.Diagnostic) => {
    const owner = ownerOf(diagnostic.file?.fileName);
    for (const folder of owner !== undefined ? [owner] : folders)
      result.get(folder)!.push(formatted(diagnostic, folder));
  };
  // What `ts.getPreEmitDiagnostics(program)` collects, file by file.
  for (const diagnostic of [...configDiagnostics, ...program.getOptionsDiagnostics()]) report(diagnostic);
  const contexts = new Contexts(program, folders);
  const checked = new Map<string, { folder: string; texts: string[] }>();
  for (const file of program.getSourceFiles()) {
    const folder = ownerOf(file.fileName);
    const context = folder === undefined ? undefined : contexts.of(file, folder);
    const same = context === undefined ? undefined : checked.get(context);
    if (folder !== undefined && same !== undefined) {
      // The first folder's text with its paths made this folder's.
      result.get(folder)!.push(...same.texts.map((text) => text.split(same.folder + "/").join(folder + "/")));
      if (stats) stats.reused++;
      continue;
    }
    const diagnostics = [...program.getSyntacticDiagnostics(file), ...program.getSemanticDiagnostics(file)];
    if (options.declaration || options.composite) diagnostics.push(...program.getDeclarationDiagnostics(file));
    for (const diagnostic of diagnostics) report(diagnostic);
    if (stats && folder !== undefined) stats.checked++;
    if (folder !== undefined && context !== undefined) {
      const texts = diagnostics.filter((d) => ownerOf(d.file?.fileName) === folder).map((d) => formatted(d, folder));
      if (texts.length === diagnostics.length) checked.set(context, { folder, texts });
    }
  }
  for (const diagnostic of program.getGlobalDiagnostics()) report(diagnostic);
  return result;
}

/**
 * The context of a file (see `typecheckFolders`) as one string; undefined when the file must be
 * checked whatever other folders hold. Paths inside a folder are written relative to it.
 */
class Contexts {
  private readonly byPath = new Map<string, ts.SourceFile>();
  private readonly global = new Map<string, string | undefined>();
  private readonly edges = new Map<ts.SourceFile, string[] | undefined>();
  private readonly shapes = new Map<ts.SourceFile, string>();
  private readonly resolutions:
    | ((
        callback: (resolution: { resolvedModule?: { resolvedFileName: string } }, name: string) => void,
        file: ts.SourceFile,
      ) => void)
    | undefined;

  constructor(
    private readonly program: ts.Program,
    private readonly folders: readonly string[],
  ) {
    for (const file of program.getSourceFiles()) this.byPath.set(file.fileName, file);
    // Not in TypeScript's public API: the module resolutions the program made, per file.
    const each = (program as { forEachResolvedModule?: unknown }).forEachResolvedModule;
    this.resolutions = typeof each === "function" ? (each.bind(program) as Contexts["resolutions"]) : undefined;
  }

  of(file: ts.SourceFile, folder: string): string | undefined {
    const own = this.closure(file, folder);
    const global = this.globalOf(folder);
    return own === undefined || global === undefined ? undefined : `${own}\0\0${global}`;
  }

  /** The files of the folder that can change types in files that do not import them. */
  private globalOf(folder: string): string | undefined {
    if (this.global.has(folder)) return this.global.get(folder);
    const parts: string[] = [];
    let context: string | undefined = "";
    for (const file of this.program.getSourceFiles()) {
      if (!file.fileName.startsWith(folder + "/")) continue;
      if (
        file.referencedFiles.length > 0 ||
        file.typeReferenceDirectives.length > 0 ||
        file.libReferenceDirectives.length > 0
      ) {
        context = undefined;
        break;
      }
      if (!affectsOthers(file)) continue;
      const closure = this.closure(file, folder);
      if (closure === undefined) {
        context = undefined;
        break;
      }
      parts.push(closure);
    }
    if (context !== undefined) context = parts.sort().join("\0\0");
    this.global.set(folder, context);
    return context;
  }

  /** The file and every file it reaches through its imports, each as `path` and text. */
  private closure(start: ts.SourceFile, folder: string): string | undefined {
    const seen = new Set<ts.SourceFile>([start]);
    const todo = [start];
    const parts: string[] = [];
    while (todo.length > 0) {
      const file = todo.pop()!;
      if (!file.fileName.startsWith(folder + "/")) {
        // Outside the folder (node_modules is one shared place): the same file for every folder.
        if (this.folders.some((f) => file.fileName.startsWith(f + "/"))) return undefined;
        parts.push(`= ${file.fileName}`);
        continue;
      }
      parts.push(`${file.fileName.slice(folder.length)}\0${file === start ? file.text : this.shapeOf(file)}`);
      const targets = this.targetsOf(file);
      if (targets === undefined) return undefined;
      for (const target of targets) {
        const next = this.byPath.get(target);
        if (next === undefined) {
          parts.push(`? ${target.startsWith(folder + "/") ? target.slice(folder.length) : target}`);
        } else if (!seen.has(next)) {
          seen.add(next);
          todo.push(next);
        }
      }
    }
    return parts.sort().join("\0");
  }

  /**
   * What other files can see of a file: its text with the body of every function whose return
   * type is written out (and of every constructor and setter) left out. A caller sees only such
   * a function's signature; a body without a written return type stays, since it decides the type.
   */
  private shapeOf(file: ts.SourceFile): string {
    let shape = this.shapes.get(file);
    if (shape !== undefined) return shape;
    const cuts: [number, number][] = [];
    const visit = (node: ts.Node): void => {
      if (ts.isFunctionLike(node) && "body" in node && node.body !== undefined) {
        const body = node.body as ts.Node;
        if (node.type !== undefined || ts.isConstructorDeclaration(node) || ts.isSetAccessorDeclaration(node)) {
          ts.forEachChild(node, (child) => (child === body ? undefined : visit(child)));
          cuts.push([body.getStart(file), body.end]);
          return;
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(file);
    shape = "";
    let at = 0;
    for (const [from, to] of cuts.sort((a, b) => a[0] - b[0])) {
      shape += `${file.text.slice(at, from)}{…}`;
      at = to;
    }
    shape += file.text.slice(at);
    this.shapes.set(file, shape);
    return shape;
  }

  /** The files a file's imports resolved to, and an entry for each that did not resolve. */
  private targetsOf(file: ts.SourceFile): string[] | undefined {
    if (this.edges.has(file)) return this.edges.get(file);
    let targets: string[] | undefined;
    if (this.resolutions !== undefined) {
      targets = [];
      this.resolutions(
        (resolution, name) => targets!.push(resolution.resolvedModule?.resolvedFileName ?? `unresolved ${name}`),
        file,
      );
    }
    this.edges.set(file, targets);
    return targets;
  }
}

/** A script, a declaration file, or a module that declares a module or the global scope. */
function affectsOthers(file: ts.SourceFile): boolean {
  return !ts.isExternalModule(file) || file.isDeclarationFile || file.statements.some((s) => ts.isModuleDeclaration(s));
}

/** Typechecks one folder; returns tsc-style diagnostics, empty when it is clean. */
export function typecheckFolder(folder: string): string[] {
  return typecheckFolders([folder]).get(folder)!;
}

/**
 * As a command (the proof runs it in a child process, beside the tests of other folders):
 *   tsx practice/typecheck.ts <folder>...   prints {"<folder>": ["<diagnostic>", …], …}
 *   tsx practice/typecheck.ts --serve       reads one JSON array of folders per line and answers
 *                                           each with a line {"result": {…}} or {"error": "…"},
 *                                           in order, until stdin ends (node_modules parsed once)
 */
if (process.argv[1] && realpathSync(process.argv[1]) === realpathSync(new URL(import.meta.url).pathname)) {
  const folders = process.argv.slice(2);
  if (folders[0] === "--serve") {
    createInterface({ input: process.stdin }).on("line", (line) => {
      let answer: { result?: Record<string, string[]>; error?: string };
      try {
        answer = { result: Object.fromEntries(typecheckFolders(JSON.parse(line) as string[])) };
      } catch (error) {
        answer = { error: error instanceof Error ? error.message : String(error) };
      }
      process.stdout.write(JSON.stringify(answer) + "\n");
    });
  } else {
    process.stdout.write(JSON.stringify(Object.fromEntries(typecheckFolders(folders))));
  }
}
