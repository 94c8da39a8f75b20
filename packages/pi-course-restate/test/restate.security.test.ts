/**
 * The engine is closed to every local user but its owner: every attack of issue 55, made by
 * another user (`runuser -u nobody`, `test/support/attacker.mjs`), is refused, and nothing of it
 * happens. The engine here is the real one (`startEngine`: Restate on Unix sockets in its 0700
 * folder, the gate, the proxy) with a real worker; the folder above the engine's is open to all,
 * so only the engine's own protections stand in the way.
 *
 * Also: a worker runs an eval case only from inside the suite folders it was started with, by
 * real path (a case anyone else made, or a link to one inside a suite, is refused, even when the
 * owner submits it), and the gate's token is in no journal.
 *
 * This test needs root (to act as another user) and `runuser`; it fails, saying so, without them.
 */
import { execFile } from "node:child_process";
import { existsSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import { chmod, copyFile, mkdir, mkdtemp, readdir, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, it } from "vitest";
import { attach } from "../src/attach.js";
import { engineFetch, engineQuery, engineVersions } from "../src/engine-client.js";
import type { Engine } from "../src/engine.js";
import { freePort } from "../src/restate-server.js";
import { runDurably, runResult, submitRun } from "../src/submit.js";
import { spawnWorker } from "../src/worker-process.js";
import { requireAnotherUser } from "./support/another-user.js";
import { engineWithFleet, Fleet, testBundle } from "./support/fleet.js";
import { DONE } from "./support/kill-script.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const SETUPS = path.join(here, "support", "kill-script.ts");

let root: string;
let suite: string;
let attackDir: string;
let engine: Engine | undefined;
let bundle: Awaited<ReturnType<typeof testBundle>> | undefined;
const fleet = new Fleet((port, credential) =>
  spawnWorker({ bundle: bundle!.file, port, tmpdir: path.join(root, "tmp"), ...credential, suites: [suite] }),
);

beforeAll(async () => {
  requireAnotherUser("restate.security.test.ts makes its attacks");
  root = await mkdtemp(path.join(tmpdir(), "pi-restate-security-"));
  await chmod(root, 0o755); // open to all: the engine's folder must hold by itself
  suite = path.join(root, "suite");
  await mkdir(suite);
  await mkdir(path.join(root, "tmp"));
  attackDir = await mkdtemp(path.join(tmpdir(), "pi-restate-attacker-"));
  await chmod(attackDir, 0o777);
  await copyFile(path.join(here, "support", "attacker.mjs"), path.join(attackDir, "attacker.mjs"));
  await chmod(path.join(attackDir, "attacker.mjs"), 0o644);
  bundle = await testBundle(SETUPS);
  engine = await engineWithFleet(fleet, path.join(root, "engine"), [await freePort()]);
}, 60_000);

afterAll(async () => {
  await fleet.stop();
  await engine?.stop();
  await bundle?.remove();
  if (root !== undefined) await rm(root, { recursive: true, force: true });
  if (attackDir !== undefined) await rm(attackDir, { recursive: true, force: true });
});

/** Runs the attacker script as `nobody` with `targets`; resolves with what each attack met. */
function attackAsNobody(targets: unknown): Promise<Record<string, string>> {
  return new Promise((resolve, reject) => {
    execFile(
      "runuser",
      ["-u", "nobody", "--", process.execPath, path.join(attackDir, "attacker.mjs"), JSON.stringify(targets)],
      { cwd: attackDir, encoding: "utf8", timeout: 60_000 },
      (error, stdout, stderr) => {
        if (error !== null) reject(new Error(`the attacker script failed: ${error.message}\n${stderr}`));
        else resolve(JSON.parse(stdout) as Record<string, string>);
      },
    );
  });
}

/** The TCP ports `pid` listens on (from /proc: its sockets' inodes in the kernel's LISTEN table). */
function tcpListening(pid: number): number[] {
  const inodes = new Set(
    readdirSync(`/proc/${pid}/fd`).flatMap((fd) => {
      try {
        const match = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
        return match === null ? [] : [match[1]!];
      } catch {
        return [];
      }
    }),
  );
  const ports: number[] = [];
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    for (const line of readFileSync(table, "utf8").split("\n").slice(1)) {
      const fields = line.trim().split(/\s+/);
      // local_address is fields[1] (hex ip:port), st is fields[3] (0A: LISTEN), inode is fields[9]
      if (fields[3] === "0A" && inodes.has(fields[9]!)) ports.push(Number.parseInt(fields[1]!.split(":")[1]!, 16));
    }
  }
  return ports;
}

