/**
 * One shown entry of a session as an `<article>` of the session page: who, when, the content
 * (text as text, thinking and tool calls folded, images inline), and an assistant turn's usage.
 *
 * Every string of the entry goes through `escapeHtml`; nothing of the file is ever markup. The
 * article carries `data-id` and `data-parent` (the shown parent, labels skipped) so the page's
 * script can show one branch; assistant turns carry their token counts for the branch totals.
 */
import { escapeHtml as esc, imageDataUrl } from "./escape.js";
import { argumentsPreview, headlineOf } from "./headline.js";
import type { TreeNode } from "./tree.js";
import { answerNotes, type TreeMark } from "./page-parts.js";
import type { AssistantMessage } from "../types.js";

type Block = Record<string, unknown>;

/** The `<article>` of `node`; `hidden` when it is not on the branch shown first. */
export function entryHtml(node: TreeNode, hidden: boolean): string {
  let html = articleHtml(node, hidden);
  // The marks (page-parts.ts): a line above the entry for what came before it, below the
  // current entry for what comes next.
  if (node.marks.length === 0 && node.marksAfter.length === 0) return html;
  const marks = (list: readonly TreeMark[]) =>
    list
      .map((m) => `<p class="${esc(m.className)} dim" data-type="${esc(m.entry.type)}">⇄ ${esc(m.text)}</p>`)
      .join("");
  const start = html.indexOf(">") + 1;
  const end = html.lastIndexOf("</article>");
  html = `${html.slice(0, start)}${marks(node.marks)}${html.slice(start, end)}${marks(node.marksAfter)}${html.slice(end)}`;
  return html;
}

function articleHtml(node: TreeNode, hidden: boolean): string {
  const entry = node.entry;
  const parent = node.parent === undefined ? "" : ` data-parent="${esc(node.parent.entry.id)}"`;
  const open = (role: string, extra = "") =>
    `<article class="entry ${esc(roleClass(role))}" id="e-${esc(entry.id)}" data-id="${esc(entry.id)}"${parent}${extra}${hidden ? " hidden" : ""}>`;
  // text, as in the tree: an emoji needs a font that not every reader has
  const label = node.label === undefined ? "" : ` <span class="label" title="label">[${esc(node.label)}]</span>`;
  const meta = (role: string, more = "") =>
    `<header class="meta"><span class="n">#${node.number}</span> <span class="role">${esc(role)}</span>${label}${more}` +
    ` <time datetime="${esc(entry.timestamp)}">${esc(shortTime(entry.timestamp))}</time></header>`;

  if (entry.type === "compaction") {
    return (
      `${open("summary")}${meta("summary", ` <span class="usage">${entry.tokensBefore} → ${entry.tokensAfter} tokens</span>`)}` +
      `<details class="fold"><summary>Earlier messages, condensed</summary><div class="text">${esc(entry.summary)}</div></details></article>`
    );
  }
  const message = entry.message as unknown as Block;
  const role = typeof message.role === "string" ? message.role : "message";
  const blocks = Array.isArray(message.content) ? (message.content as unknown[]) : [];

  if (role === "user") return `${open(role)}${meta(role)}${blocks.map(contentHtml).join("")}</article>`;

  if (role === "assistant") {
    const usage = (message.usage ?? {}) as Block;
    const input = count(usage.input);
    const output = count(usage.output);
    const model = [message.provider, message.model].filter((v) => typeof v === "string").join(" · ");
    // A turn that ended normally (stop, toolUse) says nothing; length, error and aborted stand out.
    const stop =
      typeof message.stopReason === "string" && message.stopReason !== "stop" && message.stopReason !== "toolUse"
        ? ` <span class="stop">${esc(message.stopReason)}</span>`
        : "";
    let more =
      `${stop} <span class="model">${esc(model)}</span>` +
      ` <span class="usage" title="tokens: input · output · total">in ${input.toLocaleString("en")} · out ${output.toLocaleString("en")} · total ${count(usage.totalTokens).toLocaleString("en")}</span>`;
    for (const note of answerNotes(entry.message as AssistantMessage))
      more += ` <span class="${esc(note.className)}"${note.title === undefined ? "" : ` title="${esc(note.title)}"`}>${esc(note.text)}</span>`;
    const error = typeof message.errorMessage === "string" ? `<p class="error">${esc(message.errorMessage)}</p>` : "";
    return `${open(role, ` data-in="${input}" data-out="${output}"`)}${meta(role, more)}${blocks.map(contentHtml).join("")}${error}</article>`;
  }

  if (role === "toolResult") {
    const failed = message.isError === true;
    const text = blocks
      .filter((b): b is Block => isBlock(b) && b.type === "text")
      .map((b) => String(b.text))
      .join("\n");
    const lines = text === "" ? 0 : text.split("\n").length;
    const summary =
      `${failed ? "✗" : "✓"} ${esc(String(message.toolName))} <code>${esc(String(message.toolCallId))}</code>` +
      ` <span class="dim">${lines} line${lines === 1 ? "" : "s"}${failed ? ", error" : ""}</span>`;
    const images = blocks
      .filter((b) => isBlock(b) && b.type === "image")
      .map(contentHtml)
      .join("");
    return (
      `${open(role)}${meta("tool result")}<details class="fold${failed ? " failed" : ""}"><summary>${summary}</summary>` +
      `<pre>${esc(text)}</pre>${images}</details></article>`
    );
  }

  // A custom message: whatever it holds, as folded JSON.
  return (
    `${open(role)}${meta(role)}<p class="text">${esc(headlineOf(entry, 200).text)}</p>` +
    `<details class="fold"><summary>the message as stored</summary><pre>${esc(json(message))}</pre></details></article>`
  );
}

