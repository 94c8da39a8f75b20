/**
 * Session page bench (issue 29): a 10,000-entry session exports in under a second, and the page
 * stays responsive. Measured and reported, never asserted in a test.
 *
 * Workload: session files of 10k and 50k entries, turns of a user message (~200 characters), an
 * assistant tool call, its result (~600 characters) and an answer, with a second answer (a fork)
 * every 50 turns; about 0.6 KB an entry. Timed:
 * - `export`: what `pi-course export` does: `readSessionFile` (read, parse, check every line),
 *   then `renderSessionPage` (tree, every message's article, one string), then the file written;
 * - `render`: `renderSessionPage` alone, on the entries already read.
 *
 * In a browser (Debian's chromium, headless, through puppeteer-core as the page's tests drive it;
 * skipped with a note when /usr/bin/chromium is missing): the 10k page opened as `file://` until
 * its script is ready; a branch switch (a click on a tree node, to the next two animation frames,
 * so layout and paint of the new branch are in); the longest main-thread task seen while loading
 * and switching (PerformanceObserver "longtask", tasks over 50 ms).
 *
 * No upstream comparison: pi's HTML export lives in @earendil-works/pi-coding-agent, which bench/
 * does not install.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import { readSessionFile, renderSessionPage } from "@pi/course";
import { CHROMIUM, launchBrowser } from "../packages/pi-course/test/support/browser.js";
import { measure, printTable } from "./harness.js";

const SIZES = (process.env.BENCH_PAGE_SIZES ?? "10000,50000").split(",").map(Number);
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 1);
const BROWSER_RUNS = Number(process.env.BENCH_BROWSER_RUNS ?? 3);

const dir = mkdtempSync(join(tmpdir(), "pi-bench-13-"));
const FILLER = "lorem ipsum dolor sit amet, consectetur adipiscing elit ";
const text = (n: number, i: number) => `${i} ${FILLER.repeat(Math.ceil(n / FILLER.length))}`.slice(0, n);

/** A session file of `entries` entries; see the module comment. */
function sessionText(entries: number): string {
  const lines = [
    JSON.stringify({
      type: "session",
      version: 1,
      id: `bench-${entries}`,
      timestamp: "2026-12-03T10:00:00.000Z",
      cwd: "/tmp/bench",
    }),
  ];
  let n = 0;
  let parent: string | null = null;
  const usage = { input: 1000, output: 50, totalTokens: 1050 };
  const push = (message: Record<string, unknown>, parentId: string | null): string => {
    const id = n.toString(16).padStart(8, "0");
    const t = 1_764_756_000_000 + n * 1000;
    n++;
    lines.push(
      JSON.stringify({
        type: "message",
        id,
        parentId,
        timestamp: new Date(t).toISOString(),
        message: { ...message, timestamp: t },
      }),
    );
    return id;
  };
  for (let turn = 0; n < entries; turn++) {
    const q = push({ role: "user", content: [{ type: "text", text: text(200, turn) }] }, parent);
    if (n >= entries) break;
    const call = push(
      {
        role: "assistant",
        content: [{ type: "toolCall", id: `c${turn}`, name: "read", arguments: { path: `src/${turn}.ts` } }],
        provider: "p",
        model: "m",
        usage,
        stopReason: "toolUse",
      },
      q,
    );
    if (n >= entries) break;
    const result = push(
      {
        role: "toolResult",
        toolCallId: `c${turn}`,
        toolName: "read",
        content: [{ type: "text", text: text(600, turn) }],
        isError: false,
      },
      call,
    );
    if (n >= entries) break;
    if (turn % 50 === 49) {
      push(
        {
          role: "assistant",
          content: [{ type: "text", text: `an earlier answer ${text(150, turn)}` }],
          provider: "p",
          model: "m",
          usage,
          stopReason: "stop",
        },
        result,
      );
      if (n >= entries) break;
    }
    parent = push(
      {
        role: "assistant",
        content: [{ type: "text", text: text(150, turn) }],
        provider: "p",
        model: "m",
        usage,
        stopReason: "stop",
      },
      result,
    );
  }
  return `${lines.join("\n")}\n`;
}

const files = new Map<number, string>();
for (const size of SIZES) {
  const file = join(dir, `s${size}.jsonl`);
  writeFileSync(file, sessionText(size));
  files.set(size, file);
}