async function reach(markers: string, name: string): Promise<void> {
  while (!(await readdir(markers)).some((file) => file.startsWith(`${name}@`)))
    await new Promise((resolve) => setTimeout(resolve, 10));
}

it("lets another local user submit, read, list, cancel or kill nothing, and no unsigned request reach a worker", async () => {
  const effects = path.join(root, "effects.log");
  await writeFile(effects, "");
  // the victim's finished run, whose transcript holds its secret
  const victim = await runDurably(engine!, "victim", {
    setup: "kill-script",
    prompt: "the secret is 7c1f09",
    options: { effects },
  });
  expect(JSON.stringify(victim.messages)).toContain("7c1f09");
  // the run the attacker tries to stop, held at its first tool call
  const markers = path.join(root, "markers");
  await mkdir(markers);
  const invocationId = await submitRun(engine!, "held", {
    setup: "kill-script",
    prompt: "go",
    options: { markers, effects },
  });
  await reach(markers, "held.turn0.stream");
  await writeFile(path.join(markers, "held.turn0.stream.go"), "");
  await reach(markers, "held.c0.before");

  const [version] = await engineVersions(engine!);
  const caseDir = path.join(attackDir, "case");
  const worker = fleet.workers[0]!;
  const outcomes = await attackAsNobody({
    gate: engine!.url,
    proxy: engine!.proxyUrl,
    worker: worker.url,
    version: version!.version,
    engineDir: engine!.dir,
    caseDir,
    victim: "victim",
    invocationId,
    pids: { worker: worker.pid, "Restate server": engine!.server().process.pid, engine: process.pid },
  });
  expect(outcomes).toEqual({
    "submit: gate, no credential": "401",
    "submit: gate, guessed credential": "401",
    "submit: ingress socket": "EACCES",
    "read the credential file": "EACCES",
    "read the signing key": "EACCES",
    "write the workers' key file": "EACCES",
    "worker: unsigned discover": "401",
    "worker: unsigned EvalRun": "401",
    "worker: self-signed EvalRun": "401",
    "proxy: unsigned EvalRun": "401",
    "proxy: unsigned AgentRun": "401",
    "output: gate": "401",
    "output: gate, guessed credential": "401",
    "output: ingress socket": "EACCES",
    "output: Restate's files": "EACCES",
    "list deployments: gate": "401",
    "list runs: gate": "401",
    "list deployments: admin socket": "EACCES",
    "list runs: admin socket": "EACCES",
    "cancel: gate": "401",
    "cancel: gate, guessed credential": "401",
    "cancel: admin socket": "EACCES",
    "kill: gate": "401",
    "kill: gate, guessed credential": "401",
    "kill: admin socket": "EACCES",
    "SIGKILL the worker": "EPERM",
    "SIGKILL the Restate server": "EPERM",
    "SIGKILL the engine": "EPERM",
  });

  // Restate itself listens on no TCP port at all (ingress, admin, fabric: Unix sockets only)
  expect(tcpListening(engine!.server().process.pid!)).toEqual([]);
  expect(tcpListening(process.pid)).toEqual(expect.arrayContaining([new URL(engine!.url).port].map(Number)));

  // nothing of it happened: the case's check never ran, no EvalRun exists, the held run goes on to its end
  expect(existsSync(path.join(caseDir, "pwned"))).toBe(false);
  expect(await engineQuery(engine!, "SELECT id FROM sys_invocation WHERE target_service_name = 'EvalRun'")).toEqual([]);
  const letGo = setInterval(async () => {
    for (const file of await readdir(markers)) {
      if (!file.endsWith(".go")) await writeFile(path.join(markers, `${file.split("@")[0]}.go`), "");
    }
  }, 10);
  const held = await runResult(engine!, "held", AbortSignal.timeout(20_000)).finally(() => clearInterval(letGo));
  const last = held.messages.at(-1)!;
  expect(last.role === "assistant" && last.content).toEqual([{ type: "text", text: DONE }]);

  // the owner's token reached no journal (the gate takes it off before Restate keeps the headers)
  const journal = await engineQuery(engine!, "SELECT * FROM sys_journal");
  expect(journal.length).toBeGreaterThan(0);
  expect(JSON.stringify(journal)).not.toContain(engine!.token);
  expect(JSON.stringify(await engineQuery(engine!, "SELECT * FROM sys_invocation"))).not.toContain(engine!.token);
}, 90_000);

