/**
 * Chapter 15: ranking tools for a query, BM25-style.
 *
 * Each tool is a document of words: its name (counted twice: a name says most), its description
 * and its parameter names. `tokenize` splits on anything that is not a letter or a digit and at
 * camelCase humps, lowercases, and drops a plural `s` from words longer than three letters (not
 * `ss`): `readFile` → `read file`, `list_dir` → `list dir`, `issues` → `issue`. A query
 * word scores by BM25 (k1 = 1.2, b = 0.75): rare words weigh more than common ones (IDF), repeats
 * count less and less, and a long description does not win by length alone.
 */
import type { AgentTool } from "../types.js";

/** BM25's term-frequency saturation. */
const K1 = 1.2;
/** BM25's length normalisation. */
const B = 0.75;

/** One ranked tool: its name and its score (higher is better; only scores above 0 are kept). */
export interface ToolMatch {
  name: string;
  score: number;
}

/** Lowercased words of `text`, split at non-alphanumerics and camelCase humps, plural `s` dropped. */
export function tokenize(text: string): string[] {
  // #region lab 15.3 tokenize
  return text
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((word) => word.length > 0)
    .map((word) => (word.length > 3 && word.endsWith("s") && !word.endsWith("ss") ? word.slice(0, -1) : word));
  // #endregion
}

/** The words of one tool: name twice, description, parameter names (top level). */
export function toolWords(tool: AgentTool<any, any>): string[] {
  const name = tokenize(tool.name);
  const properties = (tool.parameters as { properties?: Record<string, unknown> } | undefined)?.properties;
  const parameters = properties !== undefined && typeof properties === "object" ? Object.keys(properties) : [];
  return [...name, ...name, ...tokenize(tool.description ?? ""), ...parameters.flatMap(tokenize)];
}

/**
 * The tools that match `query`, best first (ties by name), at most `limit`. A tool matches when
 * at least one query word is among its words.
 */
export function rankTools(tools: readonly AgentTool<any, any>[], query: string, limit = 5): ToolMatch[] {
  // #region lab 15.3 rankTools
  const terms = [...new Set(tokenize(query))];
  if (terms.length === 0 || tools.length === 0) return [];
  const documents = tools.map((tool) => {
    const counts = new Map<string, number>();
    const words = toolWords(tool);
    for (const word of words) counts.set(word, (counts.get(word) ?? 0) + 1);
    return { name: tool.name, counts, length: words.length };
  });
  const averageLength = documents.reduce((sum, doc) => sum + doc.length, 0) / documents.length || 1;
  const idf = new Map<string, number>();
  for (const term of terms) {
    const containing = documents.filter((doc) => doc.counts.has(term)).length;
    idf.set(term, Math.log(1 + (documents.length - containing + 0.5) / (containing + 0.5)));
  }
  const matches: ToolMatch[] = [];
  for (const doc of documents) {
    let score = 0;
    for (const term of terms) {
      const frequency = doc.counts.get(term) ?? 0;
      if (frequency === 0) continue;
      const norm = frequency + K1 * (1 - B + (B * doc.length) / averageLength);
      score += idf.get(term)! * ((frequency * (K1 + 1)) / norm);
    }
    if (score > 0) matches.push({ name: doc.name, score });
  }
  matches.sort((a, b) => b.score - a.score || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return matches.slice(0, Math.max(0, limit));
  // #endregion
}
