/**
 * The launcher's middle process (cli/launch.ts) is a POSIX shell, not a second Node process (a
 * Node boot was a tenth of `--print`'s first answer). What the Node middle did, the shell does:
 * the agent's exit code when it ends before it connects (1 when a signal ended it), stdin handed
 * down (a background command's would be /dev/null), and it is gone once the agent has connected.
 * The agent is made to end early by a preload module the launcher passes down with its own
 * `execArgv` (only the agent has the launcher's socket in its environment).
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { builtStart } from "./support/built-cli.js";
import { SseServer, sseReply } from "./support/sse-server.js";

let workspace = "";
let home = "";
let server: SseServer;
beforeEach(async () => {
  workspace = await mkdtemp(path.join(tmpdir(), "pi-launch-middle-"));
  home = await mkdtemp(path.join(tmpdir(), "pi-launch-middle-home-"));
  server = await SseServer.start();
});
afterEach(async () => {
  await server.close();
  await rm(workspace, { recursive: true, force: true });
  await rm(home, { recursive: true, force: true });
});

const answer =
  `data: ${JSON.stringify({ choices: [{ index: 0, delta: { role: "assistant", content: "done" } }] })}\n\n` +
  `data: ${JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: "stop" }] })}\n\n` +
  "data: [DONE]\n\n";

/** Runs the built CLI's launcher with `preload` (a CommonJS file's text, run in the launcher and the agent). */
async function launch(
  preload: string,
  args: string[],
  input?: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const file = path.join(workspace, "preload.cjs");
  await writeFile(file, preload);
  const child = spawn(process.execPath, [`--require=${file}`, builtStart(), ...args], {
    cwd: workspace,
    // a home of its own: the run's session file is written under it
    env: { ...process.env, OPENAI_API_KEY: undefined, HOME: home },
    stdio: ["pipe", "pipe", "pipe"],
  });
  child.stdin.end(input ?? "");
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (data: Buffer) => (stdout += data.toString("utf8")));
  child.stderr.on("data", (data: Buffer) => (stderr += data.toString("utf8")));
  const code = await new Promise<number | null>((done) => child.on("close", done));
  return { code, stdout, stderr };
}

const printArgs = () => ["--base-url", server.baseUrl, "--model", "m", "--no-api-key", "--print", "--cwd", workspace];

describe("the launcher's middle process", () => {
  it("an agent that ends before it connects: the launcher exits with its code, or 1 when a signal ended it", async () => {
    const exits = await launch("if (process.env.PI_COURSE_AGENT_SOCKET) process.exit(7);\n", [...printArgs(), "hi"]);
    expect([exits.code, exits.stdout]).toEqual([7, ""]);
    const killed = await launch('if (process.env.PI_COURSE_AGENT_SOCKET) process.kill(process.pid, "SIGKILL");\n', [
      ...printArgs(),
      "hi",
    ]);
    expect([killed.code, killed.stdout]).toEqual([1, ""]);
    expect(server.requests).toEqual([]);
  }, 60_000);

  it("the agent reads the launcher's stdin, and its parent at start (the middle) is a shell that has left once it connected", async () => {
    server.reply(sseReply(answer));
    // the agent notes its parent's command line at start, and its parent once the run is over
    const notes = path.join(workspace, "parents.json");
    const preload = `if (process.env.PI_COURSE_AGENT_SOCKET) {
  const fs = require("node:fs");
  const comm = (pid) => fs.readFileSync("/proc/" + pid + "/comm", "utf8").trim();
  const atStart = { pid: process.ppid, comm: comm(process.ppid) };
  process.on("exit", () => fs.writeFileSync(${JSON.stringify(notes)}, JSON.stringify({ atStart, atEnd: process.ppid })));
}
`;
    const run = await launch(preload, [...printArgs(), "--prompt-file", "-"], "the task from stdin\n");
    expect([run.code, run.stdout]).toEqual([0, "done\n"]);
    expect(JSON.parse(server.requests[0]!.body).messages.at(-1)).toEqual({
      role: "user",
      content: "the task from stdin",
    });
    const parents = JSON.parse(readFileSync(notes, "utf8")) as {
      atStart: { pid: number; comm: string };
      atEnd: number;
    };
    expect(parents.atStart.comm).toMatch(/^(sh|dash|bash)$/);
    expect(parents.atEnd).not.toBe(parents.atStart.pid);
  }, 60_000);
});
