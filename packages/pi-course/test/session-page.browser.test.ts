/**
 * The session page in a real browser: Debian's chromium, headless, driven by puppeteer-core
 * (support/browser.ts). The page is written to a file and opened as `file://`, as a person would
 * open an exported page.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readSessionFile } from "../src/session/session-reader.js";
import { renderSessionPage } from "../src/session-page/page.js";
import { launchBrowser, type TestBrowser, type WatchedPage } from "./support/browser.js";
import { HOSTILE, sampleSession } from "./support/sample-session.js";

let dir: string;
let browser: TestBrowser;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "pi-course-page-"));
  browser = await launchBrowser();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await rm(dir, { recursive: true, force: true });
});

/** Writes the session text to a file, reads it as the library does, renders and writes the page. */
async function pageFor(name: string, sessionText: string): Promise<string> {
  const sessionFile = path.join(dir, `${name}.jsonl`);
  await writeFile(sessionFile, sessionText);
  const session = await readSessionFile(sessionFile);
  const out = path.join(dir, `${name}.html`);
  await writeFile(out, renderSessionPage(session, { source: sessionFile }));
  return pathToFileURL(out).href;
}

async function open(url: string, viewport?: { width: number; height: number }): Promise<WatchedPage> {
  const watched = await browser.page(viewport);
  await watched.page.goto(url, { waitUntil: "load" });
  await watched.page.waitForSelector("body[data-ready=true]", { timeout: 5_000 });
  return watched;
}

/** The ids of the articles a person sees, top to bottom. */
function shownIds(watched: WatchedPage): Promise<string[]> {
  return watched.page.$$eval("article[data-id]", (all) =>
    all
      .filter((a) => !(a as unknown as Dom).hidden && (a as unknown as Dom).offsetParent !== null)
      .map((a) => a.getAttribute("data-id")!),
  );
}

/** What the tests read of DOM elements in the page (the repository's typecheck has no DOM library). */
interface Dom {
  hidden: boolean;
  open: boolean;
  offsetParent: unknown;
  naturalWidth: number;
  textContent: string;
  checkVisibility(): boolean;
}

const ids = (...numbers: number[]) => numbers.map((n) => `e${String(n).padStart(7, "0")}`);
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

/** Clicks the tree's button for entry `id`. */
async function clickNode(watched: WatchedPage, id: string): Promise<void> {
  const buttons = await watched.page.$$("#tree button[data-id]");
  for (const button of buttons) {
    if ((await button.evaluate((b) => b.getAttribute("data-id"))) === id) {
      await button.click();
      return;
    }
  }
  throw new Error(`no tree node for ${id}`);
}

