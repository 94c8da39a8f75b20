/**
 * The project around the agent through the command line, as a user meets it: the BUILT bin
 * (the sources bundled as `dist/cli/start.js` is, support/built-cli.ts) loads a TypeScript and a JavaScript
 * extension with no tsx anywhere, against a replay server on 127.0.0.1 whose recorded requests
 * show what the model saw; an untrusted project's extension is never imported (a side-effect
 * file proves it); and, in a real pseudo-terminal, the trust question is answered, a skill is
 * activated, a template expanded and an extension command run.
 */
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, realpathSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { CliUsageError, parseArgs } from "../src/cli/args.js";
import { builtStart } from "./support/built-cli.js";
import { SseServer, sseReply } from "./support/sse-server.js";
import { KEY, openTerminal, type PseudoTerminal } from "./support/terminal.js";

let base: string;
let home: string;
let project: string;
let sideEffect: string;
const servers: SseServer[] = [];
const terminals: PseudoTerminal[] = [];

let bin: string;
beforeAll(() => {
  bin = builtStart();
}, 240_000);

beforeAllProject();
afterEach(async () => {
  for (const terminal of terminals.splice(0)) terminal.kill();
  for (const server of servers.splice(0)) await server.close();
});

/** A cloned repository with every kind of resource, and a home with a user skill. */
function beforeAllProject(): void {
  beforeAll(() => {
    // The real path: on macOS the temporary folder is a symlink (/var -> /private/var).
    base = realpathSync(mkdtempSync(path.join(tmpdir(), "pi-course-cli-res-")));
    home = path.join(base, "home");
    project = path.join(base, "repo");
    sideEffect = path.join(base, "project-extension-imported.txt");
    mkdirSync(home, { recursive: true });
    execFileSync("git", ["init", "-q", project]);
    const files: Record<string, string> = {
      "repo/AGENTS.md": "Always run the tests before answering.",
      "repo/a.ts": "export const a = 1;\n",
      "repo/.pi-course/skills/release/SKILL.md":
        "---\nname: release\ndescription: Cuts a release. Use when asked to release.\n---\nBump the version, then tag it.\n",
      "repo/.pi-course/skills/release/references/checklist.md": "1. tests green",
      "repo/.pi-course/prompts/review.md":
        "---\ndescription: Review a file\nargument-hint: <file> [focus]\n---\nReview $1 for ${2:-bugs}.\n",
      "repo/.pi-course/extensions/shout.ts":
        "interface Args { text: string }\n" +
        `import { writeFileSync } from "node:fs";\nwriteFileSync(${JSON.stringify(sideEffect)}, "imported");\n` +
        "export default function (api: any): void {\n" +
        '  api.registerTool({ name: "shout", label: "Shout", description: "Says it loudly.", parameters: api.Type.Object({ text: api.Type.String() }),\n' +
        '    execute: async (_id: string, args: Args) => ({ content: [{ type: "text", text: args.text.toUpperCase() }], details: undefined }) });\n' +
        '  api.registerCommand("hi", { description: "Greets", run: (args: string) => `hi ${args}!` });\n' +
        "}\n",
      "policy.mjs":
        "export default (api) => {\n" +
        '  api.beforeToolCall((call) => call.toolName === "bash" ? { block: true, reason: "bash is off today" } : undefined);\n' +
        '  api.addSystemPrompt("Policy: no bash.");\n' +
        '  api.registerCommand("tree", { description: "Mine", run: () => "mine" });\n' +
        '  api.registerCommand("thinking", { description: "Mine", run: () => "mine" });\n' +
        "};\n",
      "flags.mjs":
        "export default (api) => {\n" +
        '  api.registerFlag("tone", { description: "how to answer", type: "string", default: "calm" });\n' +
        '  api.registerFlag("loud", { description: "answer loudly" });\n' +
        '  api.registerFlag("model", { description: "taken" });\n' +
        '  api.registerTool({ name: "tone", label: "Tone", description: "The tone.", parameters: api.Type.Object({}),\n' +
        '    execute: async () => ({ content: [{ type: "text", text: `${api.getFlag("tone")} ${api.getFlag("loud") === true ? "loud" : "quiet"}` }], details: undefined }) });\n' +
        "};\n",
      "home/.pi-course/skills/notes/SKILL.md": "---\nname: notes\ndescription: Takes notes.\n---\nWrite notes.\n",
    };
    for (const [name, text] of Object.entries(files)) {
      mkdirSync(path.dirname(path.join(base, name)), { recursive: true });
      writeFileSync(path.join(base, name), text);
    }
  });
  afterAll(() => rmSync(base, { recursive: true, force: true }));
}

