import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Type } from "typebox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseArgs } from "../src/cli/args.js";
import { runMain } from "../src/cli/main.js";
import { DEFER_MCP_TOOLS_ABOVE, deferMcpTools, exposeTools } from "../src/cli/tool-declaration.js";
import { TracePrinter } from "../src/cli/trace.js";
import { defineTool } from "../src/index.js";
import type { AgentTool } from "../src/index.js";
import { answerTurn, callTurn, scriptedChatServer } from "./support/chat-turns.js";
import { MANY_TOOLS_SERVER } from "./support/mcp.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "pi-codemode-cli-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const tool = (name: string): AgentTool<any, any> =>
  defineTool({
    name,
    label: name,
    description: `the ${name} tool`,
    parameters: Type.Object({}),
    execute: async () => ({ content: [{ type: "text", text: name }], details: undefined }),
  });

const offered = (body: any): string[] => body.tools.map((t: { function: { name: string } }) => t.function.name);

async function run(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const code = await runMain(argv, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    env: { HOME: dir, INIT_CWD: dir },
  });
  return { code, stdout, stderr };
}

describe("tool exposure in the CLI", () => {
  it("defers MCP tools above the threshold behind tool_search; with --codemode they are behind the code tool only; a server's own exposure wins", () => {
    const own = [tool("read"), tool("bash")];
    const few = Array.from({ length: DEFER_MCP_TOOLS_ABOVE }, (_, i) => tool(`mcp__s__t${i}`));
    const plain = exposeTools(own, few);
    expect(plain.note).toBeUndefined();
    expect(plain.tools.every((t) => t.exposure === undefined)).toBe(true);
    const many = [...few, tool("mcp__s__extra")];
    const deferred = exposeTools(own, many);
    expect(deferred.tools.map((t) => t.name).slice(0, 3)).toEqual(["read", "bash", "tool_search"]);
    expect(deferred.tools.filter((t) => t.exposure === "deferred")).toHaveLength(21);
    expect(deferred.note).toBe(
      "21 MCP tools (more than 20) are deferred: the model finds them with tool_search, and each is declared to it once found",
    );
    // --codemode: no MCP tool is declared twice (directly and in the code tool's description)
    const coded = exposeTools(own, many, { codemode: true });
    expect(coded.tools.map((t) => t.name).slice(0, 4)).toEqual(["code", "read", "bash", "mcp__s__t0"]);
    expect(coded.tools.filter((t) => t.exposure === "codemode")).toHaveLength(21);
    expect(coded.note).toBe(
      "21 MCP tools are reached through the code tool (--codemode): declared in its description only",
    );
    // a server that set its exposure keeps it: 2 direct ones stay direct, 21 others are deferred
    const pinned = [tool("mcp__p__a"), tool("mcp__p__b")].map((t) => ({ ...t, exposure: "direct" as const }));
    const mixed = deferMcpTools([...pinned, ...many], { servers: ["p", "s"] });
    expect(mixed.tools.map((t) => [t.name, t.exposure]).slice(0, 3)).toEqual([
      ["tool_search", undefined],
      ["mcp__p__a", "direct"],
      ["mcp__p__b", "direct"],
    ]);
    expect(mixed.tools[0]!.description).toMatch(
      /^Searches 21 more tools \(the MCP servers p, s\) that are not declared/,
    );
  });

  it('codemode is a setting: --codemode, else $PI_COURSE_CODEMODE, else "codemode" in the config file; a bad value is a usage error naming where it came from', async () => {
    const home = { HOME: dir, INIT_CWD: dir };
    expect(parseArgs(["--no-session"], home, false)).toMatchObject({ codemode: false });
    expect(parseArgs(["--no-session", "--codemode"], home, false)).toMatchObject({ codemode: true });
    expect(parseArgs(["--no-session"], { ...home, PI_COURSE_CODEMODE: "on" }, false)).toMatchObject({ codemode: true });
    expect(() => parseArgs(["--no-session"], { ...home, PI_COURSE_CODEMODE: "maybe" }, false)).toThrow(
      '$PI_COURSE_CODEMODE must be 1, on or true (or 0, off, false), got "maybe".',
    );
    const config = path.join(dir, "codemode-config.json");
    const withConfig =
      (value: string, env: NodeJS.ProcessEnv = {}) =>
      async (argv: string[] = []) => {
        await writeFile(config, JSON.stringify({ codemode: value }));
        return parseArgs(["--no-session", "--config", config, ...argv], { ...home, ...env }, false);
      };
    expect(await withConfig("true")()).toMatchObject({ codemode: true });
    // the environment wins over the file, the flag over both
    expect(await withConfig("true", { PI_COURSE_CODEMODE: "off" })()).toMatchObject({ codemode: false });
    expect(await withConfig("off", { PI_COURSE_CODEMODE: "0" })(["--codemode"])).toMatchObject({ codemode: true });
    await expect(withConfig("sometimes")()).rejects.toThrow(
      `"codemode" in ${config} must be 1, on or true (or 0, off, false), got "sometimes".`,
    );
  });

  it("the trace shows a script's nested calls under the script", () => {
    let text = "";
    const trace = new TracePrinter({ write: (t) => (text += t), color: false, json: false });
    const result = { content: [{ type: "text" as const, text: "ok" }], details: undefined };
    trace.print({ type: "tool_execution_start", toolCallId: "s1", toolName: "code", args: { code: "…" } });
    trace.print({ type: "tool_execution_start", toolCallId: "s1.1", toolName: "ls", args: {}, parentToolCallId: "s1" });
    trace.print({
      type: "tool_execution_end",
      toolCallId: "s1.1",
      toolName: "ls",
      result,
      isError: false,
      parentToolCallId: "s1",
    });
    trace.print({ type: "tool_execution_end", toolCallId: "s1", toolName: "code", result, isError: false });
    const lines = text.split("\n").filter((line) => line.includes("tool_execution"));
    const indent = (line: string) => line.length - line.trimStart().length;
    expect(lines.map(indent)).toEqual([
      indent(lines[0]!),
      indent(lines[0]!) + 2,
      indent(lines[0]!) + 2,
      indent(lines[0]!),
    ]);
    expect(lines[1]).toContain("ls s1.1");
  });
});

