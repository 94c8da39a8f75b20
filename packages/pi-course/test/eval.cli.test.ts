/**
 * `pi-course eval` as a person runs it: real processes (tsx on the entry point, as `npm run eval`
 * runs it, launcher included), one worker process per run, the reports on disk. The shipped
 * offline suite, the exit codes of the failure classes, concurrency without cross-talk, a real
 * SIGINT mid-suite, and a run against a model server on 127.0.0.1.
 */
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { runMain } from "../src/cli/main.js";
import type { SuiteReport } from "../src/eval/suite-report.js";
import { SseServer, fixtureSse, sseReply } from "./support/sse-server.js";
import { bashThenAnswer, writeCase } from "./support/eval-cases.js";
import { builtStart } from "./support/built-cli.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const packageDir = path.resolve(here, "..");
const repoDir = path.resolve(packageDir, "..", "..");
const shippedSuite = path.join(repoDir, "evals", "offline");

let dir: string;
const servers: SseServer[] = [];
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "pi-course-eval-cli-"));
  await mkdir(path.join(dir, "tmp"));
});
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

interface Finished {
  code: number | null;
  stdout: string;
  stderr: string;
}

function environment(): NodeJS.ProcessEnv {
  // TMPDIR of its own: the eval watches the top of its temporary folder, where other test files write
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: dir, INIT_CWD: repoDir, TMPDIR: path.join(dir, "tmp") };
  for (const name of [
    "PI_COURSE_CONFIG",
    "PI_COURSE_BASE_URL",
    "PI_COURSE_MODEL",
    "PI_COURSE_PROVIDER",
    "OPENAI_API_KEY",
  ])
    delete env[name];
  return env;
}

