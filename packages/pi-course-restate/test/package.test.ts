/**
 * The package as a user gets it: `npm pack` of @pi/course and of this package, both tarballs
 * installed into an empty folder outside the repository (no dev tools: no tsx, no TypeScript) with
 * the Restate server as the README's install line says, then the README's shell examples run
 * there, line by line, with the installed `pi-course-restate`: "Try it" (two workers, the engine, a
 * submit, then status, result and list) and "Across machines" (the engine's gate and the workers
 * on the loopback aliases 127.0.0.2, .3 and .4; the gate there refuses a request without the token
 * of the engine's client.json, or with another one).
 *
 * What a line is run with: `npx pi-course-restate` is the installed bin, fixed ports become free
 * ones, the demo's 5 s write 0 s. Waits are on what the processes
 * print; the timeouts are hang bounds (packing builds both packages: minutes on a loaded machine).
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, it } from "vitest";
import { freePort } from "../src/restate-server.js";
import { withPackLock } from "../../pi-course/test/support/pack-lock.js";
import { packedCourse } from "../../pi-course/test/support/packed-course.js";

const PACKAGE = fileURLToPath(new URL("..", import.meta.url));
const README = readFileSync(path.join(PACKAGE, "README.md"), "utf8");
const COMMANDS = ["engine", "worker", "bundle", "submit", "status", "result", "cancel", "list", "eval"];

let work: string;
let app: string;
let files: string[] = [];
const running: ChildProcess[] = [];
/** The environment of every command: npm's own variables out, as a user's shell has them. */
const env = { ...process.env, SCARF_ANALYTICS: "false", npm_lifecycle_event: "", INIT_CWD: "" };

beforeAll(() => {
  work = mkdtempSync(path.join(tmpdir(), "pi-restate-consumer-"));
  const pack = (dir: string) => {
    const packed = withPackLock(() =>
      spawnSync("npm", ["pack", "--json", "--pack-destination", work], { cwd: dir, encoding: "utf8" }),
    );
    // the build's errors (tsc writes them on stdout) say what broke
    if (packed.status !== 0) throw new Error(`npm pack in ${dir} failed:\n${packed.stdout}${packed.stderr}`);
    const out = packed.stdout;
    const [info] = JSON.parse(out.slice(out.indexOf("["))) as { filename: string; files: { path: string }[] }[];
    return { tarball: path.join(work, info!.filename), files: info!.files.map((f) => f.path) };
  };
  // First: its build (dist/) is what this package's build compiles against. Made once per state
  // of @pi/course: its own package test installs the same tarball.
  const course = packedCourse();
  const restate = pack(PACKAGE);
  files = restate.files;
  app = path.join(work, "app");
  mkdirSync(app);
  writeFileSync(path.join(app, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
  execFileSync(
    "npm",
    [
      "install",
      "--no-audit",
      "--no-fund",
      "--prefer-offline",
      course.tarball,
      restate.tarball,
      // the README's install line for the engine's host
      "@restatedev/restate-server@1.7.12",
    ],
    { cwd: app, stdio: ["ignore", "pipe", "pipe"], env },
  );
}, 900_000);

afterAll(() => {
  for (const child of running) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  if (work !== undefined) rmSync(work, { recursive: true, force: true });
});

const bin = () => path.join(app, "node_modules", ".bin", "pi-course-restate");

/** The lines of the README's first ```sh block after `heading`, continuations joined, comments dropped. */
function shellBlock(heading: string): string[] {
  const from = README.indexOf(heading);
  const block = /```sh\n([\s\S]*?)```/.exec(README.slice(from))![1]!;
  return block
    .replace(/\\\n\s*/g, "")
    .split("\n")
    .filter((line) => line.trim() !== "" && !line.startsWith("#"));
}

/** `line` as the test runs it (see the module comment). */
function localize(line: string, values: Record<string, string>): string {
  let out = line.replaceAll("npx pi-course-restate", bin());
  for (const [from, to] of Object.entries(values)) out = out.replaceAll(from, to);
  return out;
}

/** Starts `line` (a README line ending in `&`) and resolves with its output once it printed `ready`. */
function background(line: string, ready: RegExp): Promise<{ child: ChildProcess; match: RegExpExecArray }> {
  const child = spawn("bash", ["-c", `exec ${line.replace(/&\s*$/, "")}`], { cwd: app, env, stdio: "pipe" });
  running.push(child);
  let out = "";
  let err = "";
  child.stderr!.on("data", (chunk: Buffer) => {
    err += chunk.toString();
  });
  return new Promise((resolve, reject) => {
    child.stdout!.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const match = ready.exec(out);
      if (match !== null) resolve({ child, match });
    });
    child.once("exit", (code) => reject(new Error(`${line}\nexited (${code}) before it was ready: ${out}${err}`)));
  });
}