describe("the CLI end to end", () => {
  it("with 25 MCP tools the model sees tool_search, finds city_weather, and calls it on its next turn", async () => {
    const config = path.join(dir, "many.json");
    await writeFile(
      config,
      JSON.stringify({ mcpServers: { many: { command: process.execPath, args: [MANY_TOOLS_SERVER] } } }),
    );
    const workspace = path.join(dir, "w1");
    await mkdir(workspace, { recursive: true });
    const server = await scriptedChatServer([
      callTurn("call_1", "tool_search", { query: "weather forecast city" }),
      callTurn("call_2", "mcp__many__city_weather", { city: "Oslo" }),
      answerTurn((body) => `It is ${body.messages.at(-1).content}.`),
    ]);
    let result: Awaited<ReturnType<typeof run>>;
    try {
      result = await run([
        ...["--base-url", server.baseUrl, "--model", "m", "--no-api-key", "--cwd", workspace, "--no-session"],
        ...["--mcp-config", config, "-p", "weather in Oslo?"],
      ]);
    } finally {
      await server.close();
    }
    expect(result.code).toBe(0);
    expect(result.stdout).toBe("It is sunny in Oslo.\n");
    expect(result.stderr).toContain(
      "note: 25 MCP tools (more than 20) are deferred: the model finds them with tool_search, and each is declared to it once found\n",
    );
    const first = offered(server.bodies[0]);
    expect(first).toContain("tool_search");
    expect(first.filter((name) => name.startsWith("mcp__"))).toEqual([]);
    expect(offered(server.bodies[1]).filter((name) => name.startsWith("mcp__"))[0]).toBe("mcp__many__city_weather");
  }, 30_000);

  it("--codemode: the model's one script lists and reads files in one turn", async () => {
    const workspace = path.join(dir, "w2");
    await mkdir(workspace, { recursive: true });
    await writeFile(path.join(workspace, "a.txt"), "alpha\n");
    await writeFile(path.join(workspace, "b.txt"), "beta\n");
    const script =
      "const names = (await tools.ls({ path: '.' })).split('\\n').filter((n) => n.endsWith('.txt'));\n" +
      "const texts = [];\nfor (const name of names) texts.push((await tools.read({ path: name })).trim());\nreturn texts;";
    const server = await scriptedChatServer([
      callTurn("call_1", "code", { code: script }),
      answerTurn((body) => body.messages.at(-1).content),
    ]);
    let result: Awaited<ReturnType<typeof run>>;
    try {
      result = await run([
        ...["--base-url", server.baseUrl, "--model", "m", "--no-api-key", "--cwd", workspace, "--no-session"],
        ...["--codemode", "-p", "read every text file"],
      ]);
    } finally {
      await server.close();
    }
    expect(result.code).toBe(0);
    expect(offered(server.bodies[0])[0]).toBe("code");
    expect(result.stdout).toBe('Result: ["1\\talpha","1\\tbeta"]\nTool calls: 3\n');
  }, 30_000);
});
