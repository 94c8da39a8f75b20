/**
 * Escapes from session files never reach the terminal (issue 31, item 10): a sessions folder
 * whose session id, first prompt and file names carry `ESC c`, `ESC[2J` and an OSC title
 * sequence, driven through a real pseudo-terminal (the `--continue` header line, the replay,
 * `/sessions`, `/resume`, the Up arrow's history) and through `--print --continue`.
 */
import { spawn } from "node:child_process";
import { mkdir, mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { folderKey } from "../src/cli/sessions.js";
import { SessionFile } from "../src/session/session.js";
import { KEY, openTerminal, type PseudoTerminal } from "./support/terminal.js";
import { builtStart } from "./support/built-cli.js";

const RESET = "\u001bc";
const CLEAR = "\u001b[2J";
const TITLE = "\u001b]0;PWNED\u0007";
const HOSTILE = [RESET, CLEAR, "\u001b]0;PWNED"];

let home = "";
let workspace = "";
let sessionDir = "";
let id = "";
const terminals: PseudoTerminal[] = [];

function environment(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, TERM: "xterm-256color", INIT_CWD: workspace };
  for (const name of ["NO_COLOR", "PI_COURSE_CONFIG", "PI_COURSE_BASE_URL", "PI_COURSE_MODEL", "PI_COURSE_PROVIDER"]) {
    delete env[name];
  }
  env.PI_COURSE_SESSION_DIR = sessionDir;
  return env;
}

beforeAll(async () => {
  // The real path: on macOS the temporary folder is a symlink (/var -> /private/var).
  home = await realpath(await mkdtemp(path.join(tmpdir(), "pi-hostile-home-")));
  workspace = await realpath(await mkdtemp(path.join(tmpdir(), "pi-hostile-work-")));
  sessionDir = path.join(home, "sessions");
  const folder = path.join(sessionDir, folderKey(workspace));
  await mkdir(folder, { recursive: true });
  // A readable session whose id and first prompt carry escapes.
  id = `evil${TITLE}${CLEAR}${RESET}x`;
  const session = await SessionFile.create(path.join(folder, `2026-01-01T00-00-00-000Z_evil${CLEAR}.jsonl`), {
    cwd: workspace,
    id,
  });
  const first = await session.append({
    type: "message",
    parentId: null,
    message: { role: "user", content: [{ type: "text", text: `first prompt ${TITLE}${RESET}done` }], timestamp: 1 },
  });
  await session.append({
    type: "message",
    parentId: first,
    message: {
      role: "assistant",
      content: [{ type: "text", text: `answer ${CLEAR}` }],
      provider: "p",
      model: "m",
      usage: { input: 0, output: 0, totalTokens: 0 },
      stopReason: "stop",
      timestamp: 2,
    },
  });
  await session.close();
  // An unreadable one whose name carries escapes.
  await writeFile(path.join(folder, `2025-01-01T00-00-00-000Z_${RESET}bad${TITLE}.jsonl`), "not a session\n");
});
afterEach(async () => {
  // A terminal left running would hold the session's write lock for the next test.
  for (const terminal of terminals.splice(0)) {
    terminal.kill();
    await terminal.exit;
  }
});
afterAll(async () => {
  await rm(home, { recursive: true, force: true });
  await rm(workspace, { recursive: true, force: true });
});

describe("a hostile sessions folder", () => {
  it("in the pseudo-terminal: --continue, the replay, /sessions, /resume and the Up arrow show escapes neutralised", async () => {
    const t = openTerminal([process.execPath, builtStart(), "--continue"], {
      cwd: workspace,
      env: environment(),
    });
    terminals.push(t);
    await t.waitFor(/Type a message/, 30_000);
    t.type(`/sessions${KEY.enter}`);
    await t.waitFor(/unreadable/, 10_000);
    t.type(`/resume evil${KEY.enter}`);
    await t.waitFor(/resumed session/, 10_000);
    await t.waitFor(/─{20}/, 10_000);
    // Up past the two commands typed here, to the resumed session's first prompt.
    t.type(KEY.up + KEY.up + KEY.up);
    await t.waitFor(/first prompt \\u001b\]0;PWNED\\u0007\\u001bcdone/, 10_000);
    t.type(KEY.ctrlU);
    t.type(KEY.ctrlD);
    await t.exit;
    const raw = t.raw();
    for (const sequence of HOSTILE) expect(raw).not.toContain(sequence);
    const shown = t.text();
    expect(shown).toContain(`session:   evil\\u001b]0;PWNED\\u0007\\u001b[2J\\u001bcx (`);
    expect(shown).toContain("evil\\u001b]");
    expect(shown).toContain("resumed session evil\\u001b]0;PWNED\\u0007\\u001b[2J\\u001bcx (2 messages)");
    expect(shown).toContain("\\u001bcbad\\u001b]0  ");
  }, 60_000);

  it("--print --continue: the header line on stderr shows escapes neutralised", async () => {
    const { code, stderr } = await new Promise<{ code: number | null; stderr: string }>((resolve, reject) => {
      const child = spawn(process.execPath, [builtStart(), "--print", "--continue"], {
        cwd: workspace,
        env: environment(),
        stdio: ["ignore", "pipe", "pipe"],
      });
      let err = "";
      child.stderr.on("data", (d: Buffer) => (err += d.toString("utf8")));
      child.stdout.resume();
      child.on("error", reject);
      child.on("close", (exit) => resolve({ code: exit, stderr: err }));
    });
    expect({ code, stderr }).toMatchObject({ code: 0 });
    for (const sequence of HOSTILE) expect(stderr).not.toContain(sequence);
    expect(stderr).toContain(`session:   evil\\u001b]0;PWNED\\u0007\\u001b[2J\\u001bcx (`);
  }, 60_000);
});
