/**
 * `npm pack` of @pi/course rebuilds `packages/pi-course/dist` (prepack). Both packages' package
 * tests need that tarball (packed-course.ts packs it once), and vitest runs test files side by
 * side: one pack must not read the declarations the other is rewriting. `withPackLock` runs `pack` while holding a lock folder that every pack
 * of the repository takes (synchronously, as the packs themselves run).
 */
import { mkdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const LOCK = join(tmpdir(), "pi-course-pack.lock");
/** A lock older than this was left by a killed run. */
const STALE_MS = 10 * 60_000;

export function withPackLock<T>(pack: () => T): T {
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (;;) {
    try {
      mkdirSync(LOCK);
      break;
    } catch {
      const age = Date.now() - (statSync(LOCK, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
      if (age > STALE_MS) rmSync(LOCK, { recursive: true, force: true });
      else Atomics.wait(pause, 0, 0, 100);
    }
  }
  try {
    return pack();
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
}
