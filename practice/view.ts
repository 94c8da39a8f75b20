/**
 * A generated chapter folder, in memory: what `buildView` makes, `writeView` writes and
 * `renderLearning` describes (apart from generate.ts so the guide's renderer needs no generator).
 */
import type { Chapter } from "./catalogue.js";

export type ViewKind = "snapshot" | "practice";

/** A generated folder, in memory. */
export interface View {
  chapter: Chapter;
  kind: ViewKind;
  /** Folder-relative path → content. */
  files: Map<string, string | Buffer>;
  /** Chapters whose code and tests the view holds, in order. */
  included: Chapter[];
  /** Test files a catalogued chapter declares but that do not exist yet. */
  missingTests: string[];
  /**
   * A progress view (the proof's lab-order check): labs of chapter N already written, so their
   * reference bodies stay and only the later labs are construction sites. Empty for practice(N).
   */
  done: string[];
}