function environment(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, TERM: "xterm-256color", INIT_CWD: project };
  for (const name of [
    "NO_COLOR",
    "PI_COURSE_CONFIG",
    "PI_COURSE_BASE_URL",
    "PI_COURSE_MODEL",
    "PI_COURSE_PROVIDER",
    "PI_COURSE_SESSION_DIR",
  ])
    delete env[name];
  return env;
}

/** A Chat Completions stream: text, or one call of `tool` with `args`. */
function chat(content: { text?: string; tool?: string; args?: object }): string {
  const chunk = (delta: object, reason: string | null) =>
    `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "m", choices: [{ index: 0, delta, finish_reason: reason }] })}\n\n`;
  let body = "";
  if (content.text !== undefined) body += chunk({ role: "assistant", content: content.text }, null);
  if (content.tool !== undefined) {
    const call = {
      index: 0,
      id: `call_${content.tool}`,
      type: "function",
      function: { name: content.tool, arguments: JSON.stringify(content.args ?? {}) },
    };
    body += chunk({ role: "assistant", tool_calls: [call] }, null);
  }
  return body + chunk({}, content.tool ? "tool_calls" : "stop") + "data: [DONE]\n\n";
}

async function server(): Promise<SseServer> {
  const s = await SseServer.start();
  servers.push(s);
  return s;
}

function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], {
      cwd: project,
      env: environment(),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString("utf8")));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString("utf8")));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

const body = (s: SseServer, n: number) => JSON.parse(s.requests[n]!.body);

