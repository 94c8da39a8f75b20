/**
 * Chapter markers in the course sources, and the views rendered from them.
 *
 * Three whole-line comments, nothing else:
 *
 *   // #region chNN                a later chapter's lines inside an earlier chapter's file
 *   // #region lab N.M symbol      a lab body, cut out of practice(N) and replaced by a throw
 *   // #endregion                  closes the innermost open region
 *
 * Regions nest. A `chNN` region must name a chapter later than the code around it; a lab region
 * must sit in code of its own chapter N (the file's owner or an enclosing `chNN` region) and may
 * not contain another lab region. Anything else mentioning `#region` / `#endregion` is an error,
 * so a typo never silently leaks a later chapter or an answer.
 */

/** A marker error, with the file and line it points at. */
export class MarkerError extends Error {
  constructor(
    readonly file: string,
    readonly line: number,
    message: string,
  ) {
    super(`${file}:${line}: ${message}`);
    this.name = "MarkerError";
  }
}

/** One lab region as found in a source file. */
export interface LabRegion {
  /** "3.2" */
  lab: string;
  /** The chapter number the lab belongs to (3 for "3.2"). */
  chapter: number;
  /** The symbol named on the marker, e.g. `textOf`. */
  symbol: string;
  file: string;
  /** 1-based line of the opening marker. */
  line: number;
  /** The reference body as it stands in snapshot(chapter): markers and later lines left out. */
  body: string[];
}

/** One `chNN` region as found in a source file. */
export interface ChapterRegion {
  chapter: number;
  file: string;
  line: number;
  /** Its own lines (markers and deeper later-chapter lines left out). */
  body: string[];
}

/** What a scan of one file finds. */
export interface FileScan {
  labs: LabRegion[];
  regions: ChapterRegion[];
}

/** How to render a file. */
export interface RenderOptions {
  /** Keep lines of chapters <= upTo; drop later ones. */
  upTo: number;
  /** Replace the bodies of this chapter's labs with construction sites (practice view). */
  cut?: number;
  /** Labs of the `cut` chapter whose bodies stay (a learner's progress: the labs already done). */
  keep?: ReadonlySet<string>;
}

type Marker =
  | { kind: "chapter"; chapter: number }
  | { kind: "lab"; lab: string; chapter: number; symbol: string }
  | { kind: "end" };

const CHAPTER_RE = /^\s*\/\/ #region ch(\d\d)\s*$/;
const LAB_RE = /^\s*\/\/ #region lab (\d{1,2})\.(\d{1,2}) ([\w$.[\]]+)\s*$/;
const END_RE = /^\s*\/\/ #endregion\b.*$/;
const LOOSE_RE = /#\s*(end)?\s*region/i;

/** Parses a marker line; `undefined` for ordinary code; throws for a malformed marker. */
function parseMarker(text: string, file: string, line: number): Marker | undefined {
  if (!LOOSE_RE.test(text)) return undefined;
  let m = CHAPTER_RE.exec(text);
  if (m) return { kind: "chapter", chapter: Number(m[1]) };
  m = LAB_RE.exec(text);
  if (m) return { kind: "lab", lab: `${Number(m[1])}.${Number(m[2])}`, chapter: Number(m[1]), symbol: m[3]! };
  if (END_RE.test(text)) return { kind: "end" };
  throw new MarkerError(
    file,
    line,
    `malformed chapter marker ${JSON.stringify(text.trim())}. Markers are whole lines: ` +
      "`// #region chNN`, `// #region lab N.M symbol` or `// #endregion` (see practice/README.md).",
  );
}

/** The text of a construction site's error: Chinese first, with the English symbol. */
export function notImplementedMessage(lab: string, symbol: string): string {
  return `Lab ${lab} ${symbol}：尚未实现 (not implemented yet)`;
}

/** The line that replaces a lab body in practice(N). */
export function constructionSite(indent: string, lab: string, symbol: string): string {
  return `${indent}throw new Error(${JSON.stringify(notImplementedMessage(lab, symbol))});`;
}