it("runs an eval case only from inside its suite folders, by real path, whoever submits it", async () => {
  const makeCase = async (dir: string) => {
    await mkdir(path.join(dir, "files"), { recursive: true });
    await writeFile(path.join(dir, "files", "note.txt"), "hello\n");
    await writeFile(path.join(dir, "task.md"), "Say hello.\n");
    await writeFile(path.join(dir, "script.json"), JSON.stringify({ turns: [{ text: "hello" }] }));
    await writeFile(path.join(dir, "case.json"), JSON.stringify({ timeLimitSeconds: 30, maxTurns: 2 }));
    await writeFile(path.join(dir, "check"), `#!/bin/sh\nid -u > "${dir}/ran"\n`);
    await chmod(path.join(dir, "check"), 0o755);
  };
  const outside = path.join(attackDir, "made-by-someone");
  await makeCase(outside);
  await symlink(outside, path.join(suite, "link-out"));
  await makeCase(path.join(suite, "inside"));
  const evalRun = async (key: string, caseDir: string) => {
    const sent = await engineFetch(engine!, `/EvalRun/${key}/run/send`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ caseDir, repeat: 0 }),
    });
    expect(sent.status, await sent.text()).toBeLessThan(300);
    return attach(`${engine!.url}/restate/workflow/EvalRun/${key}/attach`, {
      token: engine!.token,
      signal: AbortSignal.timeout(30_000),
    });
  };
  const refusal = (caseDir: string) =>
    `EvalRun: ${caseDir} is not a case inside this worker's suite folders; it runs cases only from: ${suite}`;
  const outsideRun = await evalRun("outside", outside);
  expect(outsideRun.ok).toBe(false);
  expect(outsideRun.text).toContain(refusal(outside));
  const linked = await evalRun("linked", path.join(suite, "link-out"));
  expect(linked.ok).toBe(false);
  expect(linked.text).toContain(refusal(path.join(suite, "link-out")));
  const dotted = await evalRun("dotted", path.join(suite, "..", "..", path.basename(attackDir), "made-by-someone"));
  expect(dotted.ok).toBe(false);
  expect(existsSync(path.join(outside, "ran"))).toBe(false);
  // the control: a case inside the suite runs, and its check ran
  const inside = await evalRun("inside", path.join(suite, "inside"));
  expect(inside.ok, inside.text).toBe(true);
  expect(existsSync(path.join(suite, "inside", "ran"))).toBe(true);
}, 60_000);

it("keeps model keys out of the journal: a run whose options hold one is not submitted, and not run if sent another way", async () => {
  const options = { effects: path.join(root, "effects.log"), model: { apiKey: "sk-test-0001" } };
  await expect(submitRun(engine!, "keyed", { setup: "kill-script", prompt: "go", options })).rejects.toThrow(
    "run keyed not submitted: options.model.apiKey looks like a credential, and a run's input is kept in the engine's journal. " +
      'Give the workers the key in their own environment or a file, and let the options name it (e.g. { "apiKeyEnv": "OPENAI_API_KEY" }).',
  );
  expect(await engineQuery(engine!, "SELECT id FROM sys_invocation WHERE target_service_key = 'keyed'")).toEqual([]);
  // naming the variable is fine
  const named = { effects: path.join(root, "effects.log"), model: { apiKeyEnv: "OPENAI_API_KEY" } };
  expectDoneRun(await runDurably(engine!, "named", { setup: "kill-script", prompt: "go", options: named }));
  // sent past the client, the worker refuses to run it
  const sent = await engineFetch(engine!, "/AgentRun/keyed-raw/run/send", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ setup: "kill-script", prompt: "go", options }),
  });
  expect(sent.status, await sent.text()).toBeLessThan(300);
  await expect(runResult(engine!, "keyed-raw", AbortSignal.timeout(20_000))).rejects.toThrow(
    "AgentRun: options.model.apiKey looks like a credential",
  );
}, 60_000);

function expectDoneRun(output: { messages: { role: string; content?: unknown }[] }): void {
  const last = output.messages.at(-1)!;
  expect(last.role === "assistant" && last.content).toEqual([{ type: "text", text: DONE }]);
}