describe("the project around the agent, through the built bin", () => {
  it("the command line: --approve and --no-approve exclude each other; --extension names a file that exists", () => {
    const env = { HOME: home, INIT_CWD: project };
    const parse = (...args: string[]) => parseArgs(args, env, false);
    expect(parse("--no-session")).toMatchObject({ contextFiles: true, extensions: [] });
    expect(parse("--no-session", "--no-context-files", "--approve", "--extension", "../policy.mjs")).toMatchObject({
      contextFiles: false,
      approve: true,
      extensions: [path.join(base, "policy.mjs")],
    });
    expect(parse("--no-approve")).toMatchObject({ approve: false });
    expect(() => parse("--approve", "--no-approve")).toThrow(
      new CliUsageError("choose one of --approve and --no-approve."),
    );
    expect(() => parse("--extension", "missing.ts")).toThrow(
      new CliUsageError(`--extension missing.ts: ${path.join(project, "missing.ts")} is not a file.`),
    );
  });

  it("an untrusted project in print mode: its extension is never imported, its skills and templates are skipped, and the run says so", async () => {
    const s = (await server()).reply(sseReply(chat({ text: "Fine." })));
    const result = await run([
      "--base-url",
      s.baseUrl,
      "--model",
      "m",
      "--no-api-key",
      "--cwd",
      project,
      "--no-session",
      "--print",
      "hello",
    ]);
    expect(result.stderr).toContain(
      `note: 3 project resource(s) of ${project} skipped (1 skill, 1 template, 1 extension): it is not trusted yet: run with --approve, or answer the question in the interactive mode`,
    );
    expect(result).toMatchObject({ code: 0, stdout: "Fine.\n" });
    expect(existsSync(sideEffect)).toBe(false);
    const system: string = body(s, 0).messages[0].content;
    expect(system).toContain(
      `<project_instructions path="${path.join(project, "AGENTS.md")}">\nAlways run the tests before answering.\n</project_instructions>`,
    );
    expect(system).toContain("<name>notes</name>");
    expect(system).not.toContain("<name>release</name>");
    expect(body(s, 0).tools.map((t: { function: { name: string } }) => t.function.name)).toEqual([
      "read",
      "write",
      "edit",
      "ls",
      "bash",
      "skill",
    ]);
  }, 60_000);

  it("--approve: a TypeScript project extension and a JavaScript --extension load in the built bin; the model sees the skills, calls the extension's tool, and the policy hook blocks bash", async () => {
    const s = (await server())
      .reply(sseReply(chat({ tool: "shout", args: { text: "hey" } })))
      .reply(sseReply(chat({ tool: "bash", args: { command: "echo hi" } })))
      .reply(sseReply(chat({ text: "Reviewed." })));
    const result = await run([
      "--base-url",
      s.baseUrl,
      "--model",
      "m",
      "--no-api-key",
      "--cwd",
      project,
      "--no-session",
      "--approve",
      "--json",
      "--extension",
      path.join(base, "policy.mjs"),
      "/review a.ts speed",
    ]);
    expect(result.code).toBe(0);
    expect(readFileSync(sideEffect, "utf8")).toBe("imported");
    rmSync(sideEffect);
    expect(result.stderr).toContain(`trust:     ${project}: trusted (--approve/--no-approve)`);
    expect(result.stderr).toContain(`skills:    release (project), notes (user)`);
    expect(result.stderr).toContain(`templates: /review`);
    expect(result.stderr).toContain(
      `extension: ${path.join(base, "policy.mjs")} (flag: hooks 1 before, 0 after; a prompt section)`,
    );
    // A feature's commands are the conversation's as much as /help is: an extension cannot take them.
    for (const name of ["tree", "thinking"]) {
      expect(result.stderr).toContain(
        `warning: ${path.join(base, "policy.mjs")}: its command /${name} is left out: another command has that name`,
      );
    }
    expect(result.stderr).toContain(
      `extension: ${path.join(project, ".pi-course", "extensions", "shout.ts")} (project: tools shout; commands /hi)`,
    );
    const first = body(s, 0);
    expect(first.messages[1]).toEqual({ role: "user", content: "Review a.ts for speed." });
    expect(first.messages[0].content).toContain("<name>release</name>");
    expect(first.messages[0].content).toContain("Policy: no bash.");
    expect(first.tools.map((t: { function: { name: string } }) => t.function.name)).toEqual([
      "read",
      "write",
      "edit",
      "ls",
      "bash",
      "skill",
      "shout",
    ]);
    expect(body(s, 1).messages.at(-1)).toEqual({ role: "tool", tool_call_id: "call_shout", content: "HEY" });
    expect(body(s, 2).messages.at(-1)).toEqual({
      role: "tool",
      tool_call_id: "call_bash",
      content: `blocked by the extension ${path.join(base, "policy.mjs")}: bash is off today`,
    });
  }, 60_000);

  it("an extension's flags: read after it loads (a string flag's value is not part of the task), listed on its banner line; an option nobody added is still a usage error", async () => {
    const s = (await server())
      .reply(sseReply(chat({ tool: "tone", args: {} })))
      .reply(sseReply(chat({ text: "Done." })));
    const common = ["--base-url", s.baseUrl, "--model", "m", "--no-api-key", "--cwd", project, "--no-session"];
    const extension = ["--no-approve", "--print", "--extension", path.join(base, "flags.mjs")];
    const given = await run([...common, ...extension, "--tone", "sharp", "--loud", "say hi"]);
    expect(given.stderr).toContain(
      `extension: ${path.join(base, "flags.mjs")} (flag: tools tone; flags --tone, --loud)`,
    );
    expect(given.stderr).toContain(
      `warning: ${path.join(base, "flags.mjs")}: its flag --model is left out: another option has that name`,
    );
    expect([given.code, given.stdout]).toEqual([0, "Done.\n"]);
    expect(body(s, 0).messages.at(-1)).toEqual({ role: "user", content: "say hi" });
    expect(body(s, 1).messages.at(-1)).toEqual({ role: "tool", tool_call_id: "call_tone", content: "sharp loud" });

    const unknown = await run([...common, ...extension, "--tone", "sharp", "--bogus", "say hi"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("unknown option --bogus.");
    expect(s.requests).toHaveLength(2);
    // Without an extension to add it, an unknown option is refused before anything loads.
    const none = await run([...common, "--print", "--tone", "sharp", "say hi"]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain("unknown option --tone.");
    expect(none.stderr).not.toContain("trust:");
  }, 60_000);

  it("in a terminal: the trust question is asked once, then /skills, /hi, a template and /skill:release work", async () => {
    const s = (await server())
      .reply(sseReply(chat({ text: "Reviewed a.ts." })))
      .reply(sseReply(chat({ tool: "skill", args: { name: "release", path: "references/checklist.md" } })))
      .reply(sseReply(chat({ text: "Released." })));
    const args = ["--base-url", s.baseUrl, "--model", "m", "--no-api-key", "--cwd", project, "--no-session"];
    const t = openTerminal([process.execPath, bin, ...args], { cwd: project, env: environment(), columns: 200 });
    terminals.push(t);
    await t.waitFor(`The folder ${project} holds project resources`);
    await t.waitFor("(y/N) ");
    t.type(`y${KEY.enter}`);
    await t.waitFor(`trust:     ${project}: trusted (your answer)`);
    await t.waitFor("› ");
    t.type(`/skills${KEY.enter}`);
    await t.waitFor("release (project): Cuts a release. Use when asked to release.");
    await t.waitFor("notes (user): Takes notes.");
    await t.waitFor("› ");
    t.type(`/hi there${KEY.enter}`);
    await t.waitFor("hi there!");
    await t.waitFor("› ");
    // an extension's command is a row of the command table: /help lists it before /exit
    t.type(`/help${KEY.enter}`);
    await t.waitFor(/\/hi +Greets \(extension\)\s+\/exit/);
    const help = await t.waitFor("› ");
    const listed = help.slice(help.lastIndexOf("/help "));
    expect(listed.match(/^\/skills +the skills found/gm)).toHaveLength(1); // once, not again under the resources'
    t.type(`/review a.ts${KEY.enter}`);
    await t.waitFor("↳ /review expanded");
    await t.waitFor("Reviewed a.ts.");
    await t.waitFor("› ");
    t.type(`/skill:release now${KEY.enter}`);
    await t.waitFor("↳ skill release activated");
    await t.waitFor("Released.");
    await t.waitFor("› ");
    t.type(`/exit${KEY.enter}`);
    expect(await t.exit).toBe(0);
    expect(body(s, 0).messages.at(-1)).toEqual({ role: "user", content: "Review a.ts for bugs." });
    const skillPrompt = path.join(project, ".pi-course", "skills", "release");
    expect(body(s, 1).messages.at(-1)).toEqual({
      role: "user",
      content: `<skill name="release" location="${path.join(skillPrompt, "SKILL.md")}">\nReferences are relative to ${skillPrompt}.\n\nBump the version, then tag it.\n</skill>\n\nnow`,
    });
    // the user activated it, so the model may read its files
    expect(body(s, 2).messages.at(-1)).toEqual({ role: "tool", tool_call_id: "call_skill", content: "1. tests green" });
    const saved = JSON.parse(readFileSync(path.join(home, ".pi-course", "trust.json"), "utf8"));
    expect(saved.folders[project]).toMatchObject({ trusted: true });
    // asked once: the next start does not ask again
    const again = openTerminal([process.execPath, bin, ...args], { cwd: project, env: environment(), columns: 200 });
    terminals.push(again);
    await again.waitFor(`trust:     ${project}: trusted (saved decision)`);
    await again.waitFor("› ");
    expect(again.text()).not.toContain("(y/N)");
    again.type(`/exit${KEY.enter}`);
    expect(await again.exit).toBe(0);
  }, 90_000);
});
