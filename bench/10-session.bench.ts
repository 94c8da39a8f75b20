/**
 * Chapter 10 bench: the session file. DESIGN §5 bar: open (and walk to the leaf) in time and
 * memory linear in the entries; report ms per 10k entries, and appends/s with and without fsync.
 *
 * Workload: session files of 10k, 50k and 100k entries of about 1 KB each (100k ≈ 100 MB), written
 * once up front: a conversation of user / assistant (text or a tool call) / tool result messages,
 * mostly one chain with a branch every 50 entries and a label every 100. Timed: `SessionFile.open`
 * (read, parse, check every line, index the tree), then `pathToLeaf(leaf)` and `messagesOf` of
 * that path (what a resume does before the context projection of chapter 11).
 *
 * The floor reads the 100k file, JSON.parses every line and keeps the values, nothing else (no
 * ratio bar: it shows what checking, indexing and freezing the entries cost on top of that).
 *
 * Memory: heap + external bytes held by the open session (after a full GC), per 10k entries.
 * Appends: `append` of 1 KB message entries, awaited one by one and 64 at a time, without and
 * with `durable` (fsync per write; that figure is the disk's, not the code's).
 *
 * No upstream comparison: pi's SessionManager lives in @earendil-works/pi-coding-agent, which
 * bench/ does not install (its session code is not in pi-ai or pi-agent-core).
 */
import { appendFileSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SessionFile, messagesOf } from "@pi/course";
import type { AgentMessage, SessionEntry } from "@pi/course";
import { measure, printTable } from "./harness.js";

const SIZES = (process.env.BENCH_SESSION_SIZES ?? "10000,50000,100000").split(",").map(Number);
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 1);
const APPENDS = Number(process.env.BENCH_APPENDS ?? 10_000);
const DURABLE_APPENDS = Number(process.env.BENCH_DURABLE_APPENDS ?? 300);

const dir = mkdtempSync(join(tmpdir(), "pi-bench-10-"));
const FILLER = "lorem ipsum dolor sit amet, consectetur adipiscing elit ";
const text = (n: number, i: number) => `${i} ${FILLER.repeat(Math.ceil(n / FILLER.length))}`.slice(0, n);

function messageFor(i: number): AgentMessage {
  const t = 1_700_000_000_000 + i;
  switch (i % 4) {
    case 0:
      return { role: "user", content: [{ type: "text", text: text(850, i) }], timestamp: t };
    case 1:
      return {
        role: "assistant",
        content: [
          {
            type: "toolCall",
            id: `call_${i}`,
            name: "read",
            arguments: { path: `src/file-${i}.ts`, note: text(700, i) },
          },
        ],
        provider: "bench",
        model: "m",
        usage: { input: 1000 + i, output: 50, totalTokens: 1050 + i },
        stopReason: "toolUse",
        timestamp: t,
      };
    case 2:
      return {
        role: "toolResult",
        toolCallId: `call_${i - 1}`,
        toolName: "read",
        content: [{ type: "text", text: text(800, i) }],
        isError: false,
        timestamp: t,
      };
    default:
      return {
        role: "assistant",
        content: [{ type: "text", text: text(800, i) }],
        provider: "bench",
        model: "m",
        usage: { input: 1000 + i, output: 200, totalTokens: 1200 + i },
        stopReason: "stop",
        timestamp: t,
      };
  }
}

/** Writes a session of `n` entries by hand (the format, without SessionFile), returns its path. */
function writeSession(n: number): string {
  const path = join(dir, `session-${n}.jsonl`);
  writeFileSync(
    path,
    JSON.stringify({ type: "session", version: 1, id: `bench-${n}`, timestamp: new Date(0).toISOString(), cwd: dir }) +
      "\n",
  );
  const id = (i: number) => i.toString(16).padStart(8, "0");
  let lines: string[] = [];
  let parent: string | null = null;
  for (let i = 0; i < n; i++) {
    const timestamp = new Date(1_700_000_000_000 + i).toISOString();
    let entry: SessionEntry;
    if (i % 100 === 99)
      entry = { type: "label", id: id(i), parentId: parent, timestamp, targetId: id(i - 50), label: `mark ${i}` };
    else
      entry = {
        type: "message",
        id: id(i),
        parentId: i % 50 === 49 ? id(i - 7) : parent,
        timestamp,
        message: messageFor(i),
      };
    lines.push(JSON.stringify(entry));
    parent = entry.id;
    if (lines.length === 5_000) {
      appendFileSync(path, lines.join("\n") + "\n");
      lines = [];
    }
  }
  if (lines.length > 0) appendFileSync(path, lines.join("\n") + "\n");
  return path;
}

/**
 * The floor: read the file, JSON.parse every line and keep the values in an array, nothing else
 * (no checks, no index, no freezing). Keeping matters: the open session holds every entry, and
 * retaining them (GC promotion) costs about as much again as parsing them.
 */
