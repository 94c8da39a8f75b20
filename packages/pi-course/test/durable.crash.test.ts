/**
 * Chapter 19's proof under real crashes: a real CLI run (`--print`, against a local model server
 * that answers by the transcript) is killed with SIGKILL at a random moment, then resumed with
 * `--continue`. For every kill: the session opens; every tool call on its path ends with exactly
 * one result; no effect (a `bash` call appending its id to effects.log, not safe to replay) ran
 * twice; and the resumed run finishes with the final answer.
 *
 * `PI_DURABLE_KILLS` sets the number of kills (default 2; `PI_DURABLE_LANES` at a time, default two: npm test stays fast; each kill costs two CLI start-ups);
 * the issue's proof is `PI_DURABLE_KILLS=200`. Each kill is classified by what it left (mid-stream,
 * between intent and effect or mid-tool, between the outcome and the result, between messages),
 * and the counts are printed.
 */
import type { ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { appendFileSync, readdirSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { folderKey } from "../src/cli/sessions.js";
import { SessionFile } from "../src/session/session.js";
import { transcriptOf } from "../src/session/context.js";
import { uncertainText } from "../src/durable/recovery.js";
import { streamPathOf } from "../src/durable/store.js";
import type { AgentMessage } from "../src/types.js";
import { DurableServer, FINAL } from "./support/durable-server.js";
import { builtStart } from "./support/built-cli.js";
import { startProcess } from "./support/processes.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const packageDir = path.resolve(here, "..");
const KILLS = Number(process.env.PI_DURABLE_KILLS ?? 2);
const LANES = Number(process.env.PI_DURABLE_LANES ?? 2);
/** About how long the killed run takes on a quiet machine; kills are spread over it. */
const RUN_MS = Number(process.env.PI_DURABLE_RUN_MS ?? 2500);

function safely(check: () => boolean): boolean {
  try {
    return check();
  } catch {
    return false;
  }
}

let server: DurableServer;
let root: string;
const children: ChildProcess[] = [];
beforeAll(async () => {
  server = await DurableServer.start();
  root = await mkdtemp(path.join(tmpdir(), "pi-durable-crash-"));
});
afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  await server.close();
  await rm(root, { recursive: true, force: true });
});

function run(args: string[], env: NodeJS.ProcessEnv) {
  return startProcess(builtStart(), args, { cwd: packageDir, started: children, env });
}

/** The agent process of the launch tagged `lane` (the launcher starts it apart: found in /proc). */
function agentPid(lane: string): number | undefined {
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const environ = readFileSync(`/proc/${name}/environ`, "latin1").split("\0");
      if (!environ.includes(`PI_DURABLE_LANE=${lane}`)) continue;
      if (!environ.some((v) => v.startsWith("PI_COURSE_AGENT_SOCKET="))) continue;
      if (readFileSync(`/proc/${name}/cmdline`, "latin1").split("\0")[1] === "-c") continue; // the middle (sh -c)
      return Number(name);
    } catch {
      // gone, or not ours
    }
  }
  return undefined;
}

