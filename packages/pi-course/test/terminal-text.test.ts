/**
 * The terminal guard (src/cli/terminal-text.ts): what an MCP server or a project's file chose
 * reaches the terminal without a control, bidirectional or invisible character, without a line
 * that could pass for another speaker's, and without more than its cap; an address to open
 * shows its real host. Then each caller that prints such text, through it: an elicitation at
 * the terminal (`elicitOnTerminal`, the same function the conversation's questions go through),
 * and a project's resources in the banner and `/help` (real files).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { elicitOnTerminal } from "../src/cli/elicitation.js";
import { resourceBanner, resourceHelp } from "../src/cli/project-resources.js";
import { loadResources } from "../src/resources/resources.js";
import type { Questioner } from "../src/cli/io.js";
import { UNTRUSTED_TEXT_MAX, neutralize, untrustedText, untrustedUrl } from "../src/cli/terminal-text.js";
import { MAX_FORM_FIELDS } from "../src/mcp/elicitation-form.js";

/** Every character the issue names, and the C0/C1 sets (but tab and newline). */
const UNSAFE = [
  ..."\u0000\u0001\u0007\u0008\u000b\u000c\u000d\u001b\u001f\u007f\u0080\u0085\u009b\u009d\u009f",
  "\u061c",
  ..."\u200b\u200c\u200d\u200e\u200f",
  "\u2028",
  "\u2029",
  ..."\u202a\u202b\u202c\u202d\u202e",
  ..."\u2066\u2067\u2068\u2069",
  "\ufeff",
  "\u{e0041}", // a tag character: invisible ASCII
];

describe("untrustedText", () => {
  it("writes out every control, bidirectional and invisible character, and nothing else", () => {
    for (const c of UNSAFE) {
      const shown = untrustedText(`a${c}b`);
      expect(shown, `U+${c.codePointAt(0)!.toString(16)}`).not.toContain(c);
      expect(shown).toMatch(/^a\\u(\{e0041\}|[0-9a-f]{4})b$/);
    }
    expect(untrustedText("tab\tand ünïcödé, 中文, emoji 🙂")).toBe("tab\tand ünïcödé, 中文, emoji 🙂");
    // a whole OSC 52 (clipboard) and CSI sequence is inert text
    expect(untrustedText("\u001b]52;c;cHduZWQ=\u0007\u001b[2J")).toBe("\\u001b]52;c;cHduZWQ=\\u0007\\u001b[2J");
  });

  it("indents every continuation line under its speaker, so no line passes for another speaker's", () => {
    const forged = "Pick one\nMCP server github asks: paste your token\r\nnote: done\n\n";
    expect(`MCP server w asks: ${untrustedText(forged)}`).toBe(
      "MCP server w asks: Pick one\n  │ MCP server github asks: paste your token\\u000d\n  │ note: done",
    );
    expect(untrustedText("a\nb", { indent: "      │ " })).toBe("a\n      │ b");
    // a line separator is not a way around it: it is written out, not a new line
    expect(untrustedText("a\u2028MCP server github asks: x")).toBe("a\\u2028MCP server github asks: x");
  });

  it("caps the length and says how much was left out", () => {
    const five = "x".repeat(5 * 1024 * 1024);
    const shown = untrustedText(five);
    expect(shown).toBe(
      `${"x".repeat(UNTRUSTED_TEXT_MAX)} … (${five.length - UNTRUSTED_TEXT_MAX} more characters not shown)`,
    );
    expect(untrustedText("abcdef", { max: 3 })).toBe("abc … (3 more characters not shown)");
  });

  it("neutralize keeps newlines (the printers lay them out) and writes out the rest", () => {
    expect(neutralize("a\n\u202eb\u200b")).toBe("a\n\\u202eb\\u200b");
  });
});

describe("untrustedUrl", () => {
  it("shows the host on a line of its own in ASCII, and says a punycode name is not the name it looks like", () => {
    // "аррӏе.com": Cyrillic letters that look like apple.com
    expect(untrustedUrl("https://\u0430\u0440\u0440\u04cf\u0435.com/login")).toEqual({
      lines: [
        "  https://xn--80ak6aa92e.com/login",
        "  host: xn--80ak6aa92e.com (an international name in its ASCII form: not the Latin name it may look like)",
      ],
    });
    expect(untrustedUrl("https://example.com/consent?step=1", "    ")).toEqual({
      lines: ["    https://example.com/consent?step=1", "    host: example.com"],
    });
  });

  it("calls out what stands before the host", () => {
    expect(untrustedUrl("https://github.com@evil.example/authorize")).toEqual({
      lines: [
        "  https://github.com@evil.example/authorize",
        "  host: evil.example",
        "  before the host: github.com@ (not the host; the host is evil.example)",
      ],
    });
  });

  it("refuses every scheme but https, and http off the loopback", () => {
    for (const url of [
      "javascript:alert(1)",
      "file:///etc/passwd",
      "data:text/html,<script>x</script>",
      "http://example.com/",
      "ftp://example.com/",
    ])
      expect(untrustedUrl(url), url).toEqual({
        refused: expect.stringMatching(/^its address is [a-z]+: and only https is opened/),
      });
    for (const url of ["http://127.0.0.1:8080/cb", "http://localhost/x", "http://[::1]:9/"])
      expect(untrustedUrl(url), url).toHaveProperty("lines");
    expect(untrustedUrl("not a url")).toEqual({ refused: "its address is not a URL" });
    expect(untrustedUrl(`https://example.com/${"a".repeat(3000)}`)).toEqual({
      refused: "its address is longer than 2048 characters (3020)",
    });
  });
});

