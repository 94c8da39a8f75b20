/**
 * The guard at the terminal's edge: how text that someone else chose reaches a person's screen.
 *
 * Two levels, one character rule:
 *
 * - `neutralize` (every text from outside: the model's words, tool output, error messages):
 *   each character a terminal acts on or that hides what the text says is written out as
 *   `\u001b`, `\u202e`, … so nobody can clear the screen, set the window title, write the
 *   clipboard (OSC 52) or make a line read differently than it is.
 * - `untrustedText` (every text an MCP server or a project's file chooses: server names,
 *   elicitation messages, titles, labels, URLs, state reasons, a server's stderr, the names and
 *   descriptions of a project's resources): `neutralize`, then each continuation line indented
 *   under its speaker (a newline cannot start a line that passes for another server or for the
 *   agent itself), then a length cap that says how much was left out.
 *
 * `untrustedUrl` shows an address a server asks a person to open: the whole address, its host
 * on a line of its own in ASCII (punycode: a Cyrillic look-alike of a Latin name shows as the
 * `xn--` name it is), any user name before `@` called out, and every scheme but https refused
 * (http only on a loopback host).
 */
import { domainToASCII } from "node:url";

/**
 * What a terminal acts on or that hides text: C0 but tab and newline, DEL, C1 (8-bit CSI and
 * OSC among them); the Arabic letter mark U+061C; the zero-width and direction marks
 * U+200B–U+200F; the line and paragraph separators U+2028–U+2029; the bidirectional embeddings,
 * overrides and isolates U+202A–U+202E and U+2066–U+2069; the invisible operators
 * U+2060–U+2064; the byte order mark U+FEFF; and the tag characters U+E0000–U+E007F (invisible
 * ASCII look-alikes).
 */
const UNSAFE =
  /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\u{e0000}-\u{e007f}]/gu;

/** `text` with every unsafe character (see `UNSAFE`) written out as `\u001b`, `\u{e0041}`, etc. */
export function neutralize(text: string): string {
  return text.replace(UNSAFE, (c) => {
    const code = c.codePointAt(0)!;
    return code > 0xffff ? `\\u{${code.toString(16)}}` : `\\u${code.toString(16).padStart(4, "0")}`;
  });
}

/** How much of an untrusted text is shown when the caller says nothing: 2,000 characters. */
export const UNTRUSTED_TEXT_MAX = 2000;

/** How `untrustedText` lays a text out. */
export interface UntrustedTextOptions {
  /**
   * What starts each continuation line (default `"  │ "`): deeper than the speaker's own line,
   * with a mark no speaker's line starts with. A caller whose line is itself indented passes
   * its indent plus the mark (e.g. `"      │ "` under a field's `"  label: "`).
   */
  indent?: string;
  /** The most characters of `text` shown (default `UNTRUSTED_TEXT_MAX`); the rest is counted, not shown. */
  max?: number;
}

/**
 * `text` (chosen by an MCP server or a project's file) made safe to print after its speaker:
 * unsafe characters written out (`neutralize`), every line after the first starting with
 * `indent`, and at most `max` characters of it, then `… (N more characters not shown)`.
 * Trailing blank lines are dropped. Idempotent on its own output's characters.
 */
export function untrustedText(text: string, options: UntrustedTextOptions = {}): string {
  const max = options.max ?? UNTRUSTED_TEXT_MAX;
  const indent = options.indent ?? "  │ ";
  const shown = text.length > max ? text.slice(0, max) : text;
  const lines = neutralize(shown).replace(/\s+$/, "").split("\n");
  const cut = text.length > max ? ` … (${text.length - max} more characters not shown)` : "";
  return `${lines.join(`\n${indent}`)}${cut}`;
}

/** How an address a server asks a person to open is shown, or why it is refused. */
export type ShownUrl = { lines: string[] } | { refused: string };

/** The longest address shown to be opened: 2,048 characters (a longer one cannot be checked by eye). */
export const UNTRUSTED_URL_MAX = 2048;

/**
 * The lines that show `url` to a person before they choose to open it (each starting with
 * `indent`): the whole address in its normal form; `host: <ASCII host>` (said to be an
 * international name when it is punycode); and when it has one, `before the host: <userinfo>@
 * (not the host; …)`. Refused (with why, for a notice): not a URL, longer
 * than `UNTRUSTED_URL_MAX`, a scheme other than https (http only on 127.0.0.1, ::1 or
 * localhost), or a host that has no ASCII form.
 */
export function untrustedUrl(url: string, indent = "  "): ShownUrl {
  if (url.length > UNTRUSTED_URL_MAX)
    return { refused: `its address is longer than ${UNTRUSTED_URL_MAX} characters (${url.length})` };
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { refused: "its address is not a URL" };
  }
  const loopback = ["127.0.0.1", "localhost", "[::1]"].includes(parsed.hostname);
  if (parsed.protocol !== "https:" && !(parsed.protocol === "http:" && loopback)) {
    return {
      refused: `its address is ${neutralize(parsed.protocol)} and only https is opened (http only on 127.0.0.1, ::1 or localhost)`,
    };
  }
  const host = parsed.hostname.startsWith("[") ? parsed.hostname : domainToASCII(parsed.hostname);
  if (host === "") return { refused: "its address has a host name that is not valid" };
  const international = host.split(".").some((label) => label.startsWith("xn--"));
  const lines = [
    `${indent}${neutralize(parsed.href)}`,
    `${indent}host: ${host}${international ? " (an international name in its ASCII form: not the Latin name it may look like)" : ""}`,
  ];
  if (parsed.username !== "" || parsed.password !== "") {
    const userinfo = parsed.username + (parsed.password === "" ? "" : `:${parsed.password}`);
    lines.push(
      `${indent}before the host: ${untrustedText(userinfo, { max: 200 })}@ (not the host; the host is ${host})`,
    );
  }
  return { lines };
}
