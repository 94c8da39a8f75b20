/**
 * `npm start -- mcp add | list | get | remove`: the user's and the project's mcp.json edited as
 * other agents edit theirs, run in process through `runMain`; the files are real.
 */
import {
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { runMain } from "../src/cli/main.js";
import { loadMcpConfig } from "../src/mcp/config.js";

let dir: string;
let home: string;
let project: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), "pi-mcp-command-"));
  home = path.join(dir, "home");
  project = path.join(dir, "project");
  mkdirSync(home);
  mkdirSync(project);
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

async function mcp(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const code = await runMain(["mcp", ...argv], {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    env: { HOME: home, INIT_CWD: project },
  });
  return { code, stdout, stderr };
}

it("add writes a stdio or an HTTP server to the user's file (0600, other keys kept), list and get show it, remove takes it out; the project's behind the trust gate", async () => {
  const user = path.join(home, ".pi-course", "mcp.json");
  mkdirSync(path.dirname(user));
  writeFileSync(user, JSON.stringify({ note: "mine", mcpServers: { old: { command: "old-server" } } }));
  expect(await mcp("add", "fs", "--env", "TOKEN=${FS_TOKEN}", "--", "npx", "-y", "server-fs", ".")).toEqual({
    code: 0,
    stdout: `added the MCP server fs to ${user}\n`,
    stderr: "",
  });
  expect(
    (await mcp("add", "web", "--header", "Authorization: Bearer ${WEB_TOKEN}", "https://example.com/mcp")).code,
  ).toBe(0);
  expect(JSON.parse(readFileSync(user, "utf8"))).toEqual({
    note: "mine",
    mcpServers: {
      old: { command: "old-server" },
      fs: { command: "npx", args: ["-y", "server-fs", "."], env: { TOKEN: "${FS_TOKEN}" } },
      web: { url: "https://example.com/mcp", headers: { Authorization: "Bearer ${WEB_TOKEN}" } },
    },
  });
  expect(statSync(user).mode & 0o777).toBe(0o600);
  // a run reads what was written
  const read = loadMcpConfig({ home, projectTrusted: false, files: [], env: { FS_TOKEN: "t", WEB_TOKEN: "w" } });
  expect(read.servers.map((server) => [server.name, server.problem])).toEqual([
    ["old", undefined],
    ["fs", undefined],
    ["web", undefined],
  ]);

  expect((await mcp("add", "local", "--project", "--", "node", "server.mjs")).code).toBe(0);
  const projectFile = path.join(project, ".pi-course", "mcp.json");
  expect((await mcp("list")).stdout).toBe(
    `old  old-server  (user: ${user})\n` +
      `fs  npx -y server-fs .  (user: ${user})\n` +
      `web  https://example.com/mcp  (user: ${user})\n` +
      `local  node server.mjs  (project: ${projectFile}; starts once this folder is trusted)\n`,
  );
  expect((await mcp("get", "fs")).stdout).toBe(
    `fs (user: ${user})\n${JSON.stringify({ command: "npx", args: ["-y", "server-fs", "."], env: { TOKEN: "${FS_TOKEN}" } }, null, 2)}\n`,
  );
  expect(await mcp("remove", "fs")).toEqual({
    code: 0,
    stdout: `removed the MCP server fs from ${user}\n`,
    stderr: "",
  });
  expect(Object.keys(JSON.parse(readFileSync(user, "utf8")).mcpServers)).toEqual(["old", "web"]);
});

it("mistakes are refused with what to do, and nothing is written", async () => {
  const user = path.join(home, ".pi-course", "mcp.json");
  expect((await mcp("add", "web", "ftp://example.com")).stderr).toBe(
    `error: server "web" in ${user}: "url" must be http or https: ftp://example.com\n`,
  );
  expect((await mcp("add", "web", "https://example.com/mcp")).code).toBe(0);
  expect((await mcp("add", "web", "https://example.com/other")).stderr).toBe(
    `error: ${user} already has a server named "web"; remove it first\n`,
  );
  expect((await mcp("remove", "nope")).stderr).toBe(`error: ${user} has no server named "nope"\n`);
  expect((await mcp("get", "nope")).code).toBe(1);
  const wrong = await mcp("add", "x", "--header", "A: b", "--", "node", "s.mjs");
  expect([wrong.code, wrong.stderr.split("\n")[0]]).toEqual([
    2,
    "error: --header goes with a URL; a COMMAND takes --env.",
  ]);
  expect((await mcp("frobnicate")).stderr.split("\n")[0]).toBe("error: mcp frobnicate is not a command.");
  writeFileSync(user, "{ not json");
  const broken = await mcp("add", "y", "https://example.com/mcp");
  expect([broken.code, broken.stderr]).toEqual([1, expect.stringContaining(`${user} is not JSON`)]);
  expect(readFileSync(user, "utf8")).toBe("{ not json");
});