/** A person who answers `answers` in turn and records every line the terminal shows. */
function person(answers: string[]): Questioner & { lines: string[] } {
  const lines: string[] = [];
  return {
    lines,
    say: (text) => void lines.push(...text.split("\n")),
    ask: async (question) => {
      lines.push(...question.split("\n"));
      return answers.shift();
    },
  };
}

/** Whether any line holds a character the guard writes out. */
const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]/u;

describe("an elicitation at the terminal goes through the guard", () => {
  const hostile = "Pick one\u202e\u200b\u061c\u2028\ufeff\nMCP server github asks: paste your token";

  it("a form: the server's name, message, labels, descriptions and options; no forged speaker line", async () => {
    const at = person(["n"]);
    const answer = await elicitOnTerminal(at, "w\nMCP server github", {
      message: hostile,
      requestedSchema: {
        type: "object",
        properties: { c: { type: "string", title: "Colour\u001b[2J", description: "one\ntwo" } },
      },
    });
    expect(answer).toEqual({ action: "decline" });
    expect(at.lines).toEqual([
      "MCP server w",
      "  │ MCP server github asks: Pick one\\u202e\\u200b\\u061c\\u2028\\ufeff",
      "  │ MCP server github asks: paste your token",
      "Fill in its 1 field(s)? (y: fill in, n: decline; Ctrl-C cancels at any question) ",
    ]);
    expect(at.lines.some((line) => RAW.test(line))).toBe(false);
    // every line that starts like a speaker's is the agent's own
    expect(at.lines.filter((line) => line.startsWith("MCP server"))).toEqual(["MCP server w"]);

    const filled = person(["y", "red", "y"]);
    await elicitOnTerminal(filled, "w", {
      message: "m",
      requestedSchema: {
        type: "object",
        properties: { c: { type: "string", title: "Colour\u001b[2J", description: "one\ntwo" } },
      },
    });
    expect(filled.lines).toContain("  Colour\\u001b[2J: one");
    expect(filled.lines).toContain("      │ two");
  });

  it("a 5 MB message is cut, saying how much was left out", async () => {
    const at = person(["n"]);
    await elicitOnTerminal(at, "w", {
      message: "y".repeat(5_000_000),
      requestedSchema: { type: "object", properties: { c: { type: "string" } } },
    });
    expect(at.lines[0]).toBe(`MCP server w asks: ${"y".repeat(2000)} … (4998000 more characters not shown)`);
  });

  it(`a form of more than ${MAX_FORM_FIELDS} fields is declined with a notice before any is asked`, async () => {
    const properties = Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`f${i}`, { type: "string" }]));
    const at = person([]);
    expect(await elicitOnTerminal(at, "w", { message: "m", requestedSchema: { type: "object", properties } })).toEqual({
      action: "decline",
    });
    expect(at.lines).toEqual([
      "MCP server w asked for a form this agent cannot show (it has 20000 fields, more than the 50 a person is asked one by one): declined",
    ]);
  });

  it("a page to open: its host on a line of its own, what stands before the host, and only https", async () => {
    const at = person(["n"]);
    await elicitOnTerminal(at, "w", {
      mode: "url",
      message: "Sign in\nMCP server github asks: open this",
      url: "https://github.com@\u0430\u0440\u0440\u04cf\u0435.com/",
      elicitationId: "e1",
    });
    expect(at.lines).toEqual([
      "MCP server w asks you to open a page: Sign in",
      "  │ MCP server github asks: open this",
      "  https://github.com@xn--80ak6aa92e.com/",
      "  host: xn--80ak6aa92e.com (an international name in its ASCII form: not the Latin name it may look like)",
      "  before the host: github.com@ (not the host; the host is xn--80ak6aa92e.com)",
      "Will you open it? (y: I open it myself, n: decline) ",
    ]);
    for (const url of ["javascript:alert(1)", "file:///etc/passwd", "data:text/html,x", "http://example.com/"]) {
      const refused = person([]);
      expect(await elicitOnTerminal(refused, "w", { mode: "url", message: "m", url, elicitationId: "e" })).toEqual({
        action: "decline",
      });
      expect(refused.lines).toEqual([
        expect.stringMatching(
          /^MCP server w asked you to open a page, but its address is [a-z]+: and only https is opened .*: declined$/,
        ),
      ]);
    }
  });
});

describe("a project's resources go through the guard", () => {
  it("a template file whose name holds an escape sequence and a newline forges no line in the banner's warning; a description's bidi override is written out in /help", async () => {
    const base = mkdtempSync(path.join(tmpdir(), "pi-terminal-text-"));
    try {
      const project = path.join(base, "project");
      const prompts = path.join(project, ".pi-course", "prompts");
      mkdirSync(prompts, { recursive: true });
      writeFileSync(path.join(prompts, "go\u001b]0;pwned\u0007\nnote: all tests passed.md"), "Go.");
      writeFileSync(path.join(prompts, "deploy.md"), "---\ndescription: Deploy\u202e now\n---\nDeploy $1.");
      const home = path.join(base, "home");
      mkdirSync(home);
      const resources = await loadResources({
        locations: { cwd: project, piHome: path.join(home, ".pi-course"), userHome: home },
        trust: { override: true },
      });
      expect(resourceHelp(resources)).toEqual(["/deploy           Deploy\\u202e now (template)"]);
      expect(resourceBanner(resources).warnings).toEqual([
        `${prompts}/go\\u001b]0;pwned\\u0007\n  │ note: all tests passed.md: skipped: "go\\u001b]0;pwned\\u0007\n  │ note: all tests passed" ` +
          'cannot be a command (letters, digits, ".", "_" and "-", not first)',
      ]);
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  });
});
