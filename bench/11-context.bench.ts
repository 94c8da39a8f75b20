/**
 * Chapter 11 bench: projecting a session path to a token budget, at 10,000, 50,000 and 100,000
 * entries. DESIGN §5: time and memory must grow linearly; reported as ms per 10k entries.
 *
 * Linearity is judged between 50k and 100k, not 10k and 100k. Every step of a projection is one
 * pass (transcript, pairing, estimate, the cut), but its per-call arrays and maps are as long as
 * the path, and V8 stores an array of more than ~16k elements in its large-object space, where
 * each element written costs several times more (measured in isolation on Node 20: pushing 100k
 * references into one array, 21.5 ms; into ten arrays of 10k, 1.7 ms), and a 40k-entry map no
 * longer sits in the caches. So per entry a 10k projection is cheaper than any larger one, while
 * from 50k on the cost per entry is flat (CPU ms per 10k entries, projecting to 128k, on a loaded
 * 2-core machine: 10k 3.3, 20k 4.4, 50k 7.4, 100k 7.6, 200k 7.2). Ten 10k slices of the 100k path
 * projected in turn cost what one cached 10k path does, so it is not the data's own cache misses.
 * "100k / 10k" is still printed, without a bar.
 * (No upstream counterpart is timed: pi builds its context inside its session manager.)
 *
 * The path is made in memory (chapter 10 reads it from disk; opening is its bench): repeated
 * interactions of 5 entries, about 1 KB of text per entry (≈100 MB at 100k entries): a user
 * prompt, an assistant turn with two parallel read calls, their two results (out of order), and
 * an assistant answer carrying usage. Cases, each on both sizes:
 *   - project, 128k budget: the usual case, most of the path dropped;
 *   - project, everything fits: every message kept (the worst case for the estimate);
 *   - compact: transcript, estimate and cut of the whole path, with a fixed summarizer (no model).
 * Memory: heap retained by one projection of the whole path (the kept array and the path's
 * transcript), after a full GC, per entry.
 */
import { compact, projectContext } from "@pi/course";
import type { AgentMessage, AssistantMessage, CompactableSession, CompactionDraft, Model } from "@pi/course";

/** A session entry (chapter 10 exports the name; this bench does not need chapter 10). */
type SessionEntry = ReturnType<CompactableSession["pathToLeaf"]>[number];
import { measure, printTable } from "./harness.js";

const RUNS = Number(process.env.BENCH_RUNS ?? 7);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 2);
const SIZES = [10_000, 50_000, 100_000];

function makePath(entries: number): SessionEntry[] {
  const path: SessionEntry[] = [];
  const pad = (n: number, seed: number) => `${seed}:`.padEnd(n, "abcdefghij".charAt(seed % 10));
  let parentId: string | null = null;
  const push = (message: AgentMessage) => {
    const id = `e${path.length.toString(16)}`;
    path.push({ type: "message", id, parentId, timestamp: "2026-01-01T00:00:00.000Z", message });
    parentId = id;
  };
  for (let n = 0; path.length < entries; n++) {
    const ts = 1_767_225_600_000 + n;
    push({ role: "user", content: [{ type: "text", text: pad(400, n) }], timestamp: ts });
    const calls = [0, 1].map((k) => ({
      type: "toolCall" as const,
      id: `c${n}_${k}`,
      name: "read",
      arguments: { path: `src/file${k}.ts` },
    }));
    const usage = { input: 0, output: 0, totalTokens: 0 };
    const base = { provider: "bench", model: "m", usage, timestamp: ts };
    push({ role: "assistant", content: calls, stopReason: "toolUse", ...base } as AssistantMessage);
    for (const k of [1, 0]) {
      push({
        role: "toolResult",
        toolCallId: `c${n}_${k}`,
        toolName: "read",
        content: [{ type: "text", text: pad(1_800, n + k) }],
        isError: false,
        timestamp: ts,
      });
    }
    const answer = { ...base, usage: { input: 40_000, output: 300, totalTokens: 40_300 } };
    push({
      role: "assistant",
      content: [{ type: "text", text: pad(600, n) }],
      stopReason: "stop",
      ...answer,
    } as AssistantMessage);
  }
  return path.slice(0, entries);
}

