/**
 * Chapter 14: the eval harness. A case folder read and checked (14.1), the protocol checks
 * (14.2), one run judged end to end through the CLI's runtime, one test per failure class
 * (14.3), and the suite report with its pass rates and exit code (14.4). In-process and fast;
 * the command with its worker processes, Ctrl-C and the browser are in eval.cli.test.ts and
 * eval.browser.test.ts.
 */
import { existsSync } from "node:fs";
import { chmod, mkdir, mkdtemp, readFile, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { caseModel, runtimeWire } from "../src/cli/eval-wiring.js";
import {
  CaseFormatError,
  DEFAULT_CASE_SETTINGS,
  loadCase,
  loadSuite,
  parseCaseSettings,
} from "../src/eval/case-format.js";
import { checkSessionReplay, checkToolPairing, diffSnapshots, snapshotFolders } from "../src/eval/protocol.js";
import { classifyRun, runCase } from "../src/eval/run-case.js";
import type { CheckOutcome } from "../src/eval/run-check.js";
import type { RunRecord } from "../src/eval/run-record.js";
import { buildSuiteReport, suiteExitCode, type SuiteMeta } from "../src/eval/suite-report.js";
import { assistantMessage, toolResultMessage, userMessage } from "../src/messages.js";
import { SessionFile } from "../src/session/session.js";
import type { AgentMessage } from "../src/types.js";
import { bashThenAnswer, runRecord, writeCase, type CaseSpec } from "./support/eval-cases.js";

let dir: string;

beforeEach(async () => {
  // The real path: on macOS the temporary folder is a symlink (/var -> /private/var).
  dir = await realpath(await mkdtemp(path.join(tmpdir(), "pi-course-14-")));
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const call = (id: string, name = "read") => ({ type: "toolCall" as const, id, name, arguments: {} });
const asked = (...ids: string[]) =>
  assistantMessage(
    ids.map((id) => call(id)),
    "toolUse",
  );
const answered = (id: string) => toolResultMessage({ toolCallId: id, toolName: "read", content: "ok" });

// ─── Lab 14.1 · the case format ──────────────────────────────────────────────────────────────

it("Lab 14.1 · case.json: defaults for what it leaves out, its values for what it gives", () => {
  expect(parseCaseSettings("{}", "case.json")).toEqual(DEFAULT_CASE_SETTINGS);
  expect(
    parseCaseSettings(
      '{"timeLimitSeconds": 5, "maxTurns": 3, "checkTimeLimitSeconds": 2.5, "minPassRate": 0.5, "model": {"id": "m"}, "tags": ["a"]}',
      "x",
    ),
  ).toEqual({
    timeLimitSeconds: 5,
    maxTurns: 3,
    checkTimeLimitSeconds: 2.5,
    minPassRate: 0.5,
    model: { id: "m" },
    tags: ["a"],
  });
});

it("Lab 14.1 · case.json: anything else is refused with the file's name and what to write", () => {
  const refused = (text: string) => {
    try {
      parseCaseSettings(text, "/s/c/case.json");
    } catch (error) {
      if (!(error instanceof CaseFormatError)) throw error;
      return error.message;
    }
    throw new Error(`accepted: ${text}`);
  };
  expect(refused("{")).toMatch(/^\/s\/c\/case\.json is not JSON \(/);
  expect(refused("[]")).toBe(
    '/s/c/case.json must be one JSON object, e.g. {"timeLimitSeconds": 60}, got an array of 0 items.',
  );
  expect(refused('{"timeout": 5}')).toBe(
    '/s/c/case.json has an unknown key "timeout"; the keys are timeLimitSeconds, maxTurns, checkTimeLimitSeconds, minPassRate, model, tags.',
  );
  expect(refused('{"timeLimitSeconds": 0}')).toBe("/s/c/case.json: timeLimitSeconds must be a number above 0, got 0.");
  expect(refused('{"maxTurns": 2.5}')).toBe("/s/c/case.json: maxTurns must be a whole number above 0, got 2.5.");
  expect(refused('{"minPassRate": 0}')).toBe("/s/c/case.json: minPassRate must be a number in (0, 1], got 0.");
  expect(refused('{"model": "gpt"}')).toBe(
    '/s/c/case.json: model must be an object like {"id": "model-name"} (only "id" is read), got a string of 3 characters.',
  );
  expect(refused('{"tags": [""]}')).toBe(
    "/s/c/case.json: tags must be a list of non-empty strings, got an array of 1 item.",
  );
});

it("Lab 14.1 · a case folder is read whole; a suite is its case folders by name", async () => {
  const suite = path.join(dir, "suite");
  await writeCase(suite, "b-case", {
    task: "  Fix it.\n",
    files: { "a.txt": "a" },
    caseJson: { maxTurns: 4, tags: ["t"] },
    script: [{ text: "hi" }],
  });
  await writeCase(suite, "a-case", {});
  await writeCase(suite, "_draft", {});
  await mkdir(path.join(suite, "not-a-case"));
  const cases = await loadSuite(suite);
  expect(cases.map((c) => c.name)).toEqual(["a-case", "b-case"]);
  const b = cases[1]!;
  expect(b).toEqual({
    name: "b-case",
    dir: path.join(suite, "b-case"),
    task: "Fix it.",
    filesDir: path.join(suite, "b-case", "files"),
    check: path.join(suite, "b-case", "check"),
    settings: { ...DEFAULT_CASE_SETTINGS, maxTurns: 4, tags: ["t"] },
    script: path.join(suite, "b-case", "script.json"),
  });
  expect(cases[0]!.script).toBeUndefined();
  // A case folder given as the suite is a suite of one.
  expect((await loadSuite(path.join(suite, "a-case"))).map((c) => c.name)).toEqual(["a-case"]);
});

it("Lab 14.1 · a broken case says what is missing and how to fix it", async () => {
  const c = await writeCase(dir, "c", { caseJson: { tags: [] } });
  expect(await loadCase(c)).toMatchObject({ name: "c", settings: DEFAULT_CASE_SETTINGS });
  await writeFile(path.join(c, "case.json"), "{}}");
  await expect(loadCase(c)).rejects.toThrow(`${path.join(c, "case.json")} is not JSON (`);
  await chmod(path.join(c, "check"), 0o644);
  await expect(loadCase(c)).rejects.toThrow(`case c: ${path.join(c, "check")} is not executable; run chmod +x on it.`);
  await rm(path.join(c, "check"));
  await expect(loadCase(c)).rejects.toThrow(
    `case c: ${path.join(c, "check")} is missing; it is the executable that judges the run (exit 0 passes).`,
  );
  await rm(path.join(c, "files"), { recursive: true });
  await expect(loadCase(c)).rejects.toThrow(
    `case c: ${path.join(c, "files")} is missing; it is the starting workspace (an empty folder is fine).`,
  );
  await writeFile(path.join(c, "task.md"), " \n");
  await expect(loadCase(c)).rejects.toThrow(`case c: ${path.join(c, "task.md")} is empty; write the prompt there.`);
  await expect(loadSuite(path.join(dir, "nothing"))).rejects.toThrow(
    `the suite ${path.join(dir, "nothing")} is not a folder`,
  );
  await mkdir(path.join(dir, "empty"));
  await expect(loadSuite(path.join(dir, "empty"))).rejects.toThrow(
    `the suite ${path.join(dir, "empty")} holds no case`,
  );
});

// ─── Lab 14.2 · the protocol checks ──────────────────────────────────────────────────────────

it("Lab 14.2 · checkToolPairing: exactly one result per call, after it", () => {
  const good: AgentMessage[] = [
    userMessage("go"),
    asked("a", "b"),
    answered("a"),
    answered("b"),
    assistantMessage([{ type: "text", text: "done" }], "stop"),
  ];
  expect(checkToolPairing(good)).toEqual([]);
  expect(checkToolPairing([userMessage("go"), asked("a", "b"), answered("b")])).toEqual([
    "tool call a (read) has no result.",
  ]);
  expect(checkToolPairing([asked("a"), answered("a"), answered("a")])).toEqual([
    "tool call a (read) has 2 results; it must have exactly one.",
  ]);
  expect(checkToolPairing([answered("z"), asked("z"), answered("z")])).toEqual([
    "the result for z (read) answers no earlier tool call.",
  ]);
  expect(checkToolPairing([asked("a"), answered("a"), asked("a"), answered("a")])).toEqual([
    "tool call id a (read) is used twice.",
    "tool call a (read) has 2 results; it must have exactly one.",
  ]);
});

it("Lab 14.2 · checkSessionReplay: the reopened file's path equals the run's messages", async () => {
  const file = path.join(dir, "s.jsonl");
  const messages: AgentMessage[] = [userMessage("go", { timestamp: 1 }), asked("a"), answered("a")];
  const session = await SessionFile.create(file, { cwd: dir });
  let parentId: string | null = null;
  for (const message of messages) parentId = await session.append({ type: "message", parentId, message });
  await session.close();
  expect(await checkSessionReplay(file, messages)).toEqual([]);
  expect(await checkSessionReplay(file, [...messages, answered("b")])).toEqual([
    "the session file holds 3 messages on its path, the run has 4.",
  ]);
  expect(await checkSessionReplay(file, [messages[0]!, asked("x"), messages[2]!])).toEqual([
    "message 1 of the session file differs from message 1 of the run.",
  ]);
  await writeFile(file, (await readFile(file, "utf8")) + '{"type":"mess');
  expect(await checkSessionReplay(file, messages)).toEqual([`the session file ${file} has torn lines.`]);
  // The next writer's append marks the torn bytes and keeps them on a line of their own: still torn
  // lines. The check reads while that writer holds the file's lock: a checker takes no lock.
  const writer = await SessionFile.open(file);
  const more = answered("a");
  await writer.append({ type: "message", parentId, message: more });
  try {
    expect(await checkSessionReplay(file, [...messages, more])).toEqual([`the session file ${file} has torn lines.`]);
  } finally {
    await writer.close();
  }
  const [missing] = await checkSessionReplay(path.join(dir, "none.jsonl"), messages);
  expect(missing).toMatch(new RegExp(`^the session file ${path.join(dir, "none.jsonl")} does not reopen: `));
});

it("Lab 14.2 · checkSessionReplay: a session file with no entry holds no message", async () => {
  const file = path.join(dir, "empty.jsonl");
  await (await SessionFile.create(file, { cwd: dir })).close();
  expect(await checkSessionReplay(file, [])).toEqual([]);
  expect(await checkSessionReplay(file, [userMessage("go")])).toEqual([
    "the session file holds 0 messages on its path, the run has 1.",
  ]);
});

it("Lab 14.2 · diffSnapshots: whatever was created, changed or removed around the workspace", async () => {
  const root = path.join(dir, "run");
  await mkdir(path.join(root, "workspace"), { recursive: true });
  await mkdir(path.join(root, "home"));
  await writeFile(path.join(root, "home", "keep.txt"), "1");
  await writeFile(path.join(root, "home", "gone.txt"), "1");
  const before = await snapshotFolders([root], [path.join(root, "workspace")]);
  expect(diffSnapshots(before, await snapshotFolders([root], [path.join(root, "workspace")]))).toEqual([]);
  await writeFile(path.join(root, "workspace", "inside.txt"), "fine");
  await writeFile(path.join(root, "escaped.txt"), "x");
  await writeFile(path.join(root, "home", "keep.txt"), "22");
  await rm(path.join(root, "home", "gone.txt"));
  expect(diffSnapshots(before, await snapshotFolders([root], [path.join(root, "workspace")]))).toEqual([
    `written outside the workspace: ${path.join(root, "escaped.txt")} was created.`,
    `written outside the workspace: ${path.join(root, "home", "keep.txt")} was changed.`,
    `written outside the workspace: ${path.join(root, "home", "gone.txt")} was removed.`,
  ]);
});

// ─── Lab 14.3 · one run, judged ──────────────────────────────────────────────────────────────

const checkOk: CheckOutcome = { exitCode: 0, signal: null, timedOut: false, output: "", ms: 1 };
const settings = { timeLimitSeconds: 9, checkTimeLimitSeconds: 3 };
const stop = assistantMessage([{ type: "text", text: "done" }], "stop");

it("Lab 14.3 · classifyRun: the first that applies of interrupted, protocol, time, infrastructure, check", () => {
  const facts = { interrupted: false, protocolProblems: [], timedOut: false, last: stop, check: checkOk, settings };
  expect(classifyRun(facts)).toEqual({ status: "passed" });
  expect(classifyRun({ ...facts, interrupted: true, protocolProblems: ["p"] }).status).toBe("interrupted");
  expect(classifyRun({ ...facts, protocolProblems: ["p1", "p2"], timedOut: true })).toEqual({
    status: "protocol",
    phase: "protocol",
    reason: "p1",
  });
  expect(classifyRun({ ...facts, timedOut: true })).toEqual({
    status: "failed",
    phase: "agent",
    reason: "the time limit of 9 s was reached",
  });
  expect(classifyRun({ ...facts, runError: "disk full" })).toEqual({
    status: "infrastructure",
    phase: "agent",
    reason: "the run failed: disk full",
  });
  const { last: _l, ...silent } = facts;
  expect(classifyRun(silent)).toEqual({ status: "infrastructure", phase: "agent", reason: "the model never answered" });
  const failedCall = assistantMessage([], "error", { errorMessage: "connect ECONNREFUSED 127.0.0.1:9" });
  expect(classifyRun({ ...facts, last: failedCall })).toEqual({
    status: "infrastructure",
    phase: "agent",
    reason: "the model call failed: connect ECONNREFUSED 127.0.0.1:9",
  });
  const noReason = assistantMessage([], "error");
  expect(classifyRun({ ...facts, last: noReason }).reason).toBe("the model call failed: no message");
  const { check: _c, ...unchecked } = facts;
  expect(classifyRun(unchecked)).toEqual({ status: "infrastructure", phase: "check", reason: "the check did not run" });
  expect(classifyRun({ ...facts, check: { ...checkOk, exitCode: null, startError: "spawn EACCES" } })).toEqual({
    status: "infrastructure",
    phase: "check",
    reason: "the check could not start: spawn EACCES",
  });
  expect(classifyRun({ ...facts, check: { ...checkOk, exitCode: null, signal: "SIGKILL", timedOut: true } })).toEqual({
    status: "failed",
    phase: "check",
    reason: "the check did not finish within 3 s",
  });
  expect(classifyRun({ ...facts, check: { ...checkOk, exitCode: 3 } })).toEqual({
    status: "failed",
    phase: "check",
    reason: "the check exited with 3",
  });
  expect(classifyRun({ ...facts, check: { ...checkOk, exitCode: null, signal: "SIGTERM" } })).toEqual({
    status: "failed",
    phase: "check",
    reason: "the check was killed by SIGTERM",
  });
});

/** Runs the case `spec` once, offline, through the CLI's runtime. */
async function runOnce(spec: CaseSpec, options: { repeat?: number; signal?: AbortSignal } = {}): Promise<RunRecord> {
  const evalCase = await loadCase(await writeCase(path.join(dir, "suite"), "case", spec));
  const repeat = options.repeat ?? 0;
  return runCase(evalCase, {
    repeat,
    runRoot: path.join(dir, `run-${repeat}`),
    sharedTemp: false, // other test files write at the top of /tmp meanwhile
    model: await caseModel(evalCase, undefined, repeat),
    wire: runtimeWire(undefined),
    keepSessionAs: path.join(dir, "kept", `${repeat}.jsonl`),
    ...(options.signal !== undefined && { signal: options.signal }),
  });
}

const FIX: CaseSpec = {
  task: "Make answer.txt say 42.",
  files: { "answer.txt": "41\n" },
  check: 'echo "answer: $(cat answer.txt)"; [ "$(cat answer.txt)" = 42 ]',
  script: [
    {
      text: "Fixing.",
      toolCalls: [{ name: "write", arguments: { path: "answer.txt", content: "42" } }],
      usage: { input: 100, output: 10 },
    },
    { text: "answer.txt says 42.", usage: { input: 120, output: 5 } },
  ],
};

it("Lab 14.3 · a run that does the task passes, with its turns, tokens, check output and session kept", async () => {
  const record = await runOnce(FIX);
  expect(record).toMatchObject({
    case: "case",
    repeat: 0,
    status: "passed",
    protocolProblems: [],
    model: "script:case",
    turns: 2,
    tokens: { input: 220, output: 15, total: 235 },
    cost: null,
    sessionFile: path.join(dir, "kept", "0.jsonl"),
    notes: [],
  });
  expect(record.phase).toBeUndefined();
  expect(record.check).toMatchObject({ exitCode: 0, timedOut: false, output: "answer: 42\n" });
  const kept = await SessionFile.open(record.sessionFile!);
  expect(kept.entries().filter((e) => e.type === "message")).toHaveLength(4);
  await kept.close();
});

it("Lab 14.3 · task failure: the check fails, its output is the evidence", async () => {
  const record = await runOnce({ ...FIX, script: [{ text: "Looks fine to me." }] });
  expect(record).toMatchObject({
    status: "failed",
    phase: "check",
    reason: "the check exited with 1",
    protocolProblems: [],
  });
  expect(record.check!.output).toBe("answer: 41\n");
});

it("Lab 14.3 · protocol failure: a command that writes outside the workspace is caught, whatever the check says", async () => {
  const record = await runOnce({
    check: "exit 0",
    script: bashThenAnswer("echo x > ../escaped.txt; echo y > $HOME/.cache-file"),
  });
  const root = path.join(dir, "run-0");
  expect(record.status, "a run that wrote outside its workspace is a protocol failure, whatever its check says").toBe(
    "protocol",
  );
  expect(record.phase).toBe("protocol");
  expect(record.protocolProblems).toEqual([
    `written outside the workspace: ${path.join(root, "escaped.txt")} was created.`,
    `written outside the workspace: ${path.join(root, "home", ".cache-file")} was created.`,
  ]);
  expect(record.reason).toBe(record.protocolProblems[0]);
  expect(record.check?.exitCode).toBe(0);
});

it("Lab 14.3 · infrastructure failure: the model does not answer, no script, a case that cannot be prepared", async () => {
  const down = await runOnce({ script: [{ error: "connect ECONNREFUSED 127.0.0.1:9" }] });
  expect(down).toMatchObject({
    status: "infrastructure",
    phase: "agent",
    reason: "the model call failed: connect ECONNREFUSED 127.0.0.1:9",
    turns: 1,
  });
  await rm(path.join(dir, "suite"), { recursive: true });
  const none = await runOnce({});
  expect(none).toMatchObject({
    status: "infrastructure",
    phase: "prepare",
    reason:
      "case case has no script.json, so it cannot run offline; run the suite against a server with --base-url URL --model NAME",
  });
  const evalCase = await loadCase(path.join(dir, "suite", "case"));
  const broken = await runCase(evalCase, {
    repeat: 0,
    runRoot: path.join(dir, "run-x"),
    sharedTemp: false, // other test files write at the top of /tmp meanwhile
    model: (await caseModel(
      { ...evalCase, script: undefined },
      { provider: "openai", baseUrl: "http://127.0.0.1:9/v1", model: "m" },
      0,
    )) as never,
    wire: async () => {
      throw new Error("no runtime today");
    },
  });
  expect(broken).toMatchObject({
    status: "infrastructure",
    phase: "prepare",
    reason: "the run could not be prepared: no runtime today",
    model: "m",
  });
});

it("Lab 14.3 · limits: the time limit stops the agent (a task failure); the turn limit is noted", async () => {
  const slow = await runOnce({ caseJson: { timeLimitSeconds: 0.5 }, script: bashThenAnswer("sleep 20") });
  expect(slow).toMatchObject({
    status: "failed",
    phase: "agent",
    reason: "the time limit of 0.5 s was reached",
    protocolProblems: [],
  });
  expect(slow.wallMs).toBeLessThan(10_000);
  await rm(path.join(dir, "suite"), { recursive: true });
  const long = await runOnce({ caseJson: { maxTurns: 1 }, script: bashThenAnswer("echo hi") });
  expect(long.turns).toBe(1);
  expect(long.notes).toHaveLength(1);
  expect(long.notes[0]).toMatch(/^turn limit: /);
});

it("Lab 14.3 · an abort (Ctrl-C) stops the run, which is still recorded, as interrupted", async () => {
  const controller = new AbortController();
  const running = runOnce({ script: bashThenAnswer("sleep 20") }, { signal: controller.signal });
  setTimeout(() => controller.abort(), 300);
  const record = await running;
  expect(record).toMatchObject({
    status: "interrupted",
    phase: "agent",
    reason: "stopped by the user (Ctrl-C) before the run finished",
  });
  expect(record.check).toBeUndefined();
  expect(record.wallMs).toBeLessThan(10_000);
});

it("Lab 14.3 · variants: run k plays variant k mod n, so a flaky model is reproducible", async () => {
  const spec: CaseSpec = { ...FIX, script: { variants: [{ turns: FIX.script }, { turns: [{ text: "No." }] }] } };
  const statuses: string[] = [];
  for (const repeat of [0, 1, 2]) {
    statuses.push((await runOnce(spec, { repeat })).status);
    await rm(path.join(dir, "suite"), { recursive: true });
  }
  expect(statuses).toEqual(["passed", "failed", "passed"]);
  expect(existsSync(path.join(dir, "kept", "2.jsonl"))).toBe(true);
});

// ─── Lab 14.4 · the report ───────────────────────────────────────────────────────────────────

const run = runRecord;

const meta = (interrupted = false): SuiteMeta => ({
  suite: "/s",
  model: "m",
  startedAt: new Date(1000),
  finishedAt: new Date(2500),
  concurrency: 2,
  repeat: 4,
  interrupted,
  cases: [
    { name: "steady", tags: [], minPassRate: 1 },
    { name: "flaky", tags: ["f"], minPassRate: 0.5 },
    { name: "stopped", tags: [], minPassRate: 1 },
  ],
});

it("Lab 14.4 · buildSuiteReport: runs by case in order, counts, pass rates against minPassRate", () => {
  const runs = [
    run("flaky", 1, "failed"),
    run("steady", 1, "passed"),
    run("flaky", 0, "passed"),
    run("steady", 0, "passed"),
    run("flaky", 2, "passed"),
    run("flaky", 3, "infrastructure"),
  ];
  const report = buildSuiteReport(meta(), runs);
  expect(report.cases.map((c) => [c.name, c.runs.map((r) => r.repeat), c.passRate, c.verdict])).toEqual([
    ["steady", [0, 1], 1, "passed"],
    ["flaky", [0, 1, 2, 3], 0.5, "passed"],
    ["stopped", [], null, "incomplete"],
  ]);
  expect(report.cases[1]!.counts).toEqual({ passed: 2, failed: 1, protocol: 0, infrastructure: 1, interrupted: 0 });
  expect(report.totals).toEqual({
    cases: 3,
    passedCases: 2,
    runs: 6,
    passed: 4,
    failed: 1,
    protocol: 0,
    infrastructure: 1,
    interrupted: 0,
  });
  expect(report).toMatchObject({ version: 1, wallMs: 1500, startedAt: "1970-01-01T00:00:01.000Z", repeat: 4 });
  // One protocol failure fails a case, whatever its pass rate.
  const broken = buildSuiteReport(meta(), [
    run("flaky", 0, "passed"),
    run("flaky", 1, "passed"),
    run("flaky", 2, "protocol"),
  ]);
  expect(broken.cases[1]).toMatchObject({ passRate: 2 / 3, verdict: "failed" });
  // Interrupted runs are not judged.
  expect(
    buildSuiteReport(meta(true), [run("steady", 0, "passed"), run("steady", 1, "interrupted")]).cases[0],
  ).toMatchObject({ passRate: 1, verdict: "passed" });
});

it("Lab 14.4 · suiteExitCode: 0 when every case passed, 1 when one failed, 130 after Ctrl-C", () => {
  const all = [run("steady", 0, "passed"), run("flaky", 0, "passed"), run("stopped", 0, "passed")];
  expect(suiteExitCode(buildSuiteReport(meta(), all))).toBe(0);
  expect(suiteExitCode(buildSuiteReport(meta(), [...all.slice(1), run("steady", 0, "failed")]))).toBe(1);
  expect(suiteExitCode(buildSuiteReport(meta(), all.slice(1)))).toBe(1);
  expect(suiteExitCode(buildSuiteReport(meta(true), all))).toBe(130);
});

it("Lab 14.4 · suiteExitCode: 130 after Ctrl-C even when a case failed", () => {
  const runs = [run("steady", 0, "failed"), run("flaky", 0, "passed"), run("stopped", 0, "passed")];
  expect(suiteExitCode(buildSuiteReport(meta(true), runs)), "an interrupted suite with a failed case").toBe(130);
});