interface Frame {
  marker: Exclude<Marker, { kind: "end" }>;
  line: number;
  /** The chapter whose code this frame's lines are. */
  chapter: number;
  lab?: LabRegion;
  region?: ChapterRegion;
}

interface Walk {
  /** Called for every line that is not a marker, with the chapter it belongs to. */
  code(text: string, chapter: number, lab: LabRegion | undefined): void;
  openLab?(lab: LabRegion, indent: string): void;
}

function walk(source: string, file: string, owner: number, visit: Walk): FileScan {
  const lines = source.split("\n");
  const stack: Frame[] = [];
  const scan: FileScan = { labs: [], regions: [] };
  lines.forEach((text, index) => {
    const line = index + 1;
    const top = stack[stack.length - 1];
    const chapter = top ? top.chapter : owner;
    const lab = stack.find((f) => f.lab)?.lab;
    const marker = parseMarker(text, file, line);
    if (marker === undefined) {
      visit.code(text, chapter, lab);
      for (const f of stack) {
        if (f.lab && chapter === f.lab.chapter) f.lab.body.push(text);
      }
      const region = [...stack].reverse().find((f) => f.region)?.region;
      if (region && region.chapter === chapter) region.body.push(text);
      return;
    }
    if (marker.kind === "end") {
      if (!stack.pop()) throw new MarkerError(file, line, "`// #endregion` without an open region.");
      return;
    }
    if (marker.kind === "chapter") {
      if (marker.chapter <= chapter) {
        throw new MarkerError(
          file,
          line,
          `region ch${pad(marker.chapter)} inside code of chapter ${pad(chapter)}: a chNN region ` +
            "marks lines of a LATER chapter than the code around it.",
        );
      }
      const region: ChapterRegion = { chapter: marker.chapter, file, line, body: [] };
      scan.regions.push(region);
      stack.push({ marker, line, chapter: marker.chapter, region });
      return;
    }
    if (lab) {
      throw new MarkerError(file, line, `lab ${marker.lab} inside lab ${lab.lab}: labs do not nest.`);
    }
    if (marker.chapter !== chapter) {
      throw new MarkerError(
        file,
        line,
        `lab ${marker.lab} sits in code of chapter ${pad(chapter)}; a lab of chapter ` +
          `${pad(marker.chapter)} must be inside that chapter's code (its file, or a ` +
          `\`// #region ch${pad(marker.chapter)}\` region).`,
      );
    }
    const found: LabRegion = { lab: marker.lab, chapter: marker.chapter, symbol: marker.symbol, file, line, body: [] };
    scan.labs.push(found);
    visit.openLab?.(found, /^\s*/.exec(text)![0]);
    stack.push({ marker, line, chapter, lab: found });
  });
  const open = stack[stack.length - 1];
  if (open) {
    const what = open.marker.kind === "lab" ? `lab ${open.marker.lab}` : `ch${pad(open.marker.chapter)}`;
    throw new MarkerError(file, open.line, `region ${what} is never closed with \`// #endregion\`.`);
  }
  return scan;
}

/** Finds the labs and chapter regions of a file owned by chapter `owner`; throws on bad markers. */
export function scanFile(source: string, file: string, owner: number): FileScan {
  return walk(source, file, owner, { code() {} });
}

/**
 * Renders a file for a view: markers removed, lines of chapters after `upTo` removed, and (with
 * `cut`) each lab body of that chapter replaced by one construction-site line.
 */
export function renderFile(source: string, file: string, owner: number, options: RenderOptions): string {
  const out: string[] = [];
  walk(source, file, owner, {
    code(text, chapter, lab) {
      if (chapter > options.upTo) return;
      if (lab && lab.chapter === options.cut && !options.keep?.has(lab.lab)) return;
      out.push(text);
    },
    openLab(lab, indent) {
      if (lab.chapter === options.cut && lab.chapter <= options.upTo && !options.keep?.has(lab.lab)) {
        out.push(constructionSite(indent, lab.lab, lab.symbol));
      }
    },
  });
  return out.join("\n");
}

export function pad(chapter: number): string {
  return String(chapter).padStart(2, "0");
}