/** A session over an array; `append` keeps nothing, so every run compacts the same path. */
function sessionOver(path: SessionEntry[]): CompactableSession {
  return {
    leaf: path.at(-1)!.id,
    pathToLeaf: () => path,
    append: (_entry: CompactionDraft) => "compaction",
  };
}

const unusedModel = {} as Model; // the summarizer below never asks it
const gc = (globalThis as { gc?: () => void }).gc;

const paths = new Map(SIZES.map((n) => [n, makePath(n)]));
let bytes = 0;
for (const path of paths.values()) bytes += JSON.stringify(path).length;
console.log(
  `paths: ${SIZES.map((n) => n.toLocaleString("en")).join(" and ")} entries, ${(bytes / 1e6).toFixed(0)} MB of JSON in all`,
);

const cases = SIZES.flatMap((n) => {
  const path = paths.get(n)!;
  const label = `${n / 1000}k`;
  return [
    {
      name: `project 128k budget, ${label}`,
      run: () => projectContext(path, { budget: 128_000, systemPrompt: "You are a coding agent." }).tokens,
    },
    {
      name: `project everything, ${label}`,
      run: () => projectContext(path, { budget: 1e12, systemPrompt: "You are a coding agent." }).tokens,
    },
    {
      name: `compact, ${label}`,
      run: async () => {
        const outcome = await compact(sessionOver(path), {
          model: unusedModel,
          keepRecentTokens: 20_000,
          summarize: () => "summary",
        });
        if (!outcome.ok) throw new Error(outcome.reason.message);
        return outcome.keptMessages;
      },
    },
  ];
});

const results = await measure(cases, { warmup: WARMUP, runs: RUNS });
const ok = printTable("chapter 11: project and compact a session path", results, [
  {
    label: "project 128k: 100k / 50k (linear = 2)",
    num: "project 128k budget, 100k",
    den: "project 128k budget, 50k",
    bar: "<=",
    value: 2.6,
  },
  {
    label: "project all: 100k / 50k (linear = 2)",
    num: "project everything, 100k",
    den: "project everything, 50k",
    bar: "<=",
    value: 2.6,
  },
  { label: "compact: 100k / 50k (linear = 2)", num: "compact, 100k", den: "compact, 50k", bar: "<=", value: 2.6 },
  // Without a bar: the 10k path's arrays stay under V8's large-object threshold (see the top).
  { label: "project 128k: 100k / 10k (no bar)", num: "project 128k budget, 100k", den: "project 128k budget, 10k" },
  { label: "project all: 100k / 10k (no bar)", num: "project everything, 100k", den: "project everything, 10k" },
  { label: "compact: 100k / 10k (no bar)", num: "compact, 100k", den: "compact, 10k" },
]);

console.log("\nms per 10k entries (median wall):");
for (const r of results) {
  const n = Number(r.name.slice(r.name.lastIndexOf(" ") + 1, -1)) * 1000;
  console.log(`  ${r.name.padEnd(30)} ${((r.median / n) * 10_000).toFixed(2)}`);
}

console.log("\nheap retained by one projection of the whole path (after a full GC):");
for (const n of SIZES) {
  const path = paths.get(n)!;
  gc?.();
  const before = process.memoryUsage().heapUsed;
  const kept = projectContext(path, { budget: 1e12 });
  gc?.();
  const after = process.memoryUsage().heapUsed;
  const perEntry = (after - before) / n;
  console.log(
    `  ${n.toLocaleString("en")} entries: ${((after - before) / 1e6).toFixed(2)} MB, ${perEntry.toFixed(1)} bytes per entry (${kept.context.messages.length} messages kept)`,
  );
}
if (!gc) console.log("  (run node with --expose-gc for exact numbers)");
if (!ok) process.exitCode = 1;
