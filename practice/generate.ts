/**
 * The generator: derives snapshot(N) and practice(N) from the final sources, in memory, and
 * writes a view to a folder (all or nothing).
 *
 * - snapshot(N): every file and region of chapters <= N, the tests of chapters <= N.
 * - practice(N): the same, with each lab body of chapter N replaced by a construction site.
 * - an observe chapter's view: the whole catalogued library, plus the chapter's own files.
 *
 * A file that no chapter owns is not copied; a region of a chapter after N is left out, whether
 * or not that chapter is catalogued yet.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { isBuiltin } from "node:module";
import { basename, dirname, join, posix } from "node:path";
import { PACKAGE_DIR, REPO_ROOT, type Catalogue, type Chapter } from "./catalogue.js";
import { renderLearning } from "./learning.js";
import type { View, ViewKind } from "./view.js";
import { pad, renderFile, scanFile, type ChapterRegion, type LabRegion } from "./markers.js";

/** Where the sources are read from; tests point these at a fixture tree. */
export interface Sources {
  /** Holds src/ and test/ (packages/pi-course). */
  packageDir: string;
  /** Holds package.json, packages/pi-course/package.json and tsconfig.base.json (for pins). */
  repoRoot: string;
}

export const REPO_SOURCES: Sources = { packageDir: PACKAGE_DIR, repoRoot: REPO_ROOT };

export type { View, ViewKind } from "./view.js";

/** The marker facts of every catalogued file. */
export interface SourceScan {
  /** Package-relative path → owning chapter, for every file any view may hold. */
  owners: Map<string, Chapter>;
  labs: LabRegion[];
  regions: ChapterRegion[];
}

const TS_RE = /\.(ts|mts|tsx)$/;

function readText(sources: Sources, path: string): string {
  return readFileSync(join(sources.packageDir, path), "utf8");
}

/** Relative imports of a TypeScript file, as package-relative .ts paths. */
export function relativeImports(from: string, text: string): string[] {
  const out: string[] = [];
  for (const specifier of importSpecifiers(text)) {
    if (!specifier.startsWith(".")) continue;
    const target = posix.normalize(posix.join(posix.dirname(from), specifier)).replace(/\.js$/, ".ts");
    out.push(target);
  }
  return out;
}

