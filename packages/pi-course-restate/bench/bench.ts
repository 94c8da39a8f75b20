/**
 * What durability on Restate costs, and how runs spread over workers (`npm run bench -w
 * @pi/course-restate`; `BENCH_RUNS` runs per worker count, default 200).
 *
 * 1. One run of 200 tool calls (201 model turns), the same script four ways: in memory; with
 *    chapter 19's local journal (a session file, the run journal's intent and outcome lines), without
 *    and with fsync; on Restate with one worker (601 steps: a turn, then a call's intent and result).
 * 2. 200 runs of 4 tool calls each (13 steps) submitted at once, on 1, 2 and 4 worker processes.
 * 3. An eval suite of 200 runs (@pi/course's offline suite, 5 cases × 40 repeats; each run is a
 *    workspace, the CLI's runtime, the case's check) on 1, 2 and 4 workers taking 2 cases at once.
 */
import { readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Agent, RunJournal, SessionFile } from "@pi/course";
import { engineVersions } from "../src/engine-client.js";
import { startEngine } from "../src/engine.js";
import { evalOnEngine } from "../src/eval-suite.js";
import { freePort } from "../src/restate-server.js";
import { runDurably } from "../src/submit.js";
import { spawnWorker, type WorkerProcess } from "../src/worker-process.js";
import { ticksModel, ticksTools } from "./setups.js";

const SETUPS = path.join(path.dirname(fileURLToPath(import.meta.url)), "setups.ts");
const CALLS = 200;
const RUNS = Number(process.env.BENCH_RUNS ?? 200);
const HERE = path.dirname(fileURLToPath(import.meta.url));
const SUITE = path.resolve(HERE, "..", "..", "pi-course", "evals", "offline");
/** Repeats of each of the suite's 5 cases (default 40: 200 runs). */
const EVAL_REPEAT = Number(process.env.BENCH_EVAL_REPEAT ?? 40);

const ms = (start: bigint) => Number(process.hrtime.bigint() - start) / 1e6;

/** CPU time (user + system, its waited-for children included) a process has used so far, in ms (Linux: /proc/PID/stat, 100 ticks a second). */
function cpuMs(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    return (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) * 10;
  } catch {
    return 0;
  }
}

async function local(dir: string, journal: "none" | "file" | "fsync"): Promise<number> {
  const start = process.hrtime.bigint();
  if (journal === "none") {
    const agent = new Agent({ initialState: { model: ticksModel(CALLS), tools: ticksTools() }, maxTurns: CALLS + 1 });
    await agent.prompt("go");
    return ms(start);
  }
  const session = await SessionFile.create(
    path.join(dir, `${journal}-${Date.now()}.jsonl`),
    { cwd: dir },
    {
      durable: journal === "fsync",
    },
  );
  const runJournal = new RunJournal({ store: () => session });
  const agent = new Agent({
    initialState: { model: ticksModel(CALLS), tools: runJournal.tools(ticksTools()) },
    maxTurns: CALLS + 1,
    session,
  });
  agent.subscribe(runJournal.listener);
  await agent.prompt("go");
  await session.close();
  return ms(start);
}