/** `pi-course eval args` as a process; `onStderr` sees stderr as it grows (and the child). */
function evalProcess(
  args: string[],
  onStderr?: (text: string, pid: number) => void,
  env: NodeJS.ProcessEnv = {},
): Promise<Finished> {
  return new Promise((resolve, reject) => {
    // Its own process group, as a job on a terminal: a SIGINT to the group is a Ctrl-C.
    const child = spawn(process.execPath, [builtStart(), "eval", ...args], {
      cwd: repoDir,
      env: { ...environment(), ...env },
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString("utf8")));
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString("utf8");
      onStderr?.(stderr, child.pid!);
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

const report = (out: string): SuiteReport =>
  JSON.parse(readFileSync(path.join(out, "report.json"), "utf8")) as SuiteReport;

it("the shipped offline suite passes, twice per case, and writes both reports", async () => {
  const out = path.join(dir, "shipped");
  const { code, stdout, stderr } = await evalProcess([
    shippedSuite,
    "--repeat",
    "2",
    "--concurrency",
    "3",
    "--out",
    out,
  ]);
  expect(stderr).toContain(`reports: ${out}\n`);
  expect(code, stdout + stderr).toBe(0);
  const r = report(out);
  expect(r.cases.map((c) => [c.name, c.verdict, c.passRate])).toEqual([
    ["add-a-test", "passed", 1],
    ["fix-failing-function", "passed", 1],
    ["flaky-model", "passed", 0.5],
    ["rename-across-files", "passed", 1],
    ["write-outside-is-stopped", "passed", 1],
  ]);
  expect(r.totals).toMatchObject({ runs: 10, passed: 9, failed: 1, protocol: 0, infrastructure: 0, interrupted: 0 });
  expect(r.cases[2]!.runs[1]).toMatchObject({ status: "failed", phase: "check", reason: "the check exited with 1" });
  for (const c of r.cases) for (const run of c.runs) expect(existsSync(run.sessionFile!)).toBe(true);
  expect(stdout).toContain(`report: ${path.join(out, "report.html")}\n`);
  expect(readFileSync(path.join(out, "report.html"), "utf8")).toContain("<h1>Eval report");
  // A line of progress per finished run when stderr is not a terminal.
  expect(stderr.match(/^\[\d+\/10\] /gm)).toHaveLength(10);
}, 120_000);

it("each failure class is reported apart, and a failed case makes the exit code 1", async () => {
  const suite = path.join(dir, "classes");
  await writeCase(suite, "task", { check: "echo wrong; exit 1", script: [{ text: "Done." }] });
  await writeCase(suite, "protocol", { script: bashThenAnswer("echo x > ../escaped.txt") });
  await writeCase(suite, "infrastructure", { script: [{ error: "connect ECONNREFUSED 127.0.0.1:9" }] });
  await writeCase(suite, "ok", { script: [{ text: "Nothing to do." }] });
  const out = path.join(dir, "classes-out");
  const { code, stdout } = await evalProcess([suite, "--concurrency", "4", "--out", out]);
  expect(code).toBe(1);
  const r = report(out);
  expect(r.cases.map((c) => [c.name, c.verdict, c.runs[0]!.status, c.runs[0]!.phase ?? null])).toEqual([
    ["infrastructure", "failed", "infrastructure", "agent"],
    ["ok", "passed", "passed", null],
    ["protocol", "failed", "protocol", "protocol"],
    ["task", "failed", "failed", "check"],
  ]);
  expect(r.cases[3]!.runs[0]!.check!.output).toBe("wrong\n");
  expect(stdout).toContain(
    "1/4 cases passed · runs: 1 passed, 1 failed, 1 protocol, 1 infrastructure, 0 interrupted\n",
  );
}, 60_000);

it("runs at once do not see each other: own workspace, own session, own process", async () => {
  const suite = path.join(dir, "parallel");
  const barrier = await mkdtemp(path.join(tmpdir(), "pi-course-eval-barrier-"));
  const names = ["p1", "p2", "p3", "p4"];
  for (const name of names) {
    // Each writes the same file name, waits until all four are running (a barrier in a folder
    // the test names: with fewer at once it never opens and the time limit fails the case),
    // and reads it back; the check wants its own name.
    const command =
      `echo "${name} $PPID" > mark.txt; echo $PPID > pid.txt; touch "$EVAL_TEST_BARRIER/${name}"; ` +
      `while [ "$(ls "$EVAL_TEST_BARRIER" | wc -l)" -lt 4 ]; do sleep 0.1; done; cat mark.txt`;
    await writeCase(suite, name, {
      check: `[ "$(cat mark.txt)" = "${name} $(cat pid.txt)" ]`,
      caseJson: { timeLimitSeconds: 60 },
      script: bashThenAnswer(command, `I am ${name}.`),
    });
  }
  const out = path.join(dir, "parallel-out");
  const { code, stdout, stderr } = await evalProcess([suite, "--concurrency", "4", "--out", out], undefined, {
    EVAL_TEST_BARRIER: barrier,
  });
  await rm(barrier, { recursive: true, force: true });
  expect(code, stdout + stderr).toBe(0);
  const runs = report(out).cases.map((c) => c.runs[0]!);
  const sessions = new Set(runs.map((r) => r.sessionFile));
  expect(sessions.size).toBe(4);
  for (const [i, run] of runs.entries()) {
    const text = await readFile(run.sessionFile!, "utf8");
    expect(text).toContain(`I am ${names[i]}.`);
    for (const other of names.filter((n) => n !== names[i])) expect(text).not.toContain(`I am ${other}.`);
  }
}, 120_000);

it("Ctrl-C (SIGINT to the process group) stops the suite cleanly and still reports what finished", async () => {
  const suite = path.join(dir, "stopped");
  await writeCase(suite, "a-fast", { script: [{ text: "Quick." }] });
  await writeCase(suite, "b-slow", { script: bashThenAnswer("sleep 47.25") });
  await writeCase(suite, "c-never", { script: [{ text: "Never started." }] });
  const out = path.join(dir, "stopped-out");
  let stoppedAt = 0;
  let watcher: NodeJS.Timeout | undefined;
  const { code, stdout, stderr } = await evalProcess([suite, "--concurrency", "1", "--out", out], (text, pid) => {
    // Once the fast case is reported, wait for the slow case's command to run, then press Ctrl-C.
    if (watcher !== undefined || !/\[1\/3\] PASS a-fast/.test(text)) return;
    watcher = setInterval(() => {
      if (sleeping().length === 0) return;
      clearInterval(watcher);
      stoppedAt = Date.now();
      process.kill(-pid, "SIGINT");
    }, 100);
  });
  clearInterval(watcher);
  expect(stoppedAt, stderr).toBeGreaterThan(0);
  expect(code, stdout + stderr).toBe(130);
  expect(Date.now() - stoppedAt).toBeLessThan(20_000);
  const r = report(out);
  expect(r.interrupted).toBe(true);
  expect(r.cases.map((c) => [c.name, c.verdict, c.runs.map((run) => run.status)])).toEqual([
    ["a-fast", "passed", ["passed"]],
    ["b-slow", "incomplete", ["interrupted"]],
    ["c-never", "incomplete", []],
  ]);
  expect(r.cases[1]!.runs[0]).toMatchObject({
    phase: "agent",
    reason: "stopped by the user (Ctrl-C) before the run finished",
    turns: 1,
  });
  expect(stdout).toContain("stopped by Ctrl-C");
  expect(existsSync(path.join(out, "report.html"))).toBe(true);
  // The slow case's command is gone with it.
  expect(sleeping()).toEqual([]);
}, 120_000);

/** The processes running the slow case's `sleep 47.25`. */
function sleeping(): string[] {
  return readdirSync("/proc").filter(
    (pid) => /^\d+$/.test(pid) && (readFileSyncSafe(`/proc/${pid}/cmdline`) ?? "").includes("sleep\u000047.25"),
  );
}

function readFileSyncSafe(file: string): string | undefined {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
}

/** A Chat Completions stream: a text or one bash call. */
function chat(content: { text?: string; bash?: string }): string {
  const chunk = (delta: object, reason: string | null) =>
    `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "m", choices: [{ index: 0, delta, finish_reason: reason }] })}\n\n`;
  let body = "";
  if (content.text !== undefined) body += chunk({ role: "assistant", content: content.text }, null);
  if (content.bash !== undefined) {
    const call = {
      index: 0,
      id: "call_1",
      type: "function",
      function: { name: "bash", arguments: JSON.stringify({ command: content.bash }) },
    };
    body += chunk({ role: "assistant", tool_calls: [call] }, null);
  }
  return `${body + chunk({}, content.bash ? "tool_calls" : "stop")}data: [DONE]\n\n`;
}

it("--base-url runs the same cases against a model server (the script is not read), and a server that is down is infrastructure", async () => {
  const server = await SseServer.start();
  servers.push(server);
  server.reply(sseReply(chat({ bash: "echo 42 > answer.txt" }))).reply(sseReply(chat({ text: "Wrote 42." })));
  const suite = path.join(dir, "served");
  await writeCase(suite, "answer", {
    task: "Write 42 into answer.txt.",
    check: '[ "$(cat answer.txt)" = 42 ]',
    script: [{ text: "never played" }],
    caseJson: { model: { id: "case-model" } },
  });
  const out = path.join(dir, "served-out");
  const { code, stdout, stderr } = await evalProcess([
    suite,
    "--base-url",
    server.baseUrl,
    "--model",
    "m",
    "--no-api-key",
    "--out",
    out,
  ]);
  expect(code, stdout + stderr).toBe(0);
  expect(stderr).toContain(`model: m at ${server.baseUrl}`);
  expect(report(out).cases[0]!.runs[0]).toMatchObject({ status: "passed", model: "case-model", turns: 2 });
  expect(JSON.parse(server.requests[0]!.body).model).toBe("case-model");
  await server.close();
  servers.splice(0);
  const down = path.join(dir, "down-out");
  const second = await evalProcess([
    suite,
    "--base-url",
    server.baseUrl,
    "--model",
    "m",
    "--no-api-key",
    "--out",
    down,
  ]);
  expect(second.code).toBe(1);
  expect(report(down).cases[0]!.runs[0]).toMatchObject({ status: "infrastructure", phase: "agent" });
  expect(report(down).cases[0]!.runs[0]!.reason).toMatch(/^the model call failed: .*ECONNREFUSED/);
}, 60_000);

it("a model of the catalogue is priced: each run's cost, each case's and the suite's total in both reports; an unknown price stays unknown", async () => {
  const server = await SseServer.start();
  servers.push(server);
  // 14 tokens in, 8 out: at gpt-4o-mini's price, 14 × $0.15 + 8 × $0.60 per million = $0.0000069.
  const priced = () => sseReply(fixtureSse("openai-gpt-4o-text-with-usage.sse"));
  server.reply(priced()).reply(priced());
  const suite = path.join(dir, "priced");
  await writeCase(suite, "a-priced", { caseJson: { model: { id: "gpt-4o-mini" } } });
  await writeCase(suite, "b-unknown", { caseJson: { model: { id: "mystery-model" } } });
  const out = path.join(dir, "priced-out");
  const args = [suite, "--base-url", server.baseUrl, "--model", "m", "--no-api-key", "--concurrency", "1"];
  const { code, stdout, stderr } = await evalProcess([...args, "--out", out]);
  expect(code, stdout + stderr).toBe(0);
  const [a, b] = report(out).cases;
  expect(a!.runs[0]!.model).toBe("gpt-4o-mini");
  expect(a!.runs[0]!.cost).toBeCloseTo(14 * 0.15e-6 + 8 * 0.6e-6, 15);
  expect(b!.runs[0]!.cost).toBeNull();
  expect(stdout).toContain("cost: $0.0000069 + unknown (1 run without a price)\n");
  const html = readFileSync(path.join(out, "report.html"), "utf8");
  expect(html).toContain('<p id="cost">Cost of the suite: $0.0000069 + unknown (1 run without a price)</p>');
  expect(html).toContain('<p class="cost">Cost of the case: $0.0000069</p>');
  // the run's own cost reads as the case's does (it said $0.0000)
  expect(html).toMatch(/tokens · \$0\.0000069 · /);
  expect(html).toContain('<p class="cost">Cost of the case: unknown (1 run without a price)</p>');
}, 60_000);

it("usage errors exit 2 and say what to do", async () => {
  const none = await evalProcess([]);
  expect(none.code).toBe(2);
  expect(none.stderr).toBe(
    "error: name the suite: pi-course eval SUITE (a folder of cases).\nRun `pi-course eval --help` for the options.\n",
  );
  // The same checks in-process (a process start costs seconds on a busy machine).
  const run = async (args: string[]) => {
    let stderr = "";
    const code = await runMain(["eval", ...args], {
      stdout: { write: () => true },
      stderr: { write: (t: string) => (stderr += t) },
      env: environment(),
    });
    return { code, stderr };
  };
  expect(await run([shippedSuite, "--concurrency", "0"])).toEqual({
    code: 2,
    stderr:
      'error: --concurrency needs a whole number from 1 to 64, got "0".\nRun `pi-course eval --help` for the options.\n',
  });
  const offline = await run([shippedSuite, "--model", "m"]);
  expect(offline.code).toBe(2);
  expect(offline.stderr).toContain(
    "--model, --cwd, --api-key-env, --api-key-file, --prompt-file and a task need --base-url",
  );
  expect((await run([path.join(dir, "no-such-suite")])).stderr).toBe(
    `error: the suite ${path.join(dir, "no-such-suite")} is not a folder: a suite is a folder of case folders.\nRun \`pi-course eval --help\` for the options.\n`,
  );
  const used = path.join(dir, "used");
  await writeCase(used, "x", {});
  expect((await run([shippedSuite, "--out", used])).stderr).toContain(
    `error: --out ${used} is not empty; name a new or empty folder`,
  );
}, 60_000);
