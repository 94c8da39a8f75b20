/**
 * The @pi/course tarball as `npm pack` makes it, made once per state of the package.
 *
 * Contract: `packedCourse()` returns the path of a tarball of `packages/pi-course` and the files
 * it holds (npm's list). It runs `npm pack` (whose prepack builds `dist/`) under the pack lock,
 * unless a tarball made from the same package files is kept in `.test-build/packs/` (ignored by
 * git) and `dist/` still holds exactly what that pack built: then that tarball is returned. The
 * key is a hash of every file of the package but `dist/`, `test/`, `node_modules/` and
 * `.test-build/`, and of the root's `tsconfig.base.json` and `package-lock.json` (compiler options
 * and tool versions); a changed file gives a new pack. Callers must not change the tarball.
 *
 * Why: both package tests (this package's and @pi/course-restate's, which installs both tarballs)
 * packed @pi/course, so every `npm test` built it twice: a full declaration emit of `src/` (a
 * type check of the whole library) and the bundle.
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { withPackLock } from "./pack-lock.js";

const PACKAGE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const REPO = path.resolve(PACKAGE, "..", "..");
const PACKS = path.join(PACKAGE, ".test-build", "packs");
const NOT_INPUTS = new Set(["dist", "test", "node_modules", ".test-build"]);
/** A kept pack older than this, of other package files, is removed when a new one is made. */
const STALE_MS = 60 * 60 * 1000;

export interface PackedCourse {
  tarball: string;
  /** The paths npm put in the tarball (`npm pack --json`'s `files`). */
  files: string[];
}

interface Kept extends PackedCourse {
  /** The hash of `dist/` right after the pack built it. */
  dist: string;
}

export function packedCourse(): PackedCourse {
  return withPackLock(() => {
    const key = inputsHash();
    const folder = path.join(PACKS, key);
    const kept = readKept(folder);
    if (kept !== undefined && kept.dist === treeHash(path.join(PACKAGE, "dist"))) {
      return { tarball: kept.tarball, files: kept.files };
    }
    rmSync(folder, { recursive: true, force: true });
    const staging = `${folder}.staging-${process.pid}`;
    mkdirSync(staging, { recursive: true });
    const packed = spawnSync("npm", ["pack", "--json", "--pack-destination", staging], {
      cwd: PACKAGE,
      encoding: "utf8",
    });
    // the build's errors (tsc writes them on stdout) say what broke
    if (packed.status !== 0) {
      rmSync(staging, { recursive: true, force: true });
      throw new Error(`npm pack in ${PACKAGE} failed:\n${packed.stdout}${packed.stderr}`);
    }
    const out = packed.stdout;
    const [info] = JSON.parse(out.slice(out.indexOf("["))) as { filename: string; files: { path: string }[] }[];
    const made: Kept = {
      tarball: path.join(folder, info!.filename),
      files: info!.files.map((f) => f.path),
      dist: treeHash(path.join(PACKAGE, "dist")),
    };
    writeFileSync(path.join(staging, "kept.json"), JSON.stringify(made));
    renameSync(staging, folder);
    removeStale(key);
    return { tarball: made.tarball, files: made.files };
  });
}

function readKept(folder: string): Kept | undefined {
  try {
    return JSON.parse(readFileSync(path.join(folder, "kept.json"), "utf8")) as Kept;
  } catch {
    return undefined;
  }
}

function inputsHash(): string {
  const hash = createHash("sha256");
  hash.update(treeHash(PACKAGE, NOT_INPUTS));
  for (const file of ["tsconfig.base.json", "package-lock.json"]) hash.update(readFileSync(path.join(REPO, file)));
  return hash.digest("hex").slice(0, 16);
}

/** A hash of every file's path and bytes under `root` (but the top-level entries in `skip`); "" when it does not exist. */
function treeHash(root: string, skip: ReadonlySet<string> = new Set()): string {
  const hash = createHash("sha256");
  const walk = (folder: string, top: boolean): void => {
    let entries;
    try {
      entries = readdirSync(folder, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      if (top && skip.has(entry.name)) continue;
      const full = path.join(folder, entry.name);
      if (entry.isDirectory()) walk(full, false);
      else if (entry.isFile())
        hash.update(path.relative(root, full)).update("\0").update(readFileSync(full)).update("\0");
    }
  };
  walk(root, true);
  return hash.digest("hex");
}

function removeStale(current: string): void {
  for (const entry of readdirSync(PACKS)) {
    if (entry === current) continue;
    const full = path.join(PACKS, entry);
    try {
      if (Date.now() - statSync(full).mtimeMs > STALE_MS) rmSync(full, { recursive: true, force: true });
    } catch {
      // Removed by another process meanwhile.
    }
  }
}