async function main(): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), "pi-restate-bench-"));
  const engine = await startEngine({ dir: path.join(dir, "restate"), workers: [], log: () => undefined });
  let workers: WorkerProcess[] = [];
  const stopWorkers = async () => {
    for (const worker of workers) {
      const exited = new Promise((resolve) => worker.child.once("exit", resolve));
      worker.child.kill("SIGKILL");
      await exited;
    }
    workers = [];
  };
  const useWorkers = async (count: number) => {
    await stopWorkers();
    const ports = await Promise.all(Array.from({ length: count }, () => freePort()));
    // a TMPDIR each, as on machines of their own (an eval case watches its temporary folder)
    for (const port of ports) await mkdir(path.join(dir, `tmp-${port}`));
    workers = await Promise.all(
      ports.map((port) =>
        spawnWorker({
          setups: SETUPS,
          port,
          cases: 2,
          tmpdir: path.join(dir, `tmp-${port}`),
          ...engine.workerCredential,
          suites: [SUITE],
        }),
      ),
    );
    engine.setWorkers(workers.map((w) => w.url));
    while (!(await engineVersions(engine)).some((v) => v.state === "serving"))
      await new Promise((resolve) => setTimeout(resolve, 50));
  };
  try {
    await useWorkers(1);
    // warm-up: the worker's first run loads the code
    await runDurably(engine, "warm", { setup: "ticks", prompt: "go", options: { calls: 5 } });
    await local(dir, "none");

    const rows: [string, number][] = [];
    for (let round = 0; round < 3; round++) {
      rows.push(["in memory", await local(dir, "none")]);
      rows.push(["chapter 19 journal", await local(dir, "file")]);
      rows.push(["chapter 19 journal, fsync", await local(dir, "fsync")]);
      const start = process.hrtime.bigint();
      const out = await runDurably(engine, `long-${round}`, {
        setup: "ticks",
        prompt: "go",
        options: { calls: CALLS },
      });
      if (out.messages.length !== 2 * CALLS + 2) throw new Error(`the long run has ${out.messages.length} messages`);
      rows.push(["Restate, 1 worker", ms(start)]);
    }
    const best = new Map<string, number>();
    for (const [name, time] of rows) best.set(name, Math.min(best.get(name) ?? Infinity, time));
    const base = best.get("in memory")!;
    console.log(`one run of ${CALLS} tool calls (best of 3)`);
    for (const [name, time] of best) {
      const extra = (time - base) / CALLS;
      console.log(`  ${name.padEnd(28)} ${time.toFixed(0).padStart(6)} ms   +${extra.toFixed(2)} ms per tool call`);
    }
    const restate = (best.get("Restate, 1 worker")! - base) / (3 * CALLS + 1);
    console.log(`  Restate: ${restate.toFixed(2)} ms per step (${3 * CALLS + 1} steps)`);

    console.log(`${RUNS} runs of 4 tool calls, submitted at once`);
    for (const count of [1, 2, 4]) {
      await useWorkers(count);
      await runDurably(engine, `warm-${count}`, { setup: "ticks", prompt: "go", options: { calls: 1 } });
      const pids = [engine.server().process.pid!, ...workers.map((w) => w.pid)];
      const cpuBefore = pids.map(cpuMs);
      const selfBefore = process.cpuUsage();
      const start = process.hrtime.bigint();
      const outs = await Promise.all(
        Array.from({ length: RUNS }, (_, i) =>
          runDurably(engine, `suite-${count}-${i}`, { setup: "ticks", prompt: "go", options: { calls: 4 } }),
        ),
      );
      const time = ms(start);
      const cpu = pids.map((pid, i) => cpuMs(pid) - cpuBefore[i]!);
      const self = process.cpuUsage(selfBefore);
      const client = (self.user + self.system) / 1000;
      const workerCpu = cpu.slice(1).reduce((a, b) => a + b, 0);
      if (outs.some((o) => o.messages.length !== 10)) throw new Error("a suite run did not finish its script");
      console.log(
        `  ${count} worker${count === 1 ? " " : "s"}  ${time.toFixed(0).padStart(6)} ms   ${(RUNS / (time / 1000)).toFixed(1)} runs/s` +
          `   CPU ms: server ${cpu[0]}, workers ${workerCpu}, client+proxy ${client.toFixed(0)}`,
      );
    }

    console.log(`eval suite: ${5 * EVAL_REPEAT} runs (5 offline cases × ${EVAL_REPEAT}), 2 cases at once per worker`);
    for (const count of [1, 2, 4]) {
      await useWorkers(count);
      const pids = [engine.server().process.pid!, ...workers.map((w) => w.pid)];
      const cpuBefore = pids.map(cpuMs);
      const start = process.hrtime.bigint();
      const result = await evalOnEngine({
        suite: SUITE,
        engine,
        repeat: EVAL_REPEAT,
        out: path.join(dir, `eval-${count}`),
      });
      const time = ms(start);
      const cpu = pids.map((pid, i) => cpuMs(pid) - cpuBefore[i]!);
      const runs = result.report.cases.reduce((n, c) => n + c.runs.length, 0);
      const passed = result.report.cases.reduce((n, c) => n + c.counts.passed, 0);
      console.log(
        `  ${count} worker${count === 1 ? " " : "s"}  ${(time / 1000).toFixed(1).padStart(6)} s   ${(runs / (time / 1000)).toFixed(1)} runs/s` +
          `   (${runs} runs, ${passed} passed)   CPU ms: server ${cpu[0]}, workers ${cpu.slice(1).reduce((a, b) => a + b, 0)}`,
      );
    }
  } finally {
    await stopWorkers();
    await engine.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
