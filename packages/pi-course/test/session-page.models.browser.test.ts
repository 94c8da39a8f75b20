/**
 * Chapter 18 on the session page and in `/tree`: where the model or the thinking level changed
 * (`model_change`), which real model answered under a virtual model (`model_route`), and what
 * each answer cost (unknown shown as unknown, never as zero). In a real headless chromium.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { treeLines } from "../src/cli/session-tree.js";
import { SessionFile } from "../src/session/session.js";
import { readSessionFile } from "../src/session/session-reader.js";
import { renderSessionPage } from "../src/session-page/page.js";
import { launchBrowser, type TestBrowser } from "./support/browser.js";

let dir: string;
let browser: TestBrowser;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "pi-course-page-models-"));
  browser = await launchBrowser();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await rm(dir, { recursive: true, force: true });
});

/**
 * A conversation: a question answered by gpt-4o-mini (priced), `/model gpt-4o-mini,gpt-4o` +
 * `/thinking high`, a question answered by gpt-4o after gpt-4o-mini was overloaded (priced), a
 * question answered by a model with no price (tokens used: cost unknown), then `/model gpt-4o`
 * with no answer yet (the place).
 */
function session(): string {
  let clock = Date.parse("2026-12-04T10:00:00.000Z");
  let n = 0;
  let parent: string | null = null;
  const lines: object[] = [
    { type: "session", version: 1, id: "s-models", timestamp: new Date(clock).toISOString(), cwd: "/work" },
  ];
  const add = (entry: object) => {
    clock += 5_000;
    const id = `e${String(++n).padStart(7, "0")}`;
    lines.push({ ...entry, id, parentId: parent, timestamp: new Date(clock).toISOString() });
    parent = id;
  };
  const user = (text: string) =>
    add({ type: "message", message: { role: "user", content: [{ type: "text", text }], timestamp: clock } });
  const answer = (model: string, text: string, input: number, output: number, cost?: number) =>
    add({
      type: "message",
      message: {
        role: "assistant",
        content: [{ type: "text", text }],
        provider: "openai-compatible",
        model,
        usage: { input, output, totalTokens: input + output },
        ...(cost !== undefined && {
          cost: { input: cost / 2, output: cost / 2, cacheRead: 0, cacheWrite: 0, total: cost },
        }),
        stopReason: "stop",
        timestamp: clock,
      },
    });
  user("What is 2 + 2?");
  answer("gpt-4o-mini", "4.", 100, 10, 0.000021);
  add({ type: "model_change", model: "gpt-4o-mini,gpt-4o", thinking: "off" });
  add({ type: "model_change", model: "gpt-4o-mini,gpt-4o", thinking: "high" });
  user("And 3 + 3?");
  add({
    type: "model_route",
    model: "gpt-4o-mini,gpt-4o",
    provider: "openai-compatible",
    answeredBy: "gpt-4o",
    skipped: [{ model: "gpt-4o-mini", error: "Overloaded" }],
  });
  answer("gpt-4o", "6.", 200, 20, 0.0125);
  user("And 4 + 4?");
  answer("house-model", "8.", 300, 30);
  add({ type: "model_change", model: "gpt-4o", thinking: "high" });
  return `${lines.map((line) => JSON.stringify(line)).join("\n")}\n`;
}

describe("chapter 18 on the session page and in /tree", () => {
  it("the page marks where the model and thinking changed and which model answered, and shows each answer's model and cost (unknown as unknown)", async () => {
    const file = path.join(dir, "models.jsonl");
    await writeFile(file, session());
    const out = path.join(dir, "models.html");
    await writeFile(out, renderSessionPage(await readSessionFile(file), { source: file }));
    const url = pathToFileURL(out).href;
    const watched = await browser.page();
    await watched.page.goto(url, { waitUntil: "load" });
    await watched.page.waitForSelector("body[data-ready=true]", { timeout: 5_000 });
    expect(watched.problems).toEqual([]);
    const page = watched.page;
    const text = (selector: string) => page.$eval(selector, (e) => e.textContent);
    const marks = (selector: string) =>
      page.$$eval(selector, (all) => all.map((e) => `${e.getAttribute("data-type") ?? ""} ${e.textContent}`.trim()));
    // Above message 3 (the second question): the two choices; above its answer: the route;
    // below the current message (the last answer): the choice not yet used.
    expect(await marks("#e-e0000005 .model-mark")).toEqual([
      "model_change ⇄ model → gpt-4o-mini,gpt-4o · thinking off",
      "model_change ⇄ model → gpt-4o-mini,gpt-4o · thinking high",
    ]);
    expect(await marks("#e-e0000007 .model-mark")).toEqual([
      "model_route ⇄ answered by gpt-4o (openai-compatible) for gpt-4o-mini,gpt-4o, after gpt-4o-mini failed (Overloaded)",
    ]);
    expect(await marks("#e-e0000009 .model-mark")).toEqual(["model_change ⇄ model → gpt-4o · thinking high"]);
    expect(await marks("#e-e0000002 .model-mark")).toEqual([]);
    // Each answer: its model and its cost; an unknown price is "cost unknown", never $0.
    expect(await text("#e-e0000002 .meta")).toContain("openai-compatible · gpt-4o-mini");
    expect(await text("#e-e0000002 .cost")).toBe("$0.000021");
    expect(await text("#e-e0000007 .cost")).toBe("$0.0125");
    expect(await text("#e-e0000009 .meta")).toContain("openai-compatible · house-model");
    expect(await text("#e-e0000009 .cost")).toBe("cost unknown");
    expect(await text("#session-cost")).toBe("Cost of the whole session: $0.0125 + unknown (1 answer without a price)");
    // The tree beside: marks on lines of their own, the messages keep their numbers.
    const tree = await page.$$eval("#tree li", (all) => all.map((li) => li.textContent));
    expect(tree).toEqual([
      "1 user: What is 2 + 2?",
      "2 assistant: 4.",
      "⇄ model → gpt-4o-mini,gpt-4o · thinking off",
      "⇄ model → gpt-4o-mini,gpt-4o · thinking high",
      "3 user: And 3 + 3?",
      "⇄ answered by gpt-4o (openai-compatible) for gpt-4o-mini,gpt-4o, after gpt-4o-mini failed (Overloaded)",
      "4 assistant: 6.",
      "5 user: And 4 + 4?",
      "6 assistant: 8. ← here",
      "⇄ model → gpt-4o · thinking high",
    ]);
  }, 30_000);

  it("/tree prints the same marks on lines of their own", async () => {
    const file = path.join(dir, "tree.jsonl");
    await writeFile(file, session());
    const opened = await SessionFile.open(file, { readOnly: true });
    try {
      expect(treeLines(opened, 120)).toEqual([
        "6 messages, 1 branch",
        "1 user: What is 2 + 2?",
        "2 assistant: 4.",
        "  ⇄ model → gpt-4o-mini,gpt-4o · thinking off",
        "  ⇄ model → gpt-4o-mini,gpt-4o · thinking high",
        "3 user: And 3 + 3?",
        "  ⇄ answered by gpt-4o (openai-compatible) for gpt-4o-mini,gpt-4o, after gpt-4o-mini failed (Overloaded)",
        "4 assistant: 6.",
        "5 user: And 4 + 4?",
        "6 assistant: 8.  ← here",
        "  ⇄ model → gpt-4o · thinking high",
      ]);
    } finally {
      await opened.close();
    }
  });
});
