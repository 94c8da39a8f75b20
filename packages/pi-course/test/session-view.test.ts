/**
 * The session's tree (session-page/tree.ts), `/fork` and `/label` on a real session file with a
 * real `Agent`, the page's escaping, and `pi-course export` through `runMain`. The page in a
 * browser is session-page.browser.test.ts; the commands in a terminal, session-view.terminal.test.ts.
 */
import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Agent } from "../src/agent/agent.js";
import { runMain } from "../src/cli/main.js";
import { forkSession, labelSession, treeLines } from "../src/cli/session-tree.js";
import { textOf } from "../src/messages.js";
import { ScriptedModel } from "../src/models/scripted-model.js";
import { SessionFile } from "../src/session/session.js";
import { readSessionFile } from "../src/session/session-reader.js";
import { escapeHtml, imageDataUrl } from "../src/session-page/escape.js";
import { renderSessionPage } from "../src/session-page/page.js";
import { buildSessionTree, findNode } from "../src/session-page/tree.js";
import { assistantMessage } from "../src/messages.js";
import { HOSTILE, longSession, sampleSession } from "./support/sample-session.js";
import { builtStart } from "./support/built-cli.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "pi-course-view-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function sample(name: string, text = sampleSession()): Promise<string> {
  const file = path.join(dir, `${name}.jsonl`);
  await writeFile(file, text);
  return file;
}

const io = () => {
  const out = { stdout: "", stderr: "" };
  return {
    out,
    io: {
      stdout: { write: (t: string) => (out.stdout += t) },
      stderr: { write: (t: string) => (out.stderr += t) },
      env: {},
    },
  };
};

describe("the session tree", () => {
  it("numbers the messages in file order, draws forks, marks the place and names labelled messages; labels draw no line", async () => {
    const { entries } = await readSessionFile(await sample("tree"));
    const tree = buildSessionTree(entries);
    expect(tree.byNumber).toHaveLength(16);
    expect(tree.nodes.map((n) => `${n.prefix}${n.number}`)).toEqual([
      "1",
      "2",
      "3",
      "4",
      "5",
      "6",
      "7",
      "8",
      "├─ 9",
      "│  10",
      "│  11",
      "│  12",
      "13",
      "14",
      "15",
      "16",
    ]);
    expect(tree.current?.number).toBe(16);
    expect(tree.nodes.filter((n) => n.onCurrentPath).map((n) => n.number)).toEqual([
      1, 2, 3, 4, 5, 6, 7, 8, 13, 14, 15, 16,
    ]);
    expect(tree.leaves.map((n) => n.number)).toEqual([12, 16]);
    expect(tree.byNumber[7]!.label).toBe("fixed");
    // Message 13's parent is the label entry; its shown parent is message 8.
    expect(tree.byNumber[12]!.parent?.number).toBe(8);
    expect(tree.byNumber[0]!.newestLeaf.number).toBe(16);
    expect(tree.byNumber[9]!.newestLeaf.number).toBe(12);
    // Another place: the label entry (a fork point) marks its parent.
    expect(buildSessionTree(entries, "e0000090").current?.number).toBe(8);
    expect(() => buildSessionTree(entries, "nope")).toThrow('no entry "nope" in this session');
  });

  it("finds a node by number or id prefix, and says what to give otherwise", async () => {
    const tree = buildSessionTree((await readSessionFile(await sample("find"))).entries);
    expect(findNode(tree, "9").entry.id).toBe("e0000009");
    expect(findNode(tree, "e0000013").number).toBe(13);
    expect(() => findNode(tree, "17")).toThrow("there is no message 17: /tree numbers them 1 to 16");
    expect(() => findNode(tree, "e00000")).toThrow('"e00000" starts 16 ids');
    expect(() => findNode(tree, "zz")).toThrow('no message has an id starting "zz"');
    expect(() => findNode(tree, " ")).toThrow("give a message number from /tree, or an entry id");
  });

  it("a 10,000-entry chain builds without recursion", () => {
    const entries = longSession(10_000)
      .trimEnd()
      .split("\n")
      .slice(1)
      .map((l) => JSON.parse(l));
    const tree = buildSessionTree(entries);
    expect(tree.byNumber).toHaveLength(10_000);
    expect(tree.current?.entry.id).toBe(entries.at(-1).id);
  });
});

