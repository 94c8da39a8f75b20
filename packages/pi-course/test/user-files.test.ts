/**
 * Issue 43: a file the library reads because a user named it (config, MCP config, models file,
 * trust file, eval case files) is read only when it is a regular file, only up to a cap, and
 * refused at once otherwise, with an error naming the path: a FIFO never blocks the process and
 * `/dev/zero` is never read until memory runs out.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readConfigFile } from "../src/cli/settings.js";
import { loadCase } from "../src/eval/case-format.js";
import { loadCaseScript } from "../src/eval/case-script.js";
import { loadMcpConfig, mcpVariables } from "../src/mcp/config.js";
import { ModelCatalogue } from "../src/model-choice/catalogue.js";
import { loadModelsFileSync } from "../src/model-choice/models-file.js";
import { MAX_FILE_BYTES, readTextFile } from "../src/base/read-json.js";
import { TrustStore } from "../src/resources/trust.js";
import { builtStart } from "./support/built-cli.js";
import { writeCase } from "./support/eval-cases.js";

let dir: string;
/** The three files no reader may take: a FIFO (nobody writes to it), a device, a folder. */
const bad: { kind: string; file: string }[] = [];

beforeAll(async () => {
  // The real path: on macOS the temporary folder is a symlink (/var -> /private/var).
  dir = await realpath(await mkdtemp(path.join(tmpdir(), "pi-course-user-files-")));
  const fifo = path.join(dir, "fifo");
  execFileSync("mkfifo", [fifo]);
  const folder = path.join(dir, "folder");
  await mkdir(folder);
  bad.push({ kind: "a FIFO", file: fifo }, { kind: "a device", file: "/dev/zero" }, { kind: "a folder", file: folder });
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** `read` throws at once, with a message naming `file` and what it is. */
function refusedAtOnce(read: () => unknown, file: string, kind: string): void {
  const started = Date.now();
  expect(read).toThrow(`${file} is not a regular file (it is ${kind})`);
  expect(Date.now() - started).toBeLessThan(5_000);
}

describe("a user-named file that is not a regular file is refused at once", () => {
  it("readTextFile, and each reader of the library through it", () => {
    for (const { kind, file } of bad) {
      refusedAtOnce(() => readTextFile(file), file, kind);
      refusedAtOnce(() => readConfigFile({ HOME: dir }, file), file, kind);
      refusedAtOnce(() => readConfigFile({ HOME: dir, PI_COURSE_CONFIG: file }), file, kind);
      refusedAtOnce(() => loadMcpConfig({ home: dir, projectTrusted: false, files: [file], env: {} }), file, kind);
      refusedAtOnce(() => loadModelsFileSync(ModelCatalogue.builtin(), file), file, kind);
      refusedAtOnce(() => new TrustStore(file).decisions(), file, kind);
    }
  }, 10_000);

  it("the launcher's look for variables in --mcp-config files skips them instead of blocking", () => {
    const started = Date.now();
    expect(mcpVariables(["--mcp-config", bad[0]!.file, "--mcp-config", "/dev/zero"], { INIT_CWD: dir }, dir)).toEqual(
      [],
    );
    expect(Date.now() - started).toBeLessThan(5_000);
  }, 10_000);

  it("an eval case's task.md, case.json and script.json", async () => {
    for (const [index, { kind, file }] of bad.entries()) {
      for (const name of ["task.md", "case.json", "script.json"]) {
        const caseDir = await writeCase(path.join(dir, `suite-${index}`), name.replace(".", "-"), { script: [] });
        const target = path.join(caseDir, name);
        await rm(target, { force: true });
        await symlink(file, target);
        const started = Date.now();
        const load = name === "script.json" ? loadCaseScript(target) : loadCase(caseDir);
        await expect(load).rejects.toThrow(`${target} is not a regular file (it is ${kind})`);
        expect(Date.now() - started).toBeLessThan(5_000);
      }
    }
  }, 10_000);

  it("a regular file past the cap is refused unread, naming the file and the cap", async () => {
    const big = path.join(dir, "big.json");
    await writeFile(big, "x".repeat(2000));
    expect(() => readTextFile(big, { maxBytes: 1000 })).toThrow(
      `${big} is larger than 1000 bytes, more than a file read here may hold`,
    );
    expect(readTextFile(big, { maxBytes: 2000 })).toHaveLength(2000);
    expect(MAX_FILE_BYTES).toBe(16 * 1024 * 1024);
  });
});

describe("the CLI refuses such files at once, naming the option and the path", () => {
  // Built before the clock starts: only the refusal is timed.
  beforeAll(() => void builtStart(), 120_000);
  /** Runs the built CLI with `args` (and `env`), stdin closed; at most 60 s (a FIFO read would hang, /dev/zero would fill memory). */
  const cli = (args: string[], env: NodeJS.ProcessEnv = {}) => {
    const started = Date.now();
    const run = spawnSync(process.execPath, [builtStart(), ...args], {
      env: { PATH: process.env.PATH, HOME: dir, ...env },
      stdio: ["ignore", "pipe", "pipe"],
      encoding: "utf8",
      timeout: 60_000,
    });
    return { code: run.status, stderr: run.stderr, ms: Date.now() - started };
  };
  const base = () => ["--base-url", "http://127.0.0.1:9/v1", "--model", "gpt-4o-mini", "--cwd", dir, "--no-session"];

  it("--config and $PI_COURSE_CONFIG", () => {
    for (const { kind, file } of bad) {
      for (const run of [
        cli([...base(), "--config", file, "hi"]),
        cli([...base(), "hi"], { PI_COURSE_CONFIG: file }),
      ]) {
        expect(run.stderr).toContain(`the config file ${file} is not a regular file (it is ${kind})`);
        expect([run.code, run.ms < 30_000]).toEqual([2, true]);
      }
    }
  }, 240_000);

  it("--prompt-file and --api-key-file: a device or a folder is refused; a named pipe nobody writes to reads as empty", () => {
    for (const option of ["--prompt-file", "--api-key-file"]) {
      const extra = option === "--prompt-file" ? ["--no-api-key"] : ["hi"];
      for (const { kind, file } of bad) {
        const run = cli([...base(), option, file, ...extra]);
        expect([run.code, run.ms < 30_000]).toEqual([2, true]);
        if (kind === "a FIFO") expect(run.stderr).toMatch(/is empty/);
        else expect(run.stderr).toContain(`${option} ${file} is not a regular file (it is ${kind})`);
      }
    }
  }, 240_000);
});