function importSpecifiers(text: string): string[] {
  const re =
    /(?:^|[\s;])(?:import|export)\s[^'"`;]*?from\s*["']([^"']+)["']|import\s*\(\s*["']([^"']+)["']\s*\)|(?:^|[\s;])import\s*["']([^"']+)["']/g;
  const out: string[] = [];
  for (const m of text.matchAll(re)) out.push((m[1] ?? m[2] ?? m[3])!);
  return out;
}

/**
 * Every module a file reaches by name: its imports, and what it loads through `require` or
 * `require.resolve` (`require.resolve("quickjs-wasi/quickjs.wasm")` needs the package as surely
 * as an import does, though TypeScript does not see it).
 */
export function packageSpecifiers(text: string): string[] {
  const required = [...text.matchAll(/\brequire(?:\.resolve)?\s*\(\s*["']([^"']+)["']\s*\)/g)].map((m) => m[1]!);
  return [...importSpecifiers(text), ...required];
}

/**
 * Which chapter owns each file a view may hold: the declared files and focused tests, plus the
 * test/ files those tests import (owned by the first chapter whose tests reach them).
 */
export function fileOwners(catalogue: Catalogue, sources: Sources): Map<string, Chapter> {
  const owners = new Map<string, Chapter>();
  for (const chapter of catalogue.chapters) {
    for (const file of chapter.files) {
      if (!existsSync(join(sources.packageDir, file))) {
        throw new Error(`${chapter.source}: owns ${file}, which does not exist in ${sources.packageDir}.`);
      }
      owners.set(file, chapter);
    }
    if (existsSync(join(sources.packageDir, chapter.testFile))) owners.set(chapter.testFile, chapter);
  }
  for (const chapter of catalogue.chapters) {
    const queue = [...owners]
      .filter(([f, c]) => c === chapter && f.startsWith("test/") && TS_RE.test(f))
      .map(([f]) => f);
    while (queue.length > 0) {
      const file = queue.shift()!;
      for (const target of relativeImports(file, readText(sources, file))) {
        if (!target.startsWith("test/") || owners.has(target)) continue;
        if (!existsSync(join(sources.packageDir, target))) continue;
        owners.set(target, chapter);
        queue.push(target);
      }
    }
  }
  return owners;
}

/** Scans every catalogued file's markers and checks them against the catalogue's labs. */
export function scanSources(catalogue: Catalogue, sources: Sources = REPO_SOURCES): SourceScan {
  const owners = fileOwners(catalogue, sources);
  const scan: SourceScan = { owners, labs: [], regions: [] };
  for (const [file, owner] of owners) {
    if (!TS_RE.test(file)) continue;
    const found = scanFile(readText(sources, file), sourcesPrefix(sources) + file, owner.number);
    scan.labs.push(...found.labs);
    scan.regions.push(...found.regions);
  }
  for (const lab of scan.labs) {
    const chapter = catalogue.chapters.find((c) => c.number === lab.chapter);
    if (chapter && !chapter.labs.some((l) => l.id === lab.lab)) {
      throw new Error(
        `${lab.file}:${lab.line}: lab ${lab.lab} is not declared in ${chapter.source} ` +
          `(declared: ${chapter.labs.map((l) => l.id).join(", ")}).`,
      );
    }
  }
  for (const chapter of catalogue.rebuild) {
    for (const lab of chapter.labs) {
      if (!scan.labs.some((l) => l.lab === lab.id)) {
        throw new Error(
          `${chapter.source}: lab ${lab.id} has no \`// #region lab ${lab.id} symbol\` in the ` +
            "chapter's code; mark the body the learner writes.",
        );
      }
    }
  }
  return scan;
}

function sourcesPrefix(sources: Sources): string {
  return sources.packageDir === PACKAGE_DIR ? "packages/pi-course/" : "";
}

/** The labs of one chapter as found in the sources, in catalogue order. */
export function labsOf(chapter: Chapter, scan: SourceScan): LabRegion[] {
  const order = chapter.labs.map((l) => l.id);
  return scan.labs
    .filter((l) => l.chapter === chapter.number)
    .sort((a, b) => order.indexOf(a.lab) - order.indexOf(b.lab));
}

/** Builds snapshot(N) or practice(N) in memory. */
export function buildView(
  catalogue: Catalogue,
  chapter: Chapter,
  kind: ViewKind,
  sources: Sources = REPO_SOURCES,
  options: { done?: readonly string[]; scan?: SourceScan } = {},
): View {
  const scan = options.scan ?? scanSources(catalogue, sources);
  const done = kind === "practice" ? [...(options.done ?? [])] : [];
  const keep = new Set(done);
  const observe = chapter.mode === "observe";
  const last = catalogue.rebuild.at(-1)?.number ?? 0;
  const upTo = observe ? last : chapter.number;
  const cut = kind === "practice" && !observe ? chapter.number : undefined;
  const included = catalogue.chapters.filter((c) => c === chapter || (c.mode === "rebuild" && c.number <= upTo));
  const files = new Map<string, string | Buffer>();
  for (const [file, owner] of scan.owners) {
    if (!included.includes(owner)) continue;
    if (TS_RE.test(file)) {
      const number = owner.mode === "observe" ? upTo : owner.number;
      files.set(
        file,
        renderFile(readText(sources, file), file, number, { upTo, keep, ...(cut !== undefined && { cut }) }),
      );
    } else {
      files.set(file, readFileSync(join(sources.packageDir, file)));
    }
  }
  const missingTests = included.map((c) => c.testFile).filter((f) => !scan.owners.has(f));
  const view: View = { chapter, kind, files, included, missingTests, done };
  files.set("package.json", packageJson(view, sources));
  files.set("tsconfig.json", tsconfigJson(sources));
  files.set("vitest.config.ts", VITEST_CONFIG);
  files.set(".gitignore", "node_modules/\n.test-build/\n");
  files.set("LEARNING.md", renderLearning(chapter, labsOf(chapter, scan), view));
  return view;
}

/** Always needed to typecheck and test; versions are the repository's pins. */
const BASE_DEV = ["typescript", "vitest", "vite", "@types/node"];

function packageName(specifier: string): string | undefined {
  if (specifier.startsWith(".") || specifier.startsWith("/") || isBuiltin(specifier)) return undefined;
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0];
}

function pins(sources: Sources): {
  dev: Record<string, string>;
  runtime: Record<string, string>;
  allowScripts: Record<string, boolean> | undefined;
} {
  const root = JSON.parse(readFileSync(join(sources.repoRoot, "package.json"), "utf8"));
  const lib = JSON.parse(readFileSync(join(sources.repoRoot, "packages", "pi-course", "package.json"), "utf8"));
  // The library's runtime packages are pinned in its devDependencies (peer ranges are for users).
  return {
    dev: { ...root.devDependencies },
    runtime: { ...lib.devDependencies, ...lib.dependencies },
    allowScripts: root.allowScripts,
  };
}

function packageJson(view: View, sources: Sources): string {
  const { dev, runtime, allowScripts } = pins(sources);
  const dependencies: Record<string, string> = {};
  const devDependencies: Record<string, string> = {};
  // the extra packages of every chapter whose tests the view holds (chapter 08's spawn tsx)
  const needed = new Set<string>(view.included.flatMap((c) => c.devDependencies ?? []));
  for (const [file, content] of view.files) {
    if (typeof content !== "string" || !TS_RE.test(file)) continue;
    for (const specifier of packageSpecifiers(content)) {
      const name = packageName(specifier);
      if (name !== undefined) needed.add(name);
    }
  }
  for (const name of needed) {
    if (runtime[name]) dependencies[name] = runtime[name];
    else if (dev[name]) devDependencies[name] = dev[name];
    else {
      throw new Error(
        `chapter ${view.chapter.id}: the code imports "${name}", which neither the root package.json ` +
          "nor packages/pi-course/package.json pins. Add it there first.",
      );
    }
  }
  for (const name of BASE_DEV) {
    if (!dev[name]) throw new Error(`the root package.json must pin ${name}.`);
    devDependencies[name] = dev[name];
  }
  const id = view.chapter.id;
  const pkg = {
    name: `pi-practice-${id}`,
    version: "0.0.0",
    private: true,
    description: `@pi/course chapter ${id}: ${view.chapter.title.en} (${view.kind === "practice" ? "practice" : "snapshot"})`,
    type: "module",
    engines: { node: ">=20" },
    scripts: {
      // Type errors and expectTypeOf tests count: the typecheck runs first (vitest alone strips
      // types). Arguments (`npm test -- -t "Lab 3.2"`) are appended, so they reach vitest.
      test: "tsc --noEmit -p tsconfig.json && vitest run",
      "test:watch": "vitest",
      typecheck: "tsc --noEmit -p tsconfig.json",
      ...view.chapter.scripts,
    },
    ...(Object.keys(dependencies).length > 0 && { dependencies: sorted(dependencies) }),
    devDependencies: sorted(devDependencies),
    // The repository's install-script decisions, so `npm install` there warns about nothing either.
    ...(allowScripts !== undefined && { allowScripts }),
  };
  return JSON.stringify(pkg, null, 2) + "\n";
}

function sorted(record: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => a.localeCompare(b)));
}

function tsconfigJson(sources: Sources): string {
  const base = JSON.parse(readFileSync(join(sources.repoRoot, "tsconfig.base.json"), "utf8"));
  const config = {
    compilerOptions: { ...base.compilerOptions, noEmit: true },
    include: ["src/**/*.ts", "kit/**/*.ts", "test/**/*.ts", "vitest.config.ts"],
  };
  return JSON.stringify(config, null, 2) + "\n";
}

const VITEST_CONFIG = `import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 10_000,
    hookTimeout: 60_000,
    // A learner's folder: heavy suites bound themselves by time here (chapter 10's crash test).
    env: { PI_COURSE_FOLDER: "practice" },
  },
});
`;

export interface WriteOptions {
  /**
   * Instead of expecting \`npm install\` (the CI proof): a node_modules that holds what the folder's
   * package.json declares and nothing else, each package a link into this folder, as an install of
   * that package.json would (plus \`.bin\`). Code that loads a package the folder does not declare
   * fails there as it would for a learner.
   */
  linkNodeModules?: string;
  /** Runs after the files are written, before the folder is moved into place (tests). */
  beforeCommit?: (staging: string) => void;
}

/**
 * Writes a view into `target`, which must not exist. The files are written into a sibling
 * staging folder that is renamed into place at the end; on any failure the staging folder and
 * any parent folders this call created are removed, so nothing half-made is left behind.
 */
export function writeView(view: View, target: string, options: WriteOptions = {}): void {
  if (existsSync(target)) throw new Error(`${target} already exists.`);
  const parent = dirname(target);
  const createdParent = mkdirSync(parent, { recursive: true });
  const staging = join(parent, `.${basename(target)}.partial-${process.pid}`);
  try {
    mkdirSync(staging);
    for (const [file, content] of view.files) {
      const path = join(staging, file);
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, content);
    }
    if (options.linkNodeModules) linkDeclared(options.linkNodeModules, staging);
    options.beforeCommit?.(staging);
    renameSync(staging, target);
  } catch (error) {
    rmSync(staging, { recursive: true, force: true });
    if (createdParent) rmSync(createdParent, { recursive: true, force: true });
    throw error;
  }
}

/** \`staging/node_modules\` with a link into \`from\` for each package \`staging/package.json\` declares. */
function linkDeclared(from: string, staging: string): void {
  const pkg = JSON.parse(readFileSync(join(staging, "package.json"), "utf8")) as {
    dependencies?: Record<string, string>;
    devDependencies?: Record<string, string>;
  };
  const modules = join(staging, "node_modules");
  mkdirSync(modules);
  for (const name of [...Object.keys(pkg.dependencies ?? {}), ...Object.keys(pkg.devDependencies ?? {})]) {
    const link = join(modules, name);
    mkdirSync(dirname(link), { recursive: true }); // a scope's folder
    symlinkSync(join(from, name), link, "dir");
  }
  symlinkSync(join(from, ".bin"), join(modules, ".bin"), "dir");
}

/** The default folder for a chapter: ../pi-practice-NN beside the repository. */
export function defaultTarget(chapter: Chapter, repoRoot: string = REPO_ROOT): string {
  return join(dirname(repoRoot), `pi-practice-${pad(chapter.number)}`);
}
