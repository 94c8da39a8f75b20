/**
 * The MCP servers of a project in a real pseudo-terminal: the project's `.pi-course/mcp.json` is
 * named in the trust question (it starts programs), starts once the folder is trusted, and `/mcp`
 * shows each server's state. server-everything is the real reference server.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { serverEntry } from "./support/mcp.js";
import { SseServer } from "./support/sse-server.js";
import { KEY, openTerminal, type PseudoTerminal } from "./support/terminal.js";
import { builtStart } from "./support/built-cli.js";

let dir: string;
let model: SseServer | undefined;
let terminal: PseudoTerminal | undefined;

beforeEach(() => {
  dir = realpathSync(mkdtempSync(path.join(tmpdir(), "pi-cli-mcp-")));
});
afterEach(async () => {
  terminal?.kill();
  await model?.close();
  rmSync(dir, { recursive: true, force: true });
});

it("a project's mcp.json is named in the trust question, starts once trusted, and /mcp shows its state", async () => {
  const project = path.join(dir, "project");
  const home = path.join(dir, "home");
  mkdirSync(path.join(project, ".pi-course"), { recursive: true });
  mkdirSync(home);
  const config = path.join(project, ".pi-course", "mcp.json");
  writeFileSync(
    config,
    JSON.stringify({
      mcpServers: {
        everything: { command: process.execPath, args: [serverEntry("server-everything"), "stdio"] },
        missing: { command: "no-such-mcp-server-here" },
      },
    }),
  );
  model = await SseServer.start();
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, TERM: "xterm-256color", INIT_CWD: project };
  for (const name of ["NO_COLOR", "PI_COURSE_CONFIG", "PI_COURSE_BASE_URL", "PI_COURSE_MODEL", "PI_COURSE_PROVIDER"])
    delete env[name];
  const args = ["--base-url", model.baseUrl, "--model", "m", "--no-api-key", "--cwd", project, "--no-session"];
  terminal = openTerminal([process.execPath, builtStart(), ...args], { cwd: project, env, columns: 200 });
  await terminal.waitFor(`The folder ${project} holds project resources`);
  await terminal.waitFor(config);
  await terminal.waitFor("(y/N) ");
  terminal.type(`y${KEY.enter}`);
  await terminal.waitFor("note: MCP server everything: ready with", 45_000);
  await terminal.waitFor('note: MCP server missing failed: cannot start "no-such-mcp-server-here"');
  await terminal.waitFor("› ");
  terminal.type(`/mcp${KEY.enter}`);
  await terminal.waitFor(/everything: ready with \d+ tools/);
  await terminal.waitFor('missing: failed: cannot start "no-such-mcp-server-here": no such program');
  await terminal.waitFor("› ");
  terminal.type(`/exit${KEY.enter}`);
  expect(await terminal.exit).toBe(0);
  // no model was called: the servers started with the conversation, not with a prompt
  expect(model.requests).toEqual([]);
}, 60_000);
