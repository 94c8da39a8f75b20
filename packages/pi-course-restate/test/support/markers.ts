/**
 * The kill points of runs that a test lets go by themselves: every point a worker reaches is let
 * go at once (its `.go` file written), but those `held` says to hold, which wait until `go`.
 */
import { existsSync } from "node:fs";
import { mkdir, readdir, writeFile } from "node:fs/promises";
import path from "node:path";

export interface Markers {
  /** The folder to give runs as their `markers` option. */
  markers: string;
  /** Resolves once a worker reached `point` (`<run>.<point>`), with the pid that did. */
  reach(point: string): Promise<number>;
  /** Lets a held point go. */
  go(point: string): Promise<void>;
  /** Stops letting points go. */
  stop(): void;
}

/** Makes `<root>/markers-<name>` and lets its points go but the held ones. */
export async function markersFor(root: string, name: string, held: (point: string) => boolean): Promise<Markers> {
  const markers = path.join(root, `markers-${name}`);
  await mkdir(markers);
  const timer = setInterval(async () => {
    for (const file of await readdir(markers).catch(() => [] as string[])) {
      if (file.endsWith(".go")) continue;
      const point = file.split("@")[0]!;
      const go = path.join(markers, `${point}.go`);
      if (!held(point) && !existsSync(go)) await writeFile(go, "");
    }
  }, 10);
  return {
    markers,
    async reach(point) {
      for (;;) {
        const file = (await readdir(markers)).find((f) => f.startsWith(`${point}@`));
        if (file !== undefined) return Number(file.split("@")[1]);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    },
    go: (point) => writeFile(path.join(markers, `${point}.go`), ""),
    stop: () => clearInterval(timer),
  };
}
