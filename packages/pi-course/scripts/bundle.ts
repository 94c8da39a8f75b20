/**
 * The JavaScript that `@pi/course` ships: its entry points bundled by esbuild, so that an import
 * opens a few files instead of some 840 (the package's 160 modules and TypeBox's 680). Measured in
 * bench/00-startup.bench.ts: the root import went from about 6× pi-agent-core's to about 1×.
 *
 * What is bundled: the sources of `src/` and TypeBox (a peer dependency for its types; at run time
 * the bundle carries the copy it was built with, and TypeBox schemas are plain objects, so schemas
 * made with the user's copy check the same). What stays a package, loaded by name when used:
 * `yaml`, `jiti`, `quickjs-wasi`.
 *
 * The entry points share their code through chunks (one copy of every class, whichever entry a
 * program imports); a dynamic `import()` stays a chunk of its own, loaded when it runs. Every
 * chunk sits in `cli/`, beside `start.js`, because the eval command starts `eval-worker.js` from
 * the folder its own code is in. The source maps point into `src/`, which the package ships:
 * `node --enable-source-maps` shows the TypeScript lines learners read.
 *
 * TypeBox's compiler (`typebox/compile`: its schema engine, value operations and formats, about
 * 370 KB, a third of what the root import would otherwise read) is not in the chunks: the
 * sources' `import { Compile } from "typebox/compile"` is bundled as a stand-in whose `Compile`
 * loads the compiler on its first call, synchronously (`validatorFor` is synchronous), from a
 * CommonJS bundle of it beside the chunks (`cli/typebox-compile.cjs`). So a program pays for the
 * compiler when it first checks a value against a schema, not when it imports the package. The
 * validator it returns is TypeBox's own, so checks and their errors are the same; TypeBox keeps
 * no state between the builders' copy and the compiler's (a schema is a plain object). A program
 * that bundles `@pi/course` into its own bundle must ship that file beside the chunk that loads it.
 *
 * Some of Node's own modules cost a start more than the root import's code does and are used by
 * few paths (a bash command, a hash, a codemode worker, a login's callback server): the sources'
 * imports of `LAZY_BUILTINS` are bundled as stand-ins that load the module on the first call
 * (scripts/builtin-on-first-use.ts), so importing the package does not load them.
 *
 * `npm run build` runs `tsc` first (the declarations, and every module compiled one for one), then
 * `tsx scripts/bundle.ts`, which writes the entry points over tsc's. The tests' built CLI
 * (test/support/built-cli.ts) is this same bundle.
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";
import { type Plugin, build, buildSync } from "esbuild";

const PACKAGE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** The files a program or a process starts from, as paths under `src/` without `.ts`. */
export const ENTRY_POINTS = ["index", "cli/start", "cli/eval-worker"] as const;

/** Packages the bundle loads by name when a feature needs them (the package's dependencies). */
export const EXTERNAL = ["yaml", "jiti", "quickjs-wasi"] as const;

/** Where TypeBox's compiler is bundled, under `outdir`: beside the chunks, which load it by this name. */
export const COMPILER_FILE = "cli/typebox-compile.cjs";

/** The module the bundle has instead of `typebox/compile` (see the header). */
const COMPILER_STAND_IN = path.join(PACKAGE, "scripts", "typebox-compile-on-first-use.ts");

/**
 * Node modules the sources import that the bundle loads on first use (see the header): each one
 * measured, alone, at 2 to 5 ms of CPU for a fresh process to load, where the root import costs
 * about 45 ms in all.
 */
export const LAZY_BUILTINS = ["node:child_process", "node:crypto", "node:worker_threads", "node:http"] as const;

/** The module each stand-in of `LAZY_BUILTINS` is made with. */
const BUILTIN_STAND_IN = path.join(PACKAGE, "scripts", "builtin-on-first-use.ts");

/**
 * Bundles `ENTRY_POINTS` into `outdir` (`dist/index.js`, `dist/cli/start.js`, …) and TypeBox's
 * compiler into `outdir/COMPILER_FILE`; throws with esbuild's messages.
 */
export async function bundle(outdir: string, options: { sourcemap?: boolean } = {}): Promise<void> {
  buildSync({
    stdin: { contents: 'export { Compile } from "typebox/compile";', resolveDir: PACKAGE, loader: "js" },
    outfile: path.join(outdir, COMPILER_FILE),
    bundle: true,
    format: "cjs",
    platform: "node",
    target: "node20",
    logLevel: "warning",
  });
  const { metafile } = await build({
    entryPoints: ENTRY_POINTS.map((entry) => path.join(PACKAGE, "src", `${entry}.ts`)),
    outbase: path.join(PACKAGE, "src"),
    outdir,
    bundle: true,
    splitting: true,
    chunkNames: "cli/chunk-[name]-[hash]",
    format: "esm",
    platform: "node",
    target: "node20",
    external: [...EXTERNAL],
    sourcemap: options.sourcemap === true,
    alias: { "typebox/compile": COMPILER_STAND_IN },
    plugins: [builtinsOnFirstUse()],
    metafile: true,
    logLevel: "warning",
  });
  // The stand-in loads the compiler relative to its own file: that file must sit in `cli/` too.
  const holders = Object.entries(metafile.outputs).filter(([, output]) =>
    Object.keys(output.inputs).some((input) => path.resolve(input) === COMPILER_STAND_IN),
  );
  const misplaced = holders.filter(([file]) => path.basename(path.dirname(file)) !== path.dirname(COMPILER_FILE));
  if (holders.length === 0 || misplaced.length > 0)
    throw new Error(`bundle: the stand-in for typebox/compile must be in cli/, is in ${holders.map(([f]) => f)}`);
}

/** The sources' imports of `LAZY_BUILTINS` as stand-ins made with scripts/builtin-on-first-use.ts. */
function builtinsOnFirstUse(): Plugin {
  const sources = path.join(PACKAGE, "src") + path.sep;
  const lazy = new Set<string>(LAZY_BUILTINS);
  return {
    name: "builtins-on-first-use",
    setup(build) {
      build.onResolve({ filter: /^node:/ }, (args) =>
        lazy.has(args.path) && args.importer.startsWith(sources)
          ? { path: args.path, namespace: "builtin-on-first-use" }
          : undefined,
      );
      build.onLoad({ filter: /.*/, namespace: "builtin-on-first-use" }, (args) => ({
        contents: standInOf(args.path),
        resolveDir: PACKAGE,
        loader: "js",
      }));
    },
  };
}

/** The stand-in module of the Node module `specifier`: its functions and objects, loaded on first use. */
function standInOf(specifier: string): string {
  const real = createRequire(import.meta.url)(specifier) as Record<string, unknown>;
  const lines = [`import { functionOnFirstUse, objectOnFirstUse } from ${JSON.stringify(BUILTIN_STAND_IN)};`];
  for (const name of Object.keys(real).sort()) {
    // a getter (e.g. a deprecated one) is not read here, and not exported
    const value = Object.getOwnPropertyDescriptor(real, name)?.value;
    const on = JSON.stringify([specifier, name]).slice(1, -1);
    if (typeof value === "function") lines.push(`export const ${name} = functionOnFirstUse(${on});`);
    else if (typeof value === "object" && value !== null) lines.push(`export const ${name} = objectOnFirstUse(${on});`);
  }
  return lines.join("\n");
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await bundle(path.join(PACKAGE, "dist"), { sourcemap: true });
}
