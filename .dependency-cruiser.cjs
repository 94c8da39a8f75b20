/**
 * The rule of the arrows (ARCHITECTURE.md): no import cycles, and a folder of the library imports
 * only its own layer or the layers below it. Type-only imports count (`tsPreCompilationDeps`).
 *
 * Layers of packages/pi-course/src, from the bottom:
 *   base/        helpers every layer may use (errors, timer, read-json, schema-validator, dollars):
 *                they import nothing of the library but each other
 *   vocabulary   the files at the top of src/ (types.ts, model.ts, event-stream.ts, messages.ts)
 *   models/      the scripted model, the HTTP pieces every provider shares, one folder per provider
 *   session/     the session file, context projection, compaction
 *   agent/       tools, the loop, the stateful Agent and its session binding
 *   coding-tools/
 *   features     every other folder (resources, mcp, eval, …): may use all of the above
 *   cli/         the composition root
 * index.ts is the package's door: it may import anything, and nothing inside src imports it.
 */
const SRC = "^packages/pi-course/src/";

/** A rule that forbids `layer` to import any folder of src/ outside `allowed` (base/ is always allowed). */
function layer(name, allowed) {
  return {
    name: `layer-${name}`,
    comment: `${name}/ imports only ${allowed.join(", ")}, base/ and the vocabulary at the top of src/ (ARCHITECTURE.md).`,
    severity: "error",
    from: { path: `${SRC}${name}/` },
    to: { path: `${SRC}[^/]+/`, pathNot: `${SRC}(${["base", ...allowed].join("|")})/` },
  };
}

module.exports = {
  forbidden: [
    {
      name: "no-circular",
      comment: "An import cycle (type-only imports included): split the shared part into a file both can import.",
      severity: "error",
      from: { path: "^(packages/[^/]+/src|practice)/" },
      to: { circular: true },
    },
    {
      name: "base-imports-only-base",
      comment: "base/ sits under everything: its helpers import no file of the library outside base/.",
      severity: "error",
      from: { path: `${SRC}base/` },
      to: { path: SRC, pathNot: `${SRC}base/` },
    },
    {
      name: "vocabulary-imports-no-layer",
      comment:
        "The files at the top of src/ are the vocabulary every layer reads: they import no folder of src/ but base/.",
      severity: "error",
      from: { path: `${SRC}[^/]+\\.ts$`, pathNot: `${SRC}index\\.ts$` },
      to: { path: `${SRC}[^/]+/`, pathNot: `${SRC}base/` },
    },
    {
      name: "types-imports-nothing",
      comment: "types.ts is plain data: it imports no file of the library.",
      severity: "error",
      from: { path: `${SRC}types\\.ts$` },
      to: { path: SRC },
    },
    {
      name: "no-index-inside",
      comment: "index.ts is the package's door for users; inside src/ import the file that defines the name.",
      severity: "error",
      from: { path: SRC },
      to: { path: `${SRC}index\\.ts$` },
    },
    layer("models", ["models"]),
    layer("session", ["models", "session"]),
    layer("agent", ["models", "session", "agent"]),
    layer("coding-tools", ["models", "session", "agent", "coding-tools"]),
    {
      name: "layer-features",
      comment: "A feature folder (resources, mcp, eval, …) may use every layer below the CLI, never the CLI.",
      severity: "error",
      from: { path: SRC, pathNot: `${SRC}(cli/|index\\.ts$)` },
      to: { path: `${SRC}cli/` },
    },
    {
      name: "library-imports-no-tests",
      comment: "The library does not import its tests, the course machinery or the benchmarks.",
      severity: "error",
      from: { path: SRC },
      to: { path: "^(packages/[^/]+/test|practice|bench)/" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "(^|/)(node_modules|dist)/|^practice/templates/" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: {
      conditionNames: ["import", "require", "node", "default", "types"],
      exportsFields: ["exports"],
      mainFields: ["module", "main", "types", "typings"],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
