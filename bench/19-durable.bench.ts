/**
 * Chapter 19 bench: what the run journal costs. One agent run with a session, without and with
 * the journal (`RunJournal`: every tool call's intent and outcome appended to the session, every
 * streamed delta kept in `<session>.stream` before anyone sees it), on two workloads:
 *
 * - **2,000 streamed deltas**: one answer of 8,000 characters in pieces of 4 (the scripted model);
 * - **200 tool calls**: 200 turns, each calling a no-op tool, then an answer (bench/scripted.ts).
 *
 * Cases, side by side in one process: "plain" (the `Agent` records into its session, nothing
 * else), "journaled" (this build's `fileStreamJournal`: append-only, one line per delta), and
 * "journaled, rename per delta" (the stream journal chapter 19 first shipped: each delta writes a
 * whole copy to a temporary file and renames it over the journal; kept here as the reference the
 * append-only file replaced). Ratios print the journal's overhead over the plain run.
 *
 * No upstream comparison: pi has no run journal. The session writes without fsync on every case
 * (the default); the figures are the code's and the file system's page cache, not the disk's.
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { readFile, rename, unlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  Agent,
  RunJournal,
  ScriptedModel,
  SessionFile,
  assistantMessage,
  fileStreamJournal,
  streamPathOf,
} from "@pi/course";
import type { Model, StreamJournal, StreamedTurn } from "@pi/course";
import { measure, printTable } from "./harness.js";
import { oursNoopTool, oursScriptedModel } from "./scripted.js";

const RUNS = Number(process.env.BENCH_RUNS ?? 7);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 2);
const DELTAS = 2_000;
const TOOL_CALLS = 200;

const dir = mkdtempSync(join(tmpdir(), "pi-bench-19-"));

/** The stream journal as chapter 19 first shipped it: a whole copy per delta, written aside and renamed. */
function renameStreamJournal(path: string): StreamJournal {
  return {
    async save(turn) {
      const temporary = `${path}.${randomUUID().slice(0, 8)}.tmp`;
      await writeFile(temporary, JSON.stringify(turn), { mode: 0o600 });
      await rename(temporary, path);
    },
    async load() {
      try {
        return JSON.parse(await readFile(path, "utf8")) as StreamedTurn;
      } catch {
        return undefined;
      }
    },
    async clear() {
      await unlink(path).catch(() => {});
    },
  };
}

type Journal = "none" | "append" | "rename";

/** One run of `model` on a new session file; resolves with the messages and the deltas seen. */
async function oneRun(journalKind: Journal, model: Model, tools: (typeof oursNoopTool)[]): Promise<number> {
  const file = join(dir, `${randomUUID()}.jsonl`);
  const session = await SessionFile.create(file, { cwd: dir });
  let agent: Agent;
  if (journalKind === "none") {
    agent = new Agent({ session, initialState: { model, tools } });
  } else {
    const stream = journalKind === "append" ? fileStreamJournal : renameStreamJournal;
    const journal = new RunJournal({ store: () => session, stream: () => stream(streamPathOf(file)) });
    agent = new Agent({ session, initialState: { model, tools: journal.tools(tools) } });
    agent.subscribe(journal.listener);
  }
  let updates = 0;
  agent.subscribe((event) => {
    if (event.type === "message_update") updates++;
  });
  await agent.prompt("go");
  await session.close();
  const entries = session.entries().length;
  rmSync(file, { force: true });
  return entries * 1_000_000 + updates;
}

const TEXT = "abcd".repeat(DELTAS);
const streamed = (kind: Journal) =>
  oneRun(kind, new ScriptedModel([assistantMessage([{ type: "text", text: TEXT }], "stop")], { chunkSize: 4 }), []);
const toolCalls = (kind: Journal) => oneRun(kind, oursScriptedModel(TOOL_CALLS), [oursNoopTool]);

/** Every case did the whole work: the same number of messages and deltas as the plain run. */
function check(title: string, results: { name: string; last: unknown }[]): void {
  const plain = results[0]!.last as number;
  for (const r of results) {
    const value = r.last as number;
    // the journaled runs also hold the tool_intent and tool_outcome entries: compare the deltas
    if (value % 1_000_000 !== plain % 1_000_000) throw new Error(`${title}, ${r.name}: ${value} vs plain ${plain}`);
  }
}

try {
  const cases = (workload: (kind: Journal) => Promise<number>) => [
    { name: "plain", run: () => workload("none") },
    { name: "journaled", run: () => workload("append") },
    { name: "journaled, rename per delta", run: () => workload("rename") },
  ];
  const ratios = [
    { label: "journaled / plain", num: "journaled", den: "plain" },
    { label: "rename per delta / plain", num: "journaled, rename per delta", den: "plain" },
    { label: "rename per delta / journaled", num: "journaled, rename per delta", den: "journaled" },
  ];
  const stream = await measure(cases(streamed), { warmup: WARMUP, runs: RUNS, gc: "minor" });
  check("deltas", stream);
  console.log(`deltas seen per run: ${(stream[0]!.last as number) % 1_000_000}`);
  printTable(`one run of ${DELTAS.toLocaleString("en")} streamed deltas, with a session`, stream, ratios);
  const tools = await measure(cases(toolCalls), { warmup: WARMUP, runs: RUNS, gc: "minor" });
  check("tool calls", tools);
  printTable(`one run of ${TOOL_CALLS} tool calls (one per turn), with a session`, tools, ratios);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
