/**
 * Makes the README's picture of the session page: the sample session of the page's tests,
 * rendered, opened in headless chromium (support/browser.ts) and captured.
 *
 *   npx tsx packages/pi-course/test/support/session-page-screenshot.ts docs/session-page.png
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { readSessionFile } from "../../src/session/session-reader.js";
import { renderSessionPage } from "../../src/session-page/page.js";
import { launchBrowser } from "./browser.js";
import { sampleSession } from "./sample-session.js";

const out = path.resolve(process.argv[2] ?? "docs/session-page.png");
const dir = await mkdtemp(path.join(tmpdir(), "pi-course-shot-"));
const browser = await launchBrowser();
try {
  const file = path.join(dir, "2026-12-03T10-00-00-000Z_3f2a9c1e.jsonl");
  await writeFile(file, sampleSession());
  const page = path.join(dir, "session.html");
  await writeFile(
    page,
    renderSessionPage(await readSessionFile(file), {
      source: "~/.pi-course/sessions/5194e11c6248bc6d/2026-12-03T10-00-00-000Z_3f2a9c1e.jsonl",
    }),
  );
  const { page: tab, problems } = await browser.page({ width: 1200, height: 820 });
  await tab.emulateMediaFeatures([{ name: "prefers-color-scheme", value: "light" }]);
  await tab.goto(pathToFileURL(page).href, { waitUntil: "load" });
  await tab.waitForSelector("body[data-ready=true]");
  // Open the first tool call and its result, so the picture shows what a fold holds.
  await tab.click("#e-e0000002 details.call > summary");
  await tab.click("#e-e0000003 details > summary");
  await tab.screenshot({ path: out as `${string}.png` });
  if (problems.length > 0) throw new Error(`the page reported problems: ${problems.join("; ")}`);
  process.stdout.write(`wrote ${out}\n`);
} finally {
  await browser.close();
  await rm(dir, { recursive: true, force: true });
}