/** Runs `line` to its end (killed after `timeout` ms: a hang bound); its status and output. */
function foreground(line: string, timeout = 300_000) {
  const result = spawnSync("bash", ["-c", line], { cwd: app, env, encoding: "utf8", timeout });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** Resolves once the engine of `clientFile` has a version of worker code registered (it logs `version … registered`). */
async function registered(clientFile: string): Promise<void> {
  const { url, token } = JSON.parse(readFileSync(clientFile, "utf8")) as { url: string; token: string };
  for (;;) {
    const response = await fetch(`${url}/admin/deployments`, { headers: { authorization: `Bearer ${token}` } });
    const { deployments } = (await response.json()) as { deployments: unknown[] };
    if (deployments.length > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function stopAll(): Promise<void> {
  await Promise.all(
    running.splice(0).map(async (child) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      const kill = setTimeout(() => child.kill("SIGKILL"), 10_000);
      await new Promise((resolve) => child.once("exit", resolve));
      clearTimeout(kill);
    }),
  );
}

it("Package · the tarball ships built JavaScript with declarations and a README; no sources, no tests", () => {
  for (const file of ["dist/cli.js", "dist/index.js", "dist/index.d.ts", "dist/demo-setups.js", "README.md"]) {
    expect(files).toContain(file);
  }
  expect(
    files.filter((f) => f.startsWith("src/") || f.startsWith("test/") || (f.endsWith(".ts") && !f.endsWith(".d.ts"))),
  ).toEqual([]);
  const pkg = JSON.parse(readFileSync(path.join(app, "node_modules", "@pi", "course-restate", "package.json"), "utf8"));
  expect(pkg.private).toBeUndefined();
  expect(pkg.bin).toEqual({ "pi-course-restate": "./dist/cli.js" });
  expect(pkg.dependencies["@pi/course"]).toBe("0.1.0");
  expect(pkg.peerDependencies["@restatedev/restate-server"]).toBe("1.7.12");
  // the installed code imports @pi/course as a package, never its sources
  const dist = path.join(app, "node_modules", "@pi", "course-restate", "dist");
  const cli = readFileSync(path.join(dist, "cli.js"), "utf8");
  expect(cli.startsWith("#!/usr/bin/env node\n")).toBe(true);
  const sources = spawnSync("grep", ["-rl", "pi-course/src", dist], { encoding: "utf8" });
  expect([sources.status, sources.stdout]).toEqual([1, ""]); // grep: 1 is "found nothing"
}, 60_000);

it("Package · --help says every command and exits 0, for the program and for each command; misuse exits 2", () => {
  const help = spawnSync(bin(), ["--help"], { encoding: "utf8", env });
  expect(help.status).toBe(0);
  for (const command of COMMANDS) expect(help.stdout).toMatch(new RegExp(`^  ${command} `, "m"));
  for (const command of COMMANDS) {
    const own = spawnSync(bin(), [command, "--help"], { encoding: "utf8", env });
    expect([command, own.status, own.stdout.split("\n")[0]]).toEqual([
      command,
      0,
      expect.stringMatching(new RegExp(`^usage: pi-course-restate ${command}\\b`)),
    ]);
  }
  const unknown = spawnSync(bin(), ["serve"], { encoding: "utf8", env });
  expect([unknown.status, unknown.stderr.split("\n")[0]]).toEqual([2, 'error: unknown command "serve".']);
  const misused = spawnSync(bin(), ["status", "--engine"], { encoding: "utf8", env });
  expect(misused.status).toBe(2);
  expect(misused.stderr).toMatch(/\nRun `pi-course-restate status --help` for the options\.\n$/);
}, 120_000);

it("Package · the README's example runs from the installed package: two workers, the engine, a submit, then status, result and list", async () => {
  const lines = shellBlock("## Try it");
  const [ports, port2] = [await freePort(), await freePort()];
  const values: Record<string, string> = {
    $SETUPS: lines[0]!.split("=")[1]!,
    "9081": String(ports),
    "9082": String(port2),
    '"seconds":5': '"seconds":0',
  };
  expect(lines[0]).toBe("SETUPS=node_modules/@pi/course-restate/dist/demo-setups.js");
  const [engine, worker1, worker2, submit] = lines.slice(1);
  expect([engine, worker1, worker2].every((line) => line!.endsWith("&"))).toBe(true);
  const started = await background(localize(engine!, values), /engine: (\S+) \(credential: (\S+);/);
  expect(started.match[1]).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  expect(started.match[2]).toBe(path.join(app, "restate-data", "client.json"));
  await Promise.all([worker1!, worker2!].map((line) => background(localize(line, values), /listening on (\S+)/)));
  await registered(started.match[2]!);

  const submitted = foreground(localize(submit!, values));
  expect(submitted.stderr).toBe("");
  expect(submitted.stdout).toBe('run demo-1 submitted\nslow_write said: wrote "demo-1"\nthe file holds: demo-1\n\n');
  expect(submitted.status).toBe(0);
  expect(readFileSync(path.join(app, "demo.txt"), "utf8")).toBe("demo-1\n");
  expect(readFileSync(path.join(app, "demo-1.jsonl"), "utf8").split("\n")[0]).toMatch(/"type":"session"/);

  const [status, result, list] = shellBlock("While it runs, and after").map((line) =>
    foreground(localize(line, values)),
  );
  expect(status!.stdout).toMatch(
    /^run demo-1 \(AgentRun, invocation inv_\w+\)\nstate: {5}completed, succeeded\nstep: {6}turn 2 \(done; 6 step\(s\) in the journal\)\n/,
  );
  expect(result).toEqual({
    status: 0,
    stdout: 'slow_write said: wrote "demo-1"\nthe file holds: demo-1\n\n',
    stderr: "",
  });
  expect(list!.stdout).toMatch(/^demo-1\tcompleted, succeeded\tattempts \d+\t\S+\n$/);
  await stopAll();
}, 300_000);

it("Package · across machines: the engine's gate and workers on loopback aliases; the gate refuses a request without the engine's token", async () => {
  const lines = shellBlock("## Across machines");
  const workerPort = await freePort("127.0.0.3");
  const values: Record<string, string> = {
    $SETUPS: "node_modules/@pi/course-restate/dist/demo-setups.js",
    "10.0.0.1": "127.0.0.2",
    "10.0.0.2": "127.0.0.3",
    "10.0.0.3": "127.0.0.4",
    "9081": String(workerPort),
    "restate-data": "restate-data-2",
    '"seconds":1': '"seconds":0',
  };
  const engine = lines.find((line) => line.includes(" engine "))!;
  const worker = lines.find((line) => line.includes(" worker "))!;
  const submit = lines.find((line) => line.includes(" submit "))!;
  // the engine first: its folder holds the identity keys the workers are started with
  const started = await background(localize(engine, values), /engine: (\S+) \(credential: (\S+);/);
  const gate = started.match[1]!;
  expect(gate).toMatch(/^http:\/\/127\.0\.0\.2:\d+$/);
  const { token } = JSON.parse(readFileSync(started.match[2]!, "utf8")) as { url: string; token: string };
  // what another machine reaching the gate without the token gets: 401, nothing of Restate's
  for (const authorization of [undefined, "Bearer not-the-token"]) {
    const response = await fetch(`${gate}/admin/deployments`, {
      ...(authorization !== undefined && { headers: { authorization } }),
    });
    expect([authorization, response.status]).toEqual([authorization, 401]);
    await response.arrayBuffer();
  }
  expect((await fetch(`${gate}/admin/deployments`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(
    200,
  );
  // two workers (.3 and .4), a run submitted with the engine's client.json
  await Promise.all(
    [worker, worker.replace("--host 10.0.0.2", "--host 10.0.0.3")].map((line) =>
      background(localize(line, values), /listening on (\S+)/),
    ),
  );
  await registered(started.match[2]!);
  const submitted = foreground(localize(submit, values));
  expect([submitted.status, submitted.stderr]).toEqual([0, ""]);
  expect(submitted.stdout).toBe('run demo-2 submitted\nslow_write said: wrote "demo-2"\nthe file holds: demo-2\n\n');
  await stopAll();
}, 300_000);
