/**
 * Issue 38: MCP tools are often named with hyphens (`get-sum`). Codemode declares such a name
 * quoted, as valid TypeScript, and a script calls it as `tools["…"](args)`.
 */
import { Type } from "typebox";
import ts from "typescript";
import { afterAll, expect, it } from "vitest";
import { toolDeclarations } from "../src/codemode/declarations.js";
import { CodeSandbox } from "../src/codemode/sandbox.js";
import type { AgentTool } from "../src/index.js";

const tool = (name: string): AgentTool<any, any> => ({
  name,
  label: name,
  description: `The ${name} tool.`,
  parameters: Type.Object({ a: Type.Number(), b: Type.Number() }),
  execute: async () => ({ content: [], details: undefined }),
});

const sandbox = new CodeSandbox();
afterAll(() => sandbox.close());

it("a tool name with a hyphen is declared quoted (valid TypeScript) and called with brackets", async () => {
  const declarations = toolDeclarations([tool("read"), tool("mcp__everything__get-sum")]);
  expect(declarations).toContain('  "mcp__everything__get-sum"(args: { a: number; b: number }): Promise<string>;');
  expect(declarations).toContain('Call it as tools["mcp__everything__get-sum"](args).');
  expect(declarations).toContain("  read(args: { a: number; b: number }): Promise<string>;");
  const parsed = ts.createSourceFile("d.ts", declarations, ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);
  expect((parsed as unknown as { parseDiagnostics: unknown[] }).parseDiagnostics).toEqual([]);
  const outcome = await sandbox.run({
    code: 'return await tools["mcp__everything__get-sum"]({ a: 1, b: 2 });',
    tools: ["mcp__everything__get-sum"],
    callTool: async (name, args) => ({ text: `${name}: ${JSON.stringify(args)}`, isError: false }),
  });
  expect(outcome).toMatchObject({ ok: true, value: 'mcp__everything__get-sum: {"a":1,"b":2}' });
});

it("a name left out for the budget is listed as it is called", () => {
  const declarations = toolDeclarations([tool("read"), tool("mcp__x__get-sum")], 10);
  expect(declarations).toContain('// also callable, same way: read, tools["mcp__x__get-sum"]');
});