describe("/fork and /label on a session file, with the Agent", () => {
  it("a fork appends one label entry, the Agent goes on from the fork point, and a reopened file (--continue) is still there", async () => {
    const file = path.join(dir, "fork.jsonl");
    const session = await SessionFile.create(file, { cwd: dir });
    const model = new ScriptedModel([
      assistantMessage([{ type: "text", text: "one" }], "stop"),
      assistantMessage([{ type: "text", text: "two" }], "stop"),
      assistantMessage([{ type: "text", text: "three" }], "stop"),
    ]);
    const agent = new Agent({ initialState: { model }, session });
    await agent.prompt("first");
    await agent.prompt("second");
    const before = await readFile(file, "utf8");
    const node = await forkSession(session, "2");
    expect(node.number).toBe(2);
    const text = await readFile(file, "utf8");
    // Append-only: the file before the fork is a prefix of the file after it, one line shorter.
    expect(text.startsWith(before)).toBe(true);
    expect(text.slice(before.length).split("\n")).toHaveLength(2);
    const last = JSON.parse(text.trimEnd().split("\n").at(-1)!);
    expect(last).toMatchObject({ type: "label", parentId: node.entry.id, targetId: node.entry.id, label: null });
    agent.setSession(session);
    expect(agent.state.messages.map((m) => textOf(m as never))).toEqual(["first", "one"]);
    await agent.prompt("again");
    expect(model.requests.at(-1)!.messages.map((m) => textOf(m))).toEqual(["first", "one", "again"]);
    await labelSession(session, "the retry");
    expect(treeLines(session)).toEqual([
      "6 messages, 2 branches",
      "1 user: first",
      "2 assistant: one",
      "├─ 3 user: second",
      "│  4 assistant: two",
      "5 user: again",
      "6 assistant: three [the retry]  ← here",
    ]);
    await session.close();
    // What --continue does: open the file, attach it at its leaf.
    const reopened = await SessionFile.open(file);
    const resumed = new Agent({ initialState: { model }, session: reopened });
    expect(resumed.state.messages.map((m) => textOf(m as never))).toEqual(["first", "one", "again", "three"]);
    // A fork left without a message is still the place after a restart.
    await forkSession(reopened, "1");
    await reopened.close();
    const again = await SessionFile.open(file);
    expect(
      new Agent({ initialState: { model }, session: again }).state.messages.map((m) => textOf(m as never)),
    ).toEqual(["first"]);
    expect(treeLines(again).at(1)).toBe("1 user: first  ← here (your next message starts a new branch)");
    await expect(labelSession(again, "  ")).rejects.toThrow("give the label's text: /label TEXT");
    await again.close();
  });

  it("a fork keeps the label of the message it forks from", async () => {
    const file = await sample("keep-label");
    const session = await SessionFile.open(file);
    await forkSession(session, "8");
    expect(buildSessionTree(session.entries()).byNumber[7]!.label).toBe("fixed");
    await session.close();
  });

  it("a fork given a label names its fork point with it (/fork N LABEL)", async () => {
    const file = await sample("new-label");
    const session = await SessionFile.open(file);
    const node = await forkSession(session, "2", "  try the other way ");
    const tree = buildSessionTree(session.entries());
    expect(tree.byNumber[1]!.label).toBe("try the other way");
    expect(tree.current?.entry.id).toBe(node.entry.id); // the conversation goes on from there
    await session.close();
  });
});