/** The user's own file, with a literal key in it (as people do write them). */
function usersFile(): { file: string; text: string } {
  const file = path.join(home, ".pi-course", "mcp.json");
  mkdirSync(path.dirname(file), { recursive: true });
  const text = JSON.stringify({
    mcpServers: { mine: { url: "https://example.com/mcp", headers: { Authorization: "Bearer sk-live-secret" } } },
  });
  writeFileSync(file, text);
  return { file, text };
}

it("add|remove --project refuse a clone whose mcp.json links to the user's file: nothing of the user's is copied into the project", async () => {
  const user = usersFile();
  mkdirSync(path.join(project, ".pi-course"));
  const link = path.join(project, ".pi-course", "mcp.json");
  symlinkSync(user.file, link);
  for (const argv of [
    ["add", "x", "--project", "--", "node", "s.mjs"],
    ["remove", "mine", "--project"],
  ]) {
    const refused = await mcp(...argv);
    expect(refused).toEqual({
      code: 1,
      stdout: "",
      stderr:
        `error: ${link} is a symbolic link (to ${user.file}): the project's MCP configuration must be a real file ` +
        "inside the project, so it is neither read nor written; replace it with one\n",
    });
  }
  expect(lstatSync(link).isSymbolicLink()).toBe(true);
  expect(readFileSync(user.file, "utf8")).toBe(user.text);
  for (const name of readdirSync(path.join(project, ".pi-course")))
    expect(lstatSync(path.join(project, ".pi-course", name)).isSymbolicLink(), name).toBe(true);
});

it("add|remove --project refuse a clone whose .pi-course links to the user's folder: the user's file is not written as the project's", async () => {
  const user = usersFile();
  symlinkSync(path.dirname(user.file), path.join(project, ".pi-course"));
  for (const argv of [
    ["add", "evil", "--project", "--", "node", "evil.mjs"],
    ["remove", "mine", "--project"],
  ]) {
    const refused = await mcp(...argv);
    expect([refused.code, refused.stderr]).toEqual([
      1,
      `error: ${path.join(project, ".pi-course")} is a symbolic link (to ${path.dirname(user.file)}): the project's MCP ` +
        "configuration must be a real folder inside the project, so it is neither read nor written; replace it with one\n",
    ]);
  }
  expect(readFileSync(user.file, "utf8")).toBe(user.text);
  expect(readdirSync(path.dirname(user.file))).toEqual(["mcp.json"]);
  // list still lists the user's servers, and says why the project's file is not read
  const listed = await mcp("list");
  expect(listed.stdout).toBe(`mine  https://example.com/mcp  (user: ${user.file})\n`);
  expect(listed.stderr).toContain(`warning: ${path.join(project, ".pi-course")} is a symbolic link`);
});

it("list and get say which file each entry came from; in an untrusted folder get shows the user's entry, trusted the project's", async () => {
  const user = path.join(home, ".pi-course", "mcp.json");
  mkdirSync(path.dirname(user));
  writeFileSync(user, JSON.stringify({ mcpServers: { srv: { command: "mine" } } }));
  mkdirSync(path.join(project, ".pi-course"));
  const projectFile = path.join(project, ".pi-course", "mcp.json");
  writeFileSync(projectFile, JSON.stringify({ mcpServers: { srv: { command: "theirs" } } }));
  expect((await mcp("list")).stdout).toBe(
    `srv  mine  (user: ${user})\nsrv  theirs  (project: ${projectFile}; starts once this folder is trusted)\n`,
  );
  expect((await mcp("get", "srv")).stdout).toBe(
    `srv (user: ${user})\n${JSON.stringify({ command: "mine" }, null, 2)}\n`,
  );
  writeFileSync(
    path.join(home, ".pi-course", "trust.json"),
    JSON.stringify({ version: 1, folders: { [realpathSync(project)]: { trusted: true } } }),
  );
  expect((await mcp("get", "srv")).stdout).toBe(
    `srv (project: ${projectFile})\n${JSON.stringify({ command: "theirs" }, null, 2)}\n`,
  );
});

it("names and entries a project's file chose reach the terminal through the guard: no escape sequence, no forged line", async () => {
  mkdirSync(path.join(project, ".pi-course"));
  const projectFile = path.join(project, ".pi-course", "mcp.json");
  const name = "srv\u001b[2J\nnote: MCP server github: ready";
  writeFileSync(
    projectFile,
    JSON.stringify({ mcpServers: { [name]: { command: "node", args: ["a\u202eb", "x\ny"] } } }),
  );
  const listed = await mcp("list");
  expect(listed.stdout).toBe(
    "srv\\u001b[2J\n  │ note: MCP server github: ready  node a\\u202eb x\n  │ y  " +
      `(project: ${projectFile}; starts once this folder is trusted)\n`,
  );
  const got = await mcp("get", name);
  expect(got.stdout.split("\n").slice(0, 2)).toEqual([
    "srv\\u001b[2J",
    "  │ note: MCP server github: ready (project: " + projectFile + "; starts once this folder is trusted)",
  ]);
  expect(got.stdout).not.toMatch(/[\u001b\u202e]/);
});
