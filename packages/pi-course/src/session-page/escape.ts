/**
 * Making text from a session file safe inside an HTML page.
 *
 * Every string of a session file came from a person, a model or a tool, and the page must show it
 * as text, never run it: `escapeHtml` is the only way text enters the page's markup, in element
 * content and in quoted attribute values alike. Control characters (C0 but tab and newline, DEL,
 * C1) are written as visible `\u001b`-style text: a browser would drop or mangle some of them
 * (NUL), and a person reading a transcript should see that they were there. The page also
 * carries a Content-Security-Policy that forbids every script but its own (page.ts), so even a
 * hole here could not run anything.
 */

const SPECIAL = /[&<>"'\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

const NAMED: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** `text` as HTML text or a quoted attribute value: markup characters as entities, control characters as `\uXXXX`. */
export function escapeHtml(text: string): string {
  return text.replace(SPECIAL, (c) => NAMED[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** Media types a page may show inline, and the base64 alphabet an image's data must keep to. */
const IMAGE_TYPES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * A `data:` URL for an image block, or undefined when the block is not a well-formed image of
 * a type a browser shows safely (SVG is refused: it can hold scripts).
 */
export function imageDataUrl(mimeType: unknown, data: unknown): string | undefined {
  if (typeof mimeType !== "string" || typeof data !== "string") return undefined;
  if (!IMAGE_TYPES.has(mimeType) || !BASE64.test(data)) return undefined;
  return `data:${mimeType};base64,${data}`;
}
