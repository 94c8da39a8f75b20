/**
 * The session page: one self-contained HTML file that shows a session (chapter 10's JSONL tree)
 * to a person, in any browser, offline.
 *
 * - The transcript of the current branch (the path to the session's place, `SessionFile.leaf`),
 *   one article per message (entry-html.ts), with the tree beside it (tree.ts, drawn as `/tree`
 *   draws it). Clicking a node shows its branch. Every message of the file is in the page; the
 *   ones off the shown branch are `hidden`, so the page also reads without its script.
 * - Inline style and script only. A Content-Security-Policy allows nothing else: no request
 *   leaves the page (`default-src 'none'`), only `data:` images load, and only the page's own
 *   style and script run (by hash), so text from the session could not run even if it got past
 *   the escaping (escape.ts), which it does not.
 * - Narrow screens get one column with the tree folded above the transcript.
 *
 * Cost: one pass over the entries building one string; a 10,000-entry session renders in well
 * under a second (see the README for measured numbers).
 */
import { createHash } from "node:crypto";
import type { SessionEntry, SessionHeader } from "../session/types.js";
import { entryHtml, shortTime } from "./entry-html.js";
import { escapeHtml as esc } from "./escape.js";
import { headlineOf } from "./headline.js";
import { PAGE_SCRIPT, PAGE_STYLE } from "./page-assets.js";
import { buildSessionTree, type SessionTree, type TreeNode } from "./tree.js";
import { sessionNotes, type TreeMark } from "./page-parts.js";

/** What the page shows: a session file as read (`readSessionFile`, or a `SessionFile`'s header and entries). */
export interface SessionPageInput {
  header: SessionHeader;
  entries: readonly SessionEntry[];
}

export interface SessionPageOptions {
  /** The entry whose branch is shown first. Default: the last entry (where the session goes on). */
  place?: string;
  /** Where the session came from, shown under the title (e.g. the file's path). */
  source?: string;
}

/** Token and message counts of a set of messages. */
export interface SessionTotals {
  messages: number;
  assistantTurns: number;
  toolCalls: number;
  input: number;
  output: number;
  total: number;
}

const hash = (text: string) => `'sha256-${createHash("sha256").update(text).digest("base64")}'`;

/** The page for `session` as one HTML string. Throws for a `place` that is not an entry of the session. */
export function renderSessionPage(session: SessionPageInput, options: SessionPageOptions = {}): string {
  return sessionPage(session, options).html;
}

/** `renderSessionPage`, with the tree it drew (for counts, without building it twice). */
export function sessionPage(
  session: SessionPageInput,
  options: SessionPageOptions = {},
): { html: string; tree: SessionTree } {
  const tree = buildSessionTree(session.entries, options.place);
  const header = session.header;
  const branch = new Set<TreeNode>();
  for (let n = tree.current; n !== undefined; n = n.parent) branch.add(n);
  const all = totalsOf(tree.byNumber);
  const shown = totalsOf([...branch]);
  const first = session.entries[0]?.timestamp;
  const last = session.entries[session.entries.length - 1]?.timestamp;
  const csp =
    `default-src 'none'; img-src data:; style-src ${hash(PAGE_STYLE)}; script-src ${hash(PAGE_SCRIPT)}; ` +
    "base-uri 'none'; form-action 'none'";

  const parts: string[] = [];
  parts.push(
    "<!doctype html>\n",
    '<html lang="en"><head><meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<meta http-equiv="Content-Security-Policy" content="${esc(csp)}">`,
    '<meta name="referrer" content="no-referrer">',
    `<title>Session ${esc(header.id.slice(0, 8))} · pi-course</title>`,
    `<style>${PAGE_STYLE}</style></head>`,
    `<body data-shown-leaf="${esc(tree.current?.entry.id ?? "")}">`,
    '<header class="top">',
    `<h1>Session ${esc(header.id)}</h1>`,
    `<p>${esc(header.cwd)} · created ${esc(shortTime(header.timestamp))} UTC${first && last ? ` · ${esc(shortTime(first))} – ${esc(shortTime(last))}` : ""}</p>`,
    options.source === undefined ? "" : `<p>${esc(options.source)}</p>`,
    `<p id="session-totals">Whole session: ${fmt(all.messages)} messages in ${fmt(tree.leaves.length)} branch${tree.leaves.length === 1 ? "" : "es"} · ` +
      `${fmt(all.assistantTurns)} model turns · ${fmt(all.toolCalls)} tool calls · tokens in ${fmt(all.input)} · out ${fmt(all.output)} · total ${fmt(all.total)}</p>`,
    "</header>",
    '<div class="layout">',
    '<details class="side" id="side" open><summary>Tree</summary>',
    treeHtml(tree),
    "</details>",
    "<main>",
    `<p class="totals" id="branch-totals">This branch: ${fmt(shown.messages)} messages · tokens in ${fmt(shown.input)} · out ${fmt(shown.output)}</p>`,
  );
  if (tree.byNumber.length === 0) parts.push('<p class="dim">This session holds no messages yet.</p>');
  const messages = tree.byNumber.flatMap((n) => (n.entry.type === "message" ? [n.entry.message] : []));
  for (const note of sessionNotes(messages))
    parts.push(
      `<p class="${esc(note.className)}"${note.id === undefined ? "" : ` id="${esc(note.id)}"`}>${esc(note.text)}</p>`,
    );
  if (tree.current === undefined)
    for (const mark of tree.marksAtPlace) parts.push(`<p class="${esc(mark.className)} dim">⇄ ${esc(mark.text)}</p>`);
  for (const node of tree.byNumber) parts.push(entryHtml(node, !branch.has(node)));
  parts.push("</main></div>", `<script>${PAGE_SCRIPT}</script>`, "</body></html>\n");
  return { html: parts.join(""), tree };
}