describe("session page in chromium", () => {
  it("loads offline with no console errors and shows every message of the current branch, with usage, times and totals", async () => {
    const url = await pageFor("sample", sampleSession());
    const watched = await open(url);
    expect(watched.problems).toEqual([]);
    // Nothing but the page itself (and its inline data: images) was asked for.
    expect(watched.requests.filter((r) => r !== url && !r.startsWith("data:"))).toEqual([]);
    // The place is the last entry (message 16): the fork's branch, 1-8 then 13-16.
    expect(await shownIds(watched)).toEqual(ids(...range(1, 8), ...range(13, 16)));
    const page = watched.page;
    expect(await page.$eval("#session-totals", (e) => e.textContent)).toBe(
      "Whole session: 16 messages in 2 branches · 8 model turns · 5 tool calls · tokens in 12,630 · out 313 · total 12,943",
    );
    expect(await page.$eval("#branch-totals", (e) => e.textContent)).toBe(
      "This branch: 12 messages · tokens in 9,130 · out 268",
    );
    const first = await page.$eval(`#e-${ids(2)[0]}`, (e) => e.textContent);
    expect(first).toContain("in 1,200 · out 80 · total 1,280");
    expect(first).toContain("2026-12-03 10:00:14");
    expect(first).toContain("openai · gpt-test");
    // The label names message 8, in the transcript and in the tree.
    const labelled = await page.$eval(`#e-${ids(8)[0]}`, (e) => e.textContent);
    expect(labelled).toContain("assistant [fixed]");
    expect(labelled).not.toMatch(/\p{Extended_Pictographic}/u); // text, not an emoji a font may lack
    // The tree: one line per message, the current one marked.
    const tree = await page.$$eval("#tree button", (all) => all.map((b) => b.textContent));
    expect(tree).toHaveLength(16);
    expect(tree[7]).toBe("8 assistant: Fixed: greet.js used `nam` instead of `name`; it now prints… [fixed]");
    expect(tree[8]).toBe("├─ 9 user: Now add a test for it.");
    expect(tree[12]).toBe("13 user: Instead, rename greet to welcome everywhere.");
    expect(tree[15]).toBe("16 assistant: Renamed greet to welcome in greet.js (the only use). ← here");
    // Images are shown (decoded by the browser), inline.
    const images = await page.$$eval("article:not([hidden]) img.image", (all) =>
      all.map((i) => (i as unknown as Dom).naturalWidth),
    );
    expect(images).toEqual([24, 24]);
  }, 30_000);

  it("thinking, tool calls and tool results are folded; opening one shows the arguments and the result", async () => {
    const watched = await open(await pageFor("folds", sampleSession()));
    const page = watched.page;
    const closed = await page.$$eval(
      "article:not([hidden]) details.fold",
      (all) => all.filter((d) => !(d as unknown as Dom).open).length,
    );
    const total = await page.$$eval("article:not([hidden]) details.fold", (all) => all.length);
    expect(total).toBe(9); // on the branch: 1 thinking, 4 calls, 4 results
    expect(closed).toBe(total);
    const call = `#e-${ids(2)[0]} details.call`;
    expect(await page.$eval(call, (d) => (d.querySelector("pre") as unknown as Dom).checkVisibility())).toBe(false);
    await page.click(`${call} > summary`);
    expect(await page.$eval(call, (d) => (d as unknown as Dom).open)).toBe(true);
    expect(await page.$eval(call, (d) => (d.querySelector("pre") as unknown as Dom).checkVisibility())).toBe(true);
    expect(await page.$eval(`${call} pre`, (p) => (p as unknown as Dom).textContent)).toBe(
      '{\n  "path": "greet.js"\n}',
    );
    await page.click(`#e-${ids(3)[0]} details > summary`);
    expect(await page.$eval(`#e-${ids(3)[0]} pre`, (p) => (p as unknown as Dom).textContent)).toBe(
      'export function greet(name) {\n  return "Hello, " + nam;\n}',
    );
    await page.click(`#e-${ids(2)[0]} details.thinking > summary`);
    expect(
      await page.$eval(`#e-${ids(2)[0]} details.thinking .text`, (d) => (d as unknown as Dom).checkVisibility()),
    ).toBe(true);
    expect(await page.$eval(`#e-${ids(2)[0]} details.thinking`, (d) => (d as unknown as Dom).textContent)).toContain(
      "Read the file first.",
    );
    expect(await page.$eval(`#e-${ids(11)[0]} details`, (d) => d.className)).toBe("fold failed");
    expect(watched.problems).toEqual([]);
  }, 30_000);

  it("clicking a node of the tree shows its branch, and the totals follow", async () => {
    const watched = await open(await pageFor("switch", sampleSession()));
    const page = watched.page;
    await clickNode(watched, ids(10)[0]!);
    expect(await shownIds(watched)).toEqual(ids(...range(1, 12)));
    expect(await page.$eval("body", (b) => b.getAttribute("data-shown-leaf"))).toBe(ids(12)[0]);
    expect(await page.$eval("#branch-totals", (e) => e.textContent)).toBe(
      "This branch: 12 messages · tokens in 9,260 · out 255",
    );
    expect(await page.$$eval("#tree button.selected", (all) => all.map((b) => b.getAttribute("data-id")))).toEqual(
      ids(10),
    );
    // Back to the other branch, by its last message.
    await clickNode(watched, ids(16)[0]!);
    expect(await shownIds(watched)).toEqual(ids(...range(1, 8), ...range(13, 16)));
    // A node before the fork shows the newest branch below it.
    await clickNode(watched, ids(3)[0]!);
    expect(await shownIds(watched)).toEqual(ids(...range(1, 8), ...range(13, 16)));
    const onPath = await page.$$eval("#tree button.on-path", (all) => all.map((b) => b.getAttribute("data-id")));
    expect(onPath).toEqual(ids(...range(1, 8), ...range(13, 16)));
    expect(watched.problems).toEqual([]);
  }, 30_000);

  it("hostile text from the model, the tools and the file stays text: nothing runs, nothing is fetched, no console error", async () => {
    const url = await pageFor("hostile", sampleSession({ hostile: true }));
    const watched = await open(url);
    const page = watched.page;
    expect(watched.problems).toEqual([]);
    expect(watched.dialogs).toEqual([]);
    expect(watched.requests.filter((r) => r !== url && !r.startsWith("data:"))).toEqual([]);
    expect(await page.evaluate(() => (globalThis as unknown as { __pwned?: number }).__pwned)).toBe(undefined);
    expect(
      await page.evaluate(
        () => (globalThis as unknown as { document: { scripts: { length: number } } }).document.scripts.length,
      ),
    ).toBe(1);
    expect(await page.$$eval("svg, iframe, object, embed, textarea, [onerror], [onload]", (all) => all.length)).toBe(0);
    expect(await page.$$eval("img", (all) => all.map((i) => i.getAttribute("src")!.slice(0, 22)))).toEqual([
      "data:image/png;base64,",
      "data:image/png;base64,",
    ]);
    // The text is all there, as text; control characters are shown as \uXXXX.
    const shown = HOSTILE.replace(
      /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g,
      (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
    );
    const user = await page.$eval("article.user .text", (e) => e.textContent);
    expect(user).toBe(
      `The greeting in greet.js prints undefined. Fix it, and here is a screenshot of the output.${shown}`,
    );
    expect(await page.$eval("h1", (e) => e.textContent)).toBe(`Session s${shown}`);
    expect(await page.title()).toBe("Session s<script · pi-course");
    // Branches switch with hostile ids too (their control characters are written as text there as well).
    const hostileId = (n: number) => `e${n}${shown}`;
    await clickNode(watched, hostileId(10));
    expect(await shownIds(watched)).toEqual(range(1, 12).map(hostileId));
    // Open every fold: still nothing runs.
    await page.$$eval("details", (all) => all.forEach((d) => ((d as unknown as Dom).open = true)));
    await page.evaluate(() => new Promise((resolve) => setTimeout(resolve, 100)));
    expect(await page.evaluate(() => (globalThis as unknown as { __pwned?: number }).__pwned)).toBe(undefined);
    expect(watched.dialogs).toEqual([]);
    expect(watched.problems).toEqual([]);
  }, 30_000);

  it("reads on a phone: one column, no sideways scrolling, the tree folded above the transcript", async () => {
    const watched = await open(await pageFor("phone", sampleSession()), { width: 390, height: 844 });
    const page = watched.page;
    expect(
      await page.evaluate(
        () =>
          (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement
            .scrollWidth,
      ),
    ).toBeLessThanOrEqual(390);
    expect(await page.$eval("#side", (d) => (d as unknown as Dom).open)).toBe(false);
    const main = await page.$eval("main", (m) => m.getBoundingClientRect().width);
    expect(main).toBeGreaterThan(370);
    await page.click("#side > summary");
    await clickNode(watched, ids(12)[0]!);
    expect(await shownIds(watched)).toEqual(ids(...range(1, 12)));
    expect(watched.problems).toEqual([]);
  }, 30_000);
});