try {
  for (const size of SIZES) {
    const file = files.get(size)!;
    const read = await readSessionFile(file);
    const out = join(dir, `s${size}.html`);
    const results = await measure(
      [
        {
          name: `export ${size / 1000}k entries`,
          run: async () => {
            const session = await readSessionFile(file);
            const html = renderSessionPage(session, { source: file });
            await writeFile(out, html);
            return html.length;
          },
        },
        { name: `render ${size / 1000}k entries`, run: () => renderSessionPage(read, { source: file }).length },
      ],
      { runs: RUNS, warmup: WARMUP },
    );
    printTable(`session page, ${size.toLocaleString("en")} entries`, results);
    const bytes = results[0]!.last as number;
    console.log(
      `  export: ${(results[0]!.median / (size / 10_000)).toFixed(0)} ms per 10k entries; page ${(bytes / 1e6).toFixed(1)} MB ` +
        `(${(bytes / size).toFixed(0)} B an entry); bar: 10k entries under 1,000 ms: ${size !== 10_000 ? "n/a" : `wall ${results[0]!.median < 1000 ? "ok" : "MISS"}, cpu ${results[0]!.cpuMedian < 1000 ? "ok" : "MISS"}`} ` +
        "(on a loaded machine wall time is mostly waiting for a core; cpu is the export's own work)",
    );
  }

  if (!existsSync(CHROMIUM)) {
    console.log(`\nbrowser: skipped, no chromium at ${CHROMIUM} (apt-get install -y chromium)`);
  } else {
    const size = SIZES[0]!;
    const out = join(dir, `s${size}.html`);
    writeFileSync(out, renderSessionPage(await readSessionFile(files.get(size)!)));
    const browser = await launchBrowser();
    try {
      const loads: number[] = [];
      const switches: number[] = [];
      let longest = 0;
      for (let i = 0; i < BROWSER_RUNS; i++) {
        const { page, problems } = await browser.page();
        await page.evaluateOnNewDocument(() => {
          const state = globalThis as unknown as { __longest: number };
          state.__longest = 0;
          // The browser's PerformanceObserver (Node's types do not know "longtask").
          const Observer = (
            globalThis as unknown as {
              PerformanceObserver: new (
                f: (list: { getEntries(): { duration: number }[] }) => void,
              ) => { observe(o: object): void };
            }
          ).PerformanceObserver;
          new Observer((list) => {
            for (const entry of list.getEntries()) state.__longest = Math.max(state.__longest, entry.duration);
          }).observe({ type: "longtask", buffered: true });
        });
        const started = performance.now();
        await page.goto(pathToFileURL(out).href, { waitUntil: "load" });
        await page.waitForSelector("body[data-ready=true]");
        loads.push(performance.now() - started);
        // A click on a node in the middle of the tree, timed inside the page to the second frame after it.
        const switched = await page.evaluate(
          () =>
            new Promise<number>((resolve) => {
              const doc = (
                globalThis as unknown as { document: { querySelectorAll(s: string): ArrayLike<{ click(): void }> } }
              ).document;
              const buttons = doc.querySelectorAll("#tree button[data-id]");
              const raf = (globalThis as unknown as { requestAnimationFrame(f: () => void): void })
                .requestAnimationFrame;
              const t0 = performance.now();
              buttons[Math.floor(buttons.length / 3)]!.click();
              raf(() => raf(() => resolve(performance.now() - t0)));
            }),
        );
        switches.push(switched);
        longest = Math.max(
          longest,
          await page.evaluate(() => (globalThis as unknown as { __longest: number }).__longest),
        );
        if (problems.length > 0) throw new Error(`the page reported problems: ${problems.join("; ")}`);
        await page.close();
      }
      const med = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
      console.log(`\nsession page in chromium, ${size.toLocaleString("en")} entries (median of ${BROWSER_RUNS})`);
      console.log(
        `  open until the script is ready   ${med(loads).toFixed(0)} ms   [${loads.map((x) => x.toFixed(0)).join(", ")}]`,
      );
      console.log(
        `  branch switch to painted         ${med(switches).toFixed(0)} ms   [${switches.map((x) => x.toFixed(0)).join(", ")}]`,
      );
      console.log(`  longest main-thread task         ${longest.toFixed(0)} ms`);
    } finally {
      await browser.close();
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
