/**
 * `tsc --noEmit -p <folder>/tsconfig.json`, in process, for many generated folders in a row.
 *
 * Each folder gets its own program and its own checker, exactly as `tsc` would build them from
 * the folder's tsconfig.json; only the parsed (and bound) declaration files under node_modules,
 * which are the same files in every folder (node_modules is a symlink), are shared between
 * programs, the way an editor's language service shares them. That turns ~18 cold compiler
 * starts into one.
 */
import { realpathSync } from "node:fs";
import { join } from "node:path";
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

/**
 * Typechecks several generated folders in one program, as `tsc --noEmit -p <folder>` would each
 * (their tsconfig.json files must agree on compiler options, which generated folders do). The
 * folders share nothing but node_modules (a symlink to the same place), so one checker resolves
 * the libraries' types once for all of them. Returns each folder's diagnostics (empty when clean);
 * a diagnostic outside every folder is reported for all of them.
 */
export function typecheckFolders(folders: readonly string[]): Map<string, string[]> {
  const result = new Map<string, string[]>(folders.map((f) => [f, []]));
  const rootNames: string[] = [];
  let options: ts.CompilerOptions | undefined;
  let optionsKey: string | undefined;
  const configDiagnostics: ts.Diagnostic[] = [];
  for (const folder of folders) {
    const problems: ts.Diagnostic[] = [];
    const parsed = ts.getParsedCommandLineOfConfigFile(join(folder, "tsconfig.json"), {}, {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => problems.push(d),
    });
    if (!parsed) {
      result.set(folder, problems.map((d) => formatted(d, folder)));
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
  for (const diagnostic of ts.getPreEmitDiagnostics(program)) {
    const file = diagnostic.file?.fileName;
    const owners = folders.filter((f) => file !== undefined && file.startsWith(f + "/"));
    for (const folder of owners.length > 0 ? owners : folders) {
      result.get(folder)!.push(formatted(diagnostic, folder));
    }
  }
  return result;
}

/** Typechecks one folder; returns tsc-style diagnostics, empty when it is clean. */
export function typecheckFolder(folder: string): string[] {
  return typecheckFolders([folder]).get(folder)!;
}

/**
 * As a command (the proof runs it in a child process, beside the tests of other folders):
 *   tsx practice/typecheck.ts <folder>...   prints {"<folder>": ["<diagnostic>", …], …}
 */
if (process.argv[1] && realpathSync(process.argv[1]) === realpathSync(new URL(import.meta.url).pathname)) {
  const folders = process.argv.slice(2);
  process.stdout.write(JSON.stringify(Object.fromEntries(typecheckFolders(folders))));
}