describe("the page's escaping", () => {
  it("escapes markup and shows control characters as text, in content and attributes", () => {
    expect(escapeHtml(`<a href="x">'&'</a>`)).toBe("&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
    expect(escapeHtml("a\u0000b\u001b[1m\u0007\u007f\u009b\tc\nd")).toBe(
      "a\\u0000b\\u001b[1m\\u0007\\u007f\\u009b\tc\nd",
    );
    expect(imageDataUrl("image/svg+xml", "PHN2Zz4=")).toBe(undefined);
    expect(imageDataUrl("image/png", 'AAA"><script>')).toBe(undefined);
    expect(imageDataUrl("image/png", "AAAA")).toBe("data:image/png;base64,AAAA");
  });

  it("a hostile session's page holds the page's one script and no markup from the file", async () => {
    const html = renderSessionPage(await readSessionFile(await sample("hostile", sampleSession({ hostile: true }))));
    expect(html.match(/<script/g)).toHaveLength(1);
    expect(html.match(/<\/script>/g)).toHaveLength(1);
    // No event handler in any tag (quoted attribute values, which hold escaped text, left out).
    expect(/<[a-z][^<>]*\son(error|load)=/i.test(html.replace(/"[^"]*"/g, '""'))).toBe(false);
    expect(html.includes("<svg") || html.includes("<img src=x")).toBe(false);
    expect(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/.test(html)).toBe(false);
    expect(html).toContain("Content-Security-Policy");
    expect(html.includes(escapeHtml(HOSTILE))).toBe(true);
  });
});

describe("pi-course export", () => {
  it("writes the page beside the session file, or to --out", async () => {
    const file = await sample("export");
    const a = io();
    expect(await runMain(["export", file], a.io)).toBe(0);
    expect(a.out.stdout).toMatch(/^wrote .*export\.html \(16 messages, 2 branches, \d+ bytes\)\n$/);
    expect((await readFile(path.join(dir, "export.html"), "utf8")).startsWith("<!doctype html>")).toBe(true);
    const b = io();
    expect(await runMain(["export", file, "--out", path.join(dir, "other.html")], b.io)).toBe(0);
    expect((await stat(path.join(dir, "other.html"))).size).toBeGreaterThan(1000);
  });

  it("runs through the real entry point (start), with no launcher, key or model", async () => {
    const file = await sample("entry");
    const out = path.join(dir, "entry-page.html");
    const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>(
      (resolve, reject) => {
        const child = spawn(process.execPath, [builtStart(), "export", file, "--out", out], {
          stdio: ["ignore", "pipe", "pipe"],
        });
        let stdout = "";
        let stderr = "";
        child.stdout.on("data", (d: Buffer) => (stdout += d.toString("utf8")));
        child.stderr.on("data", (d: Buffer) => (stderr += d.toString("utf8")));
        child.on("error", reject);
        child.on("close", (code) => resolve({ code, stdout, stderr }));
      },
    );
    expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
    expect(stdout).toMatch(/^wrote .*entry-page\.html \(16 messages, 2 branches, \d+ bytes\)\n$/);
    expect((await readFile(out, "utf8")).includes("Renamed greet to welcome")).toBe(true);
    // the page shows what the session holds: 0600 as the session is, whatever the umask
    expect((await stat(out)).mode & 0o777).toBe(0o600);
  }, 90_000);

  it("refuses a missing file, a .jsonl target and bad usage, with what to do", async () => {
    const file = await sample("refuse");
    const cases: [string[], number, RegExp][] = [
      [["export"], 2, /which session\? give its file/],
      [["export", file, "--out"], 2, /--out needs a path/],
      [["export", file, "--bogus"], 2, /unknown option --bogus/],
      [["export", file, file], 2, /one session file at a time/],
      [["export", file, "--out", file], 1, /refusing to write the page to .*: that is a session file/],
      [["export", path.join(dir, "missing.jsonl")], 1, /ENOENT/],
    ];
    for (const [argv, code, message] of cases) {
      const r = io();
      expect(await runMain(argv, r.io)).toBe(code);
      expect(r.out.stderr).toMatch(message);
    }
    expect(await readFile(file, "utf8")).toBe(sampleSession());
  });
});
