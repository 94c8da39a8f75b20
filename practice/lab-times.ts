/**
 * `npm run lab-times -- [NN...]`: how long a learner waits for each lab's focused run.
 *
 * For each chapter (default: every rebuild chapter), the chapter's snapshot is written to a
 * temporary folder (the answers in place, node_modules linked as a learner's install would have
 * them), and each lab's focused command, the one LEARNING.md and the practice printout give
 * (`npx vitest run test/NN- -t "Lab N\.M\b"`), is run there and timed, start to exit. The snapshot
 * is green, so the time is that of a run that passes: what a learner waits for once a lab is done.
 * Prints one line per lab, then the slowest. Run it on a quiet machine: the promise is under 15 s.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadCatalogue, REPO_ROOT } from "./catalogue.js";
import { buildView, REPO_SOURCES, scanSources, writeView } from "./generate.js";
import { focusedCommand } from "./learning.js";

interface LabTime {
  lab: string;
  seconds: number;
  passed: boolean;
}

async function main(): Promise<void> {
  const catalogue = await loadCatalogue();
  const wanted = process.argv.slice(2);
  const chapters = catalogue.chapters.filter(
    (c) => c.mode === "rebuild" && (wanted.length === 0 || wanted.includes(c.id)),
  );
  const scan = scanSources(catalogue, REPO_SOURCES);
  const times: LabTime[] = [];
  for (const chapter of chapters) {
    const root = mkdtempSync(join(tmpdir(), `pi-lab-times-${chapter.id}-`));
    try {
      const folder = join(root, "snapshot");
      writeView(buildView(catalogue, chapter, "snapshot", REPO_SOURCES, { scan }), folder, {
        linkNodeModules: join(REPO_ROOT, "node_modules"),
      });
      for (const lab of chapter.labs) {
        const started = performance.now();
        const run = spawnSync("sh", ["-c", focusedCommand(chapter.id, lab.id)], { cwd: folder, encoding: "utf8" });
        const time = { lab: lab.id, seconds: (performance.now() - started) / 1000, passed: run.status === 0 };
        times.push(time);
        process.stdout.write(
          `Lab ${time.lab.padEnd(5)} ${time.seconds.toFixed(1).padStart(5)} s${time.passed ? "" : "  FAILED"}\n`,
        );
        if (!time.passed) process.stdout.write(`${run.stdout.slice(-2000)}${run.stderr.slice(-2000)}\n`);
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  }
  const slowest = [...times].sort((a, b) => b.seconds - a.seconds).slice(0, 5);
  process.stdout.write(
    `${times.length} labs; slowest: ${slowest.map((t) => `${t.lab} ${t.seconds.toFixed(1)} s`).join(", ")}\n`,
  );
  if (times.some((t) => !t.passed)) process.exitCode = 1;
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
