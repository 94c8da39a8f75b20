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
 * `npm run build` runs `tsc` first (the declarations, and every module compiled one for one), then
 * `tsx scripts/bundle.ts`, which writes the entry points over tsc's. The tests' built CLI
 * (test/support/built-cli.ts) is this same bundle.
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { buildSync } from "esbuild";

const PACKAGE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** The files a program or a process starts from, as paths under `src/` without `.ts`. */
export const ENTRY_POINTS = ["index", "cli/start", "cli/eval-worker"] as const;

/** Packages the bundle loads by name when a feature needs them (the package's dependencies). */
export const EXTERNAL = ["yaml", "jiti", "quickjs-wasi"] as const;

/** Bundles `ENTRY_POINTS` into `outdir` (`dist/index.js`, `dist/cli/start.js`, …); throws with esbuild's messages. */
export function bundle(outdir: string, options: { sourcemap?: boolean } = {}): void {
  buildSync({
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
    logLevel: "warning",
  });
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  bundle(path.join(PACKAGE, "dist"), { sourcemap: true });
}
