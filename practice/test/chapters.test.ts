/**
 * The proof of every chapter in the catalogue (see practice/proof.ts): snapshot(N) and
 * practice(N) are generated into temporary folders and typechecked and tested there, two folders
 * at a time. One test per chapter, so `-t "chapter 05"` proves one chapter.
 */
import { afterAll, describe, expect, it } from "vitest";
import { loadCatalogue } from "../catalogue.js";
import { proveChapter } from "../proof.js";

const catalogue = await loadCatalogue();
const began = Date.now();
afterAll(() => {
  const seconds = ((Date.now() - began) / 1000).toFixed(1);
  console.log(`course proof: ${catalogue.chapters.length} chapters (${catalogue.chapters.map((c) => c.id).join(", ")}) in ${seconds}s`);
});

describe("the course: every chapter's snapshot and practice folder", () => {
  it.concurrent.each(catalogue.chapters.map((c) => [`chapter ${c.id} (${c.slug})`, c] as const))(
    "%s: snapshot green, practice red for the right reason, no answer leaked",
    async (_name, chapter) => {
      const started = Date.now();
      const report = await proveChapter(catalogue, chapter);
      const steps = Object.entries(report.timings)
        .map(([step, ms]) => `${step} ${(ms / 1000).toFixed(1)}s`)
        .join(", ");
      console.log(`proof of chapter ${chapter.id}: ${((Date.now() - started) / 1000).toFixed(1)}s (${steps})`);
      expect(report.problems).toEqual([]);
    },
    600_000,
  );
});