/** The tree beside the transcript: one button per node, drawn as `/tree` draws it. */
function treeHtml(tree: SessionTree): string {
  const items: string[] = [
    '<ol class="tree" id="tree" aria-label="The session\'s tree: choose a message to show its branch">',
  ];
  for (const node of tree.nodes) {
    for (const mark of node.marks)
      items.push(
        `<li class="${esc(mark.className)} dim"><span class="guide">${esc(node.prefix)}</span>⇄ ${esc(mark.text)}</li>`,
      );
    const { role, text, failed } = headlineOf(node.entry, 60);
    const classes = [node.onCurrentPath ? "on-path" : "", node.current ? "selected" : ""].filter(Boolean).join(" ");
    items.push(
      `<li><button type="button"${classes ? ` class="${classes}"` : ""}${node.current ? ' aria-current="true"' : ""} ` +
        `data-id="${esc(node.entry.id)}" data-leaf="${esc(node.current ? node.entry.id : node.newestLeaf.entry.id)}" ` +
        `title="${esc(`#${node.number} ${role} · ${node.entry.timestamp}`)}">` +
        `<span class="guide">${esc(node.prefix)}</span>${node.number} <span class="${failed ? "failed" : ""}">${esc(role)}: ${esc(text)}</span>` +
        `${node.label === undefined ? "" : ` <span class="label">[${esc(node.label)}]</span>`}` +
        `${node.current ? ' <span class="here">← here</span>' : ""}</button></li>`,
    );
  }
  // What comes next from the current node (a /model with no answer yet), right below it.
  const after = (marks: readonly TreeMark[]) =>
    marks.map((mark) => `<li class="${esc(mark.className)} dim">⇄ ${esc(mark.text)}</li>`);
  const at =
    tree.current === undefined ? items.length : items.findIndex((item) => item.includes('aria-current="true"')) + 1;
  items.splice(at, 0, ...after(tree.marksAtPlace));
  items.push("</ol>");
  return items.join("");
}

/** Counts over the message nodes of `nodes`. */
export function totalsOf(nodes: Iterable<TreeNode>): SessionTotals {
  const totals: SessionTotals = { messages: 0, assistantTurns: 0, toolCalls: 0, input: 0, output: 0, total: 0 };
  for (const node of nodes) {
    const entry = node.entry;
    if (entry.type !== "message") continue;
    totals.messages++;
    const message = entry.message as { role?: string; usage?: Record<string, unknown>; content?: unknown };
    if (message.role !== "assistant") continue;
    totals.assistantTurns++;
    if (Array.isArray(message.content))
      totals.toolCalls += message.content.filter((b) => b?.type === "toolCall").length;
    totals.input += number(message.usage?.input);
    totals.output += number(message.usage?.output);
    totals.total += number(message.usage?.totalTokens);
  }
  return totals;
}

function number(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) ? value : 0;
}

function fmt(n: number): string {
  return n.toLocaleString("en");
}
