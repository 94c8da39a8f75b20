/**
 * The proof of every chapter in the catalogue (see practice/proof.ts): snapshot(N) and
 * practice(N) are generated into temporary folders, typechecked together (a compiler
 * program per seven chapters), and tested there three folders at a time. One test per chapter, so `-t "chapter 05"`
 * proves one chapter (only the chapters whose tests run are generated).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadCatalogue } from "../catalogue.js";
import { proveChapters, type ProofReport } from "../proof.js";

const catalogue = await loadCatalogue();
const began = Date.now();
let proofs = new Map<string, Promise<ProofReport>>();

describe("the course: every chapter's snapshot and practice folder", () => {
  beforeAll(({}, suite) => {
    // Only the chapters selected by a `-t` filter are proven.
    const running = new Set(
      suite.tasks.filter((t) => t.mode === "run").map((t) => /^chapter (\d\d)/.exec(t.name)?.[1]),
    );
    proofs = proveChapters(
      catalogue,
      catalogue.chapters.filter((c) => running.has(c.id)),
    );
  });

  afterAll(() => {
    const seconds = ((Date.now() - began) / 1000).toFixed(1);
    console.log(`course proof: ${proofs.size} chapters (${[...proofs.keys()].join(", ")}) in ${seconds}s`);
  });

  it.concurrent.each(catalogue.chapters.map((c) => [`chapter ${c.id} (${c.slug})`, c] as const))(
    "%s: snapshot green, practice red for the right reason, no answer leaked",
    async (_name, chapter) => {
      const report = await proofs.get(chapter.id)!;
      const steps = [
        ...Object.entries(report.timings).map(([step, ms]) => `${step} ${(ms / 1000).toFixed(1)}s`),
        ...Object.entries(report.counts).map(([what, count]) => `${what} ${count}`),
      ].join(", ");
      console.log(`proof of chapter ${chapter.id}: ${steps}`);
      expect(report.problems).toEqual([]);
    },
    // Every chapter's test waits on one shared pool: the limit is the whole proof's, not a chapter's.
    1_500_000,
  );
});
