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
 * What a program seldom uses is not evaluated when it imports the package: the sources' imports of
 * it are bundled as stand-ins (scripts/on-first-use.ts) that load the real module on first use,
 * synchronously (the sources call them synchronously, e.g. `validatorFor`). Sources are unchanged.
 * - TypeBox's compiler (`typebox/compile`: the schema engine, value operations and formats, about
 *   370 KB, a third of what the root import read) is bundled as CommonJS beside the chunks
 *   (`cli/typebox-compile.cjs`) and loaded by the first check. The validator is TypeBox's own, so
 *   checks and their errors are the same.
 * - TypeBox's `Type` has at once the builders the sources call (`Type.Object`, …, found in
 *   `src/`); any other member (an extension's `api.Type.Script`, say) loads the whole `Type`,
 *   bundled as `cli/typebox-type.cjs`. The rest of `Type` (its TypeScript-syntax parser, the
 *   type-level actions: `Omit`, `Mapped`, …) is some 65 KB that only such members need.
 *   `Type.Record` comes from `LIGHT_BUILDERS` (scripts/typebox-record.ts): TypeBox's own builds a
 *   record through its type engine, 125 KB, where a record keyed by a string (every one of the
 *   sources', built while they load) needs two of its small parts; another key loads the whole `Type`.
 * - `LAZY_BUILTINS`, Node modules that cost a fresh process 2 to 5 ms each and serve few paths (a
 *   bash command, a hash, a codemode worker, a login's callback server).
 * TypeBox keeps no state that its copies would need to share (a schema is a plain object). A
 * program that bundles `@pi/course` into its own bundle must ship the `.cjs` files beside the
 * chunk that loads them.
 *
 * `npm run build` runs `tsc` first (the declarations, and every module compiled one for one), then
 * `tsx scripts/bundle.ts`, which writes the entry points over tsc's. The package test
 * (test/package.test.ts) runs this bundle as a user installs it, stand-ins included.
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { type Plugin, build, buildSync } from "esbuild";

const PACKAGE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** The files a program or a process starts from, as paths under `src/` without `.ts`. */
export const ENTRY_POINTS = ["index", "cli/start", "cli/eval-worker"] as const;

/** Packages the bundle loads by name when a feature needs them (the package's dependencies). */
export const EXTERNAL = ["yaml", "jiti", "quickjs-wasi"] as const;

/**
 * Node modules the sources import that the bundle loads on first use (see the header): each one
 * measured, alone, at 2 to 5 ms of CPU for a fresh process to load, where the root import costs
 * about 45 ms in all.
 */
export const LAZY_BUILTINS = ["node:child_process", "node:crypto", "node:worker_threads", "node:http"] as const;

/** TypeBox, bundled as CommonJS under `outdir/cli/`, loaded by the stand-ins on first use (see the header). */
export const TYPEBOX_FILES = {
  "typebox-compile.cjs": 'export { Compile } from "typebox/compile";',
  "typebox-type.cjs": 'export { Type } from "typebox";',
} as const;

/**
 * Builders of TypeBox's `Type` that the bundle has from a smaller import path than TypeBox's own
 * (the module named; see its header): `Type.Record` alone brings in TypeBox's type engine, 125 KB.
 */
const LIGHT_BUILDERS: Readonly<Record<string, string>> = {
  Record: path.join(PACKAGE, "scripts", "typebox-record.ts"),
};

/** The module every stand-in is made with; the chunk that holds it loads `TYPEBOX_FILES` beside itself. */
const ON_FIRST_USE = path.join(PACKAGE, "scripts", "on-first-use.ts");

/**
 * Bundles `ENTRY_POINTS` into `outdir` (`dist/index.js`, `dist/cli/start.js`, …) and
 * `TYPEBOX_FILES` into `outdir/cli/`; throws with esbuild's messages.
 */
export async function bundle(outdir: string, options: { sourcemap?: boolean } = {}): Promise<void> {
  for (const [file, contents] of Object.entries(TYPEBOX_FILES)) {
    buildSync({
      stdin: { contents, resolveDir: PACKAGE, loader: "js" },
      outfile: path.join(outdir, "cli", file),
      bundle: true,
      format: "cjs",
      platform: "node",
      target: "node20",
      logLevel: "warning",
    });
  }
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
    plugins: [onFirstUse(new Set(Object.keys((await import("typebox")).Type)))],
    metafile: true,
    logLevel: "warning",
  });
  // The stand-ins load the CommonJS files relative to the chunk that holds ON_FIRST_USE: `cli/`.
  const holders = Object.entries(metafile.outputs).filter(([, output]) =>
    Object.keys(output.inputs).some((input) => path.resolve(input) === ON_FIRST_USE),
  );
  if (holders.length !== 1 || path.basename(path.dirname(holders[0]![0])) !== "cli")
    throw new Error(`bundle: ${ON_FIRST_USE} must be in one chunk in cli/, is in ${holders.map(([f]) => f)}`);
}

/** The stand-ins of the header, for imports from `src/`; `members`: those of TypeBox's `Type`. */
function onFirstUse(members: ReadonlySet<string>): Plugin {
  const sources = path.join(PACKAGE, "src") + path.sep;
  const lazy = new Set<string>(LAZY_BUILTINS);
  const standIns: Record<string, () => string> = {
    "typebox/compile": () =>
      `${importStandIns}\nexport const Compile = functionOnFirstUse("./typebox-compile.cjs", "Compile");`,
    typebox: () =>
      `${importStandIns}\nimport * as eager from "typebox-builders-used";\n` +
      'export const Type = objectOnFirstUse("./typebox-type.cjs", "Type", eager);',
    "typebox-builders-used": () => {
      const used = buildersUsed(members);
      const light = used.filter((name) => name in LIGHT_BUILDERS);
      return (
        `export { ${used.filter((name) => !(name in LIGHT_BUILDERS)).join(", ")} } from "typebox";\n` +
        light.map((name) => `export { ${name} } from ${JSON.stringify(LIGHT_BUILDERS[name])};`).join("\n")
      );
    },
  };
  return {
    name: "on-first-use",
    setup(build) {
      build.onResolve({ filter: /^(node:|typebox)/ }, (args) => {
        const fromSources = args.importer.startsWith(sources) || args.namespace === "on-first-use";
        if (!fromSources || !(lazy.has(args.path) || args.path in standIns)) return undefined;
        // the builders come from TypeBox itself
        if (args.path === "typebox" && args.importer === "typebox-builders-used") return undefined;
        return { path: args.path, namespace: "on-first-use" };
      });
      build.onLoad({ filter: /.*/, namespace: "on-first-use" }, (args) => ({
        contents: standIns[args.path]?.() ?? builtinStandIn(args.path),
        resolveDir: PACKAGE,
        loader: "js",
      }));
    },
  };
}

const importStandIns = `import { functionOnFirstUse, objectOnFirstUse } from ${JSON.stringify(ON_FIRST_USE)};`;

/**
 * The members of TypeBox's `Type` that `src/` names (`Type.Object`, …): those the stand-in has at
 * once. One the search misses is still there, loaded with the whole `Type` on first use.
 */
function buildersUsed(members: ReadonlySet<string>): string[] {
  const used = new Set<string>();
  const walk = (folder: string) => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const file = path.join(folder, entry.name);
      if (entry.isDirectory()) walk(file);
      else if (entry.name.endsWith(".ts"))
        for (const [, name] of readFileSync(file, "utf8").matchAll(/\bType\.([A-Za-z]+)\b/g))
          if (members.has(name!)) used.add(name!);
    }
  };
  walk(path.join(PACKAGE, "src"));
  return [...used].sort();
}

/** The stand-in module of the Node module `specifier`: its functions and objects, loaded on first use. */
function builtinStandIn(specifier: string): string {
  const real = createRequire(import.meta.url)(specifier) as Record<string, unknown>;
  const lines = [importStandIns];
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
