/**
 * A real headless browser for tests: Debian's `chromium`, driven by `puppeteer-core` (pinned in
 * the root package.json; it downloads no browser). Shared by the tests that open a page the
 * library writes (the session page; the eval report).
 *
 * Every launch gets a fresh profile folder (removed at close) and flags that keep the browser
 * quiet and offline: no sandbox (containers and CI run as root), no GPU, no QUIC, no first-run
 * screens, no background networking, component updates or sync. `.ci/run` installs chromium when
 * `/usr/bin/chromium` is missing; elsewhere, `PI_COURSE_CHROMIUM` names another binary.
 */
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import puppeteer, { type Browser, type ConsoleMessage, type Page } from "puppeteer-core";

/** The browser binary: `PI_COURSE_CHROMIUM`, else Debian's. */
export const CHROMIUM = process.env.PI_COURSE_CHROMIUM ?? "/usr/bin/chromium";

/** The flags every launch uses (besides a fresh `--user-data-dir`). */
export const CHROMIUM_FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
] as const;

export interface TestBrowser {
  browser: Browser;
  /** A new page that records its console messages, page errors and every request it makes. */
  page(viewport?: { width: number; height: number }): Promise<WatchedPage>;
  /** Closes the browser and removes its profile folder. */
  close(): Promise<void>;
}

export interface WatchedPage {
  page: Page;
  /** Console messages of type error or warning, and uncaught exceptions. */
  problems: string[];
  /** Every console message, as `type: text`. */
  console: string[];
  /** URLs the page asked for (a `file:` page that is self-contained asks for itself only). */
  requests: string[];
  /** Dialogs (`alert`, `confirm`, `prompt`) the page opened; each is dismissed. */
  dialogs: string[];
}

/** Launches chromium; throws with what to install when it is missing. */
export async function launchBrowser(): Promise<TestBrowser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `no browser at ${CHROMIUM}: install Debian's chromium (apt-get install -y chromium), ` +
        "or name another Chromium binary in PI_COURSE_CHROMIUM",
    );
  }
  const profile = await mkdtemp(path.join(tmpdir(), "pi-course-chromium-"));
  let browser: Browser;
  try {
    browser = await puppeteer.launch({
      executablePath: CHROMIUM,
      headless: true,
      pipe: true,
      args: [...CHROMIUM_FLAGS, `--user-data-dir=${profile}`],
    });
  } catch (error) {
    await rm(profile, { recursive: true, force: true });
    throw error;
  }
  return {
    browser,
    async page(viewport = { width: 1280, height: 900 }) {
      const page = await browser.newPage();
      await page.setViewport(viewport);
      const watched: WatchedPage = { page, problems: [], console: [], requests: [], dialogs: [] };
      page.on("console", (message: ConsoleMessage) => {
        watched.console.push(`${message.type()}: ${message.text()}`);
        if (message.type() === "error" || message.type() === "warn")
          watched.problems.push(`${message.type()}: ${message.text()}`);
      });
      page.on("pageerror", (error) => watched.problems.push(`pageerror: ${String(error)}`));
      page.on("request", (request) => watched.requests.push(request.url()));
      page.on("dialog", (dialog) => {
        watched.dialogs.push(`${dialog.type()}: ${dialog.message()}`);
        void dialog.dismiss();
      });
      return watched;
    },
    async close() {
      await browser.close().catch(() => undefined);
      await rm(profile, { recursive: true, force: true });
    },
  };
}
