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

/** Typechecks one folder; returns tsc-style diagnostics, empty when it is clean. */
export function typecheckFolder(folder: string): string[] {
  const configPath = join(folder, "tsconfig.json");
  const problems: ts.Diagnostic[] = [];
  const parsed = ts.getParsedCommandLineOfConfigFile(configPath, {}, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => problems.push(d),
  });
  const format: ts.FormatDiagnosticsHost = {
    getCanonicalFileName: (f) => f,
    getCurrentDirectory: () => folder,
    getNewLine: () => "\n",
  };
  if (!parsed) return problems.map((d) => ts.formatDiagnostic(d, format).trim());
  const host = ts.createCompilerHost(parsed.options, true);
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
  const program = ts.createProgram({
    rootNames: parsed.fileNames,
    options: parsed.options,
    host,
    configFileParsingDiagnostics: ts.getConfigFileParsingDiagnostics(parsed),
    ...(parsed.projectReferences && { projectReferences: parsed.projectReferences }),
  });
  const diagnostics = [...ts.getPreEmitDiagnostics(program)];
  return diagnostics.map((d) => ts.formatDiagnostic(d, format).trim());
}