/** Kills the processes of `lane` still alive (an orphaned `bash` of the killed agent). */
function killLane(lane: string): void {
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/environ`, "latin1").split("\0").includes(`PI_DURABLE_LANE=${lane}`))
        process.kill(Number(name), "SIGKILL");
    } catch {
      // gone
    }
  }
}

/** What a kill left, from the session file and its stream journal. */
function classify(entries: ReturnType<SessionFile["entries"]>, streamLeft: boolean): string {
  if (entries.length === 0) return "before the first entry";
  const last = entries[entries.length - 1]!;
  if (streamLeft) return "mid-stream";
  if (last.type === "tool_intent") return "between intent and effect, or mid-tool";
  if (last.type === "tool_outcome") return "between a tool's outcome and its result";
  if (last.type === "message" && last.message.role === "assistant" && last.message.stopReason === "stop")
    return "after the run";
  return "between two appends";
}

async function oneKill(index: number, stats: Map<string, number>): Promise<void> {
  const dir = path.join(root, `k${index}`);
  const workspace = path.join(dir, "work");
  const sessions = path.join(dir, "sessions");
  await mkdir(workspace, { recursive: true });
  const lane = randomUUID();
  const env = { HOME: dir, NO_COLOR: "1", PI_DURABLE_LANE: lane };
  const args = ["--base-url", server.baseUrl, "--model", "replay", "--no-api-key", "--cwd", workspace];
  args.push("--session-dir", sessions);
  const first = run([...args, "--print", "do both steps"], env);
  const sessionDir = path.join(sessions, folderKey(workspace));
  let pid: number | undefined;
  const deadline = Date.now() + 60_000;
  // wait for the agent and its session file (the run starts then), however slow the machine
  const ready = () => readdirSync(sessionDir, { withFileTypes: true }).some((f) => f.name.endsWith(".jsonl"));
  while (
    ((pid = agentPid(lane)) === undefined || !safely(ready)) &&
    first.child.exitCode === null &&
    Date.now() < deadline
  )
    await new Promise((resolve) => setTimeout(resolve, 10));
  // a random moment of the run: the model's streams, the tools, the appends between them
  await new Promise((resolve) => setTimeout(resolve, Math.random() * RUN_MS));
  if (pid !== undefined) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // it had finished
    }
  }
  await first.exit;
  killLane(lane);

  const files = (await readdir(sessionDir).catch(() => [] as string[])).filter((f) => f.endsWith(".jsonl"));
  let kind = "before the session file";
  if (files.length === 1) {
    const file = path.join(sessionDir, files[0]!);
    const seen = await SessionFile.open(file, { readOnly: true });
    const streamLeft = await readFile(streamPathOf(file)).then(
      () => true,
      () => false,
    );
    kind = classify(seen.entries(), streamLeft);
  }
  stats.set(kind, (stats.get(kind) ?? 0) + 1);
  // a long proof (PI_DURABLE_KILLS=200) can be watched: one line per kill
  if (process.env.PI_DURABLE_LOG) appendFileSync(process.env.PI_DURABLE_LOG, `kill ${index}: ${kind}\n`);

  const second = run([...args, "--continue", "--print", "anything else?"], env);
  const { code } = await second.exit;
  const out = second.output();
  expect(code, `kill ${index} (${kind}): ${JSON.stringify(out)}`).toBe(0);
  expect(out.stdout, `kill ${index} (${kind})`).toBe(`${FINAL}\n`);

  // every session opens; on its path every tool call has exactly one result. The session is the
  // one the resumed run names (a kill before the first entry leaves an empty file that --continue
  // passes over for a new one)
  const used = /session: {3}\S+ \((.+\.jsonl)\)/.exec(out.stderr)?.[1];
  expect(used, out.stderr).toBeDefined();
  const session = await SessionFile.open(used!, { readOnly: true });
  const messages = transcriptOf(session.pathToLeaf(session.leaf!.id)).messages as AgentMessage[];
  const calls = new Map<string, number>();
  for (const m of messages) {
    if (!("role" in m)) continue;
    if (m.role === "assistant" && m.stopReason !== "aborted" && m.stopReason !== "error")
      for (const b of m.content) if (b.type === "toolCall") calls.set(b.id, calls.get(b.id) ?? 0);
    if (m.role === "toolResult") {
      expect(calls.has(m.toolCallId), `kill ${index}: a result for ${m.toolCallId} answers no call`).toBe(true);
      calls.set(m.toolCallId, calls.get(m.toolCallId)! + 1);
    }
  }
  for (const [id, results] of calls)
    expect({ kill: index, kind, id, results }).toEqual({ kill: index, kind, id, results: 1 });
  // no effect ran twice
  const effects = (await readFile(path.join(workspace, "effects.log"), "utf8").catch(() => ""))
    .split("\n")
    .filter((line) => line !== "");
  expect({ kill: index, kind, effects }).toEqual({ kill: index, kind, effects: [...new Set(effects)] });
  // the resumed run finished: the last message is the final answer
  const last = messages[messages.length - 1] as AgentMessage & { role: string };
  expect(last).toMatchObject({ role: "assistant", stopReason: "stop" });
  await rm(dir, { recursive: true, force: true });
}

describe("durable runs under real crashes", () => {
  it(
    `SIGKILL of a real CLI run at ${KILLS} random points, then --continue: every session opens, every call has one result, no effect twice, the run finishes`,
    async () => {
      const stats = new Map<string, number>();
      let next = 0;
      await Promise.all(
        Array.from({ length: LANES }, async () => {
          while (next < KILLS) await oneKill(next++, stats);
        }),
      );
      const lines = [...stats].map(([kind, n]) => `${n} ${kind}`);
      process.stdout.write(`durable crash test: ${KILLS} kills: ${lines.join(", ")}\n`);
      expect([...stats.values()].reduce((a, b) => a + b, 0)).toBe(KILLS);
    },
    60_000 + KILLS * 20_000,
  );

  it("--no-recover declines: a run killed while bash ran is recorded as it stands (uncertain result), nothing runs again, and it is not continued", async () => {
    const slow = await DurableServer.start({ sleepSeconds: 60 });
    try {
      const dir = path.join(root, "no-recover");
      const workspace = path.join(dir, "work");
      const sessions = path.join(dir, "sessions");
      await mkdir(workspace, { recursive: true });
      const lane = randomUUID();
      const env = { HOME: dir, NO_COLOR: "1", PI_DURABLE_LANE: lane };
      const args = ["--base-url", slow.baseUrl, "--model", "replay", "--no-api-key", "--cwd", workspace];
      args.push("--session-dir", sessions);
      const first = run([...args, "--print", "do both steps"], env);
      const effects = path.join(workspace, "effects.log");
      const deadline = Date.now() + 120_000;
      // the bash call has started (its effect is written first, then it sleeps a minute)
      while (!safely(() => readFileSync(effects, "utf8") === "call_0_0\n") && Date.now() < deadline)
        await new Promise((resolve) => setTimeout(resolve, 20));
      const pid = agentPid(lane);
      expect(pid).toBeGreaterThan(0);
      process.kill(pid!, "SIGKILL");
      await first.exit;
      killLane(lane);
      const before = slow.requests;
      const second = run([...args, "--continue", "--no-recover", "--print", "anything else?"], env);
      const { code } = await second.exit;
      const out = second.output();
      expect(code, JSON.stringify(out)).toBe(0);
      expect(out.stdout).toBe(`${FINAL}\n`);
      expect(out.stderr).toContain(
        "note: the session's last run was killed mid-way: bash (call_0_0): interrupted, may or may not have taken effect; not continued (--no-recover)",
      );
      expect(slow.requests - before).toBe(1); // only the new prompt: the killed run was not continued
      expect(readFileSync(effects, "utf8")).toBe("call_0_0\n");
      const sessionDir = path.join(sessions, folderKey(workspace));
      const [name] = (await readdir(sessionDir)).filter((f) => f.endsWith(".jsonl"));
      const session = await SessionFile.open(path.join(sessionDir, name!), { readOnly: true });
      const messages = transcriptOf(session.pathToLeaf(session.leaf!.id)).messages as (AgentMessage & {
        role: string;
      })[];
      expect(messages.map((m) => m.role)).toEqual(["user", "assistant", "toolResult", "user", "assistant"]);
      expect(messages[2]).toMatchObject({
        toolCallId: "call_0_0",
        isError: true,
        content: [{ type: "text", text: uncertainText("bash", "Its command is no longer running.") }],
      });
    } finally {
      await slow.close();
    }
  }, 600_000);
});