async function floor(path: string): Promise<number> {
  const bytes = await readFile(path);
  const values: unknown[] = [];
  for (let start = 0, end = bytes.indexOf(10); end >= 0; start = end + 1, end = bytes.indexOf(10, start)) {
    values.push(JSON.parse(bytes.toString("utf8", start, end)));
  }
  return values.length;
}

async function openAndWalk(path: string): Promise<number> {
  const session = await SessionFile.open(path);
  const messages = messagesOf(session.pathToLeaf(session.leaf!.id));
  await session.close();
  return messages.length;
}

type Gc = () => void;
const gc = (globalThis as { gc?: Gc }).gc;

/** Bytes the open session holds (heap + external), after a full GC on both sides. */
async function retainedBytes(path: string): Promise<number> {
  // Buffers are released after a GC and a turn of the event loop: settle twice.
  const used = async () => {
    for (let i = 0; i < 2; i++) {
      gc?.();
      await new Promise((resolve) => setImmediate(resolve));
    }
    const m = process.memoryUsage();
    return m.heapUsed + m.external;
  };
  const before = await used();
  const session = await SessionFile.open(path);
  const after = await used();
  await session.close();
  return after - before;
}

async function appendRate(durable: boolean, count: number, concurrency: number): Promise<number> {
  const path = join(dir, `append-${durable}-${concurrency}-${Math.random().toString(16).slice(2)}.jsonl`);
  const session = await SessionFile.create(path, { cwd: dir }, { durable });
  const root = await session.append({ type: "message", parentId: null, message: messageFor(0) });
  const started = performance.now();
  for (let i = 0; i < count; i += concurrency) {
    const batch: Promise<string>[] = [];
    for (let k = 0; k < concurrency && i + k < count; k++)
      batch.push(session.append({ type: "message", parentId: root, message: messageFor(i + k) }));
    await Promise.all(batch);
  }
  const seconds = (performance.now() - started) / 1000;
  await session.close();
  rmSync(path);
  return count / seconds;
}

try {
  const paths = new Map(SIZES.map((n) => [n, writeSession(n)]));
  const results = await measure(
    [
      ...SIZES.map((n) => ({ name: `open + walk ${n / 1000}k`, run: () => openAndWalk(paths.get(n)!) })),
      { name: `floor ${SIZES.at(-1)! / 1000}k`, run: () => floor(paths.get(SIZES.at(-1)!)!) },
    ],
    { warmup: WARMUP, runs: RUNS },
  );
  const first = SIZES[0]!;
  const last = SIZES.at(-1)!;
  printTable(
    `SessionFile.open, then pathToLeaf + messagesOf of the leaf (${SIZES.map((n) => `${n / 1000}k`).join(" / ")} entries)`,
    results,
    [
      // Linear: ten times the entries, at most 12.5 times the time (per-entry cost grows ≤ 25%).
      {
        label: `${last / 1000}k / ${first / 1000}k`,
        num: `open + walk ${last / 1000}k`,
        den: `open + walk ${first / 1000}k`,
        bar: "<=",
        value: (last / first) * 1.25,
      },
      // No bar: what checking, indexing and freezing cost over parsing and keeping alone.
      { label: `${last / 1000}k / its floor`, num: `open + walk ${last / 1000}k`, den: `floor ${last / 1000}k` },
    ],
  );
  console.log("\n  per 10k entries:");
  for (const [k, n] of SIZES.entries()) {
    const bytes = await retainedBytes(paths.get(n)!);
    const mb = statSync(paths.get(n)!).size / 1e6;
    console.log(
      `  ${`${n / 1000}k`.padStart(5)}  file ${mb.toFixed(1).padStart(6)} MB  ` +
        `open+walk ${((results[k]!.median / n) * 10_000).toFixed(1).padStart(6)} ms/10k (cpu ${((results[k]!.cpuMedian / n) * 10_000).toFixed(1)})  ` +
        `memory ${(bytes / 1e6).toFixed(1).padStart(6)} MB (${(((bytes / n) * 10_000) / 1e6).toFixed(2)} MB/10k)`,
    );
  }

  console.log(`\nappend 1 KB message entries (appends/s)`);
  const rows: [string, number][] = [
    [`awaited one by one, ${APPENDS}`, await appendRate(false, APPENDS, 1)],
    [`64 at a time, ${APPENDS}`, await appendRate(false, APPENDS, 64)],
    [`durable, one by one, ${DURABLE_APPENDS}`, await appendRate(true, DURABLE_APPENDS, 1)],
    [`durable, 64 at a time, ${DURABLE_APPENDS}`, await appendRate(true, DURABLE_APPENDS, 64)],
  ];
  for (const [label, rate] of rows) console.log(`  ${label.padEnd(34)} ${rate.toFixed(0).padStart(8)}/s`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
