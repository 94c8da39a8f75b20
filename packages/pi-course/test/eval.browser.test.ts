/**
 * The eval report (src/eval/html-report.ts) in a real browser: Debian's chromium, headless,
 * through support/browser.ts. The runs are real (in-process, through the CLI's runtime), one of
 * each status, plus a case whose transcript tries to inject markup; the page must load without
 * an error or a request beyond itself, show every case, and open a run's transcript on click.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, expect, it } from "vitest";
import { caseModel, runtimeWire } from "../src/cli/eval-wiring.js";
import { loadSuite } from "../src/eval/case-format.js";
import { readTranscripts, renderHtmlReport } from "../src/eval/html-report.js";
import { runCase } from "../src/eval/run-case.js";
import type { RunRecord } from "../src/eval/run-record.js";
import { buildSuiteReport } from "../src/eval/suite-report.js";
import { launchBrowser, type TestBrowser } from "./support/browser.js";
import { bashThenAnswer, writeCase } from "./support/eval-cases.js";

let dir: string;
let browser: TestBrowser;
let pageFile: string;
const HOSTILE = `<img src=x onerror="alert('pwned')"><script>alert('pwned')</script>`;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "pi-course-eval-page-"));
  const suite = path.join(dir, "suite");
  await writeCase(suite, "passes", { script: [{ text: "All good." }] });
  await writeCase(suite, "task-fails", {
    check: "echo 'expected 42, got 41'; exit 1",
    script: [{ text: "Done, I think." }],
  });
  await writeCase(suite, "escapes", { script: bashThenAnswer("echo x > ../escaped.txt") });
  await writeCase(suite, "server-down", { script: [{ error: "connect ECONNREFUSED 127.0.0.1:9" }] });
  await writeCase(suite, "hostile", { script: bashThenAnswer(`echo "${HOSTILE.replace(/"/g, '\\"')}"`, HOSTILE) });
  const cases = await loadSuite(suite);
  const runs: RunRecord[] = [];
  for (const evalCase of cases) {
    runs.push(
      await runCase(evalCase, {
        repeat: 0,
        runRoot: path.join(dir, "runs", evalCase.name),
        sharedTemp: false, // other test files write at the top of /tmp meanwhile
        model: await caseModel(evalCase, undefined, 0),
        wire: runtimeWire(undefined),
        keepSessionAs: path.join(dir, "out", "sessions", evalCase.name, "0.jsonl"),
      }),
    );
  }
  const report = buildSuiteReport(
    {
      suite,
      model: "scripted",
      startedAt: new Date(),
      finishedAt: new Date(),
      concurrency: 1,
      repeat: 1,
      interrupted: false,
      cases: cases.map((c) => ({ name: c.name, tags: c.settings.tags, minPassRate: c.settings.minPassRate })),
    },
    runs,
  );
  pageFile = path.join(dir, "out", "report.html");
  await writeFile(pageFile, renderHtmlReport(report, await readTranscripts(report)));
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await rm(dir, { recursive: true, force: true });
});

it("the report page loads offline without errors and shows every case with its verdict", async () => {
  const { page, problems, requests, dialogs } = await browser.page();
  const url = pathToFileURL(pageFile).href;
  await page.goto(url, { waitUntil: "load" });
  const rows = await page.$$eval("#summary tbody tr", (trs) =>
    trs.map((tr) =>
      Array.from(tr.querySelectorAll("td"), (td) => ((td as { textContent: string | null }).textContent ?? "").trim()),
    ),
  );
  expect(rows.map((r) => [r[0], r[1]])).toEqual([
    ["escapes", "failed"],
    ["hostile", "passed"],
    ["passes", "passed"],
    ["server-down", "failed"],
    ["task-fails", "failed"],
  ]);
  expect(rows.map((r) => r[3])).toEqual(["1 protocol", "1 passed", "1 passed", "1 infrastructure", "1 failed"]);
  expect(await page.$eval("#totals", (p) => p.textContent?.replace(/\s+/g, " ").trim())).toBe(
    "2 of 5 cases passed. Runs: 2 passed, 1 failed (task), 1 protocol, 1 infrastructure, 0 interrupted.",
  );
  expect(await page.$$eval("section h2", (hs) => hs.map((h) => h.textContent))).toEqual([
    "escapes failed",
    "hostile passed",
    "passes passed",
    "server-down failed",
    "task-fails failed",
  ]);
  expect(problems).toEqual([]);
  expect(dialogs).toEqual([]);
  expect(requests).toEqual([url]);
});

it("a run's details are folded until clicked, then show the reason, the check's output and the transcript", async () => {
  const { page, problems, dialogs } = await browser.page();
  await page.goto(pathToFileURL(pageFile).href, { waitUntil: "load" });
  const run = '[data-run="task-fails#0"]';
  const check = `${run} pre.check`;
  expect(await page.$eval(run, (d) => (d as unknown as { open: boolean }).open)).toBe(false);
  expect(await page.$eval(check, (el) => (el as unknown as { checkVisibility(): boolean }).checkVisibility())).toBe(
    false,
  );
  expect(await page.$eval(`${run} summary`, (s) => s.textContent?.replace(/\s+/g, " "))).toContain(
    "failed run #0 — check: the check exited with 1",
  );
  await page.click(`${run} summary`);
  expect(await page.$eval(run, (d) => (d as unknown as { open: boolean }).open)).toBe(true);
  expect(await page.$eval(check, (el) => (el as unknown as { checkVisibility(): boolean }).checkVisibility())).toBe(
    true,
  );
  expect(await page.$eval(check, (el) => el.textContent)).toBe("expected 42, got 41\n");
  expect(await page.$$eval(`${run} .msg .role`, (els) => els.map((e) => e.textContent))).toEqual(["user", "assistant"]);
  // The protocol failure names the file written outside, the hostile text stays text.
  await page.click('[data-run="escapes#0"] summary');
  expect(await page.$eval('[data-run="escapes#0"] li', (li) => li.textContent)).toMatch(
    /^written outside the workspace: .*escaped\.txt was created\.$/,
  );
  await page.click('[data-run="hostile#0"] summary');
  const shown = await page.$$eval('[data-run="hostile#0"] .assistant pre', (els) => els.map((e) => e.textContent));
  expect(shown).toContain(HOSTILE);
  expect(await page.$$eval("img, script", (els) => els.length)).toBe(0);
  expect(problems).toEqual([]);
  expect(dialogs).toEqual([]);
});