/** One content block of a message. */
function contentHtml(block: unknown): string {
  if (!isBlock(block)) return `<pre>${esc(json(block))}</pre>`;
  switch (block.type) {
    case "text":
      return `<div class="text">${esc(String(block.text))}</div>`;
    case "thinking": {
      const body = block.redacted === true ? "(redacted by the provider)" : String(block.thinking);
      return `<details class="fold thinking"><summary>thinking</summary><div class="text">${esc(body)}</div></details>`;
    }
    case "toolCall": {
      const args = block.argumentsError !== undefined ? String(block.rawArguments ?? "") : json(block.arguments);
      const problem =
        typeof block.argumentsError === "string" ? `<p class="error">${esc(block.argumentsError)}</p>` : "";
      return (
        `<details class="fold call"><summary>→ ${esc(String(block.name))} <span class="dim">${esc(oneLine(argumentsPreview(block.arguments), 80))}</span>` +
        ` <code>${esc(String(block.id))}</code></summary>` +
        `${problem}<pre>${esc(args)}</pre></details>`
      );
    }
    case "image": {
      const url = imageDataUrl(block.mimeType, block.data);
      if (url === undefined)
        return `<p class="dim">[an image of type ${esc(String(block.mimeType))} that the page does not show]</p>`;
      return `<img class="image" alt="${esc(`image (${String(block.mimeType)})`)}" src="${esc(url)}">`;
    }
    default:
      return `<details class="fold"><summary>${esc(String(block.type))} block</summary><pre>${esc(json(block))}</pre></details>`;
  }
}

function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1).replace(/[\uD800-\uDBFF]$/, "")}…` : flat;
}

function isBlock(value: unknown): value is Block {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function roleClass(role: string): string {
  return ["user", "assistant", "toolResult", "summary"].includes(role) ? role : "custom";
}

function count(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) ? value : 0;
}

/** `2026-12-03T23:04:42.123Z` → `2026-12-03 23:04:42` (UTC, as stored). */
export function shortTime(iso: string): string {
  const m = /^(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d)/.exec(iso);
  return m === null ? iso : `${m[1]} ${m[2]}`;
}

function json(value: unknown): string {
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
}
