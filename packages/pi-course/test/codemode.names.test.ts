/**
 * Issue 38: MCP tools are often named with hyphens (`get-sum`). Codemode declares such a name
 * quoted, as valid TypeScript, and a script calls it as `tools["…"](args)`. Declarations are kept
 * short: a first sentence each, none for a tool the model has declared already.
 */
import { Type } from "typebox";
import ts from "typescript";
import { afterAll, expect, it } from "vitest";
import { createCodeTool } from "../src/codemode/code-tool.js";
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
  expect(declarations).toContain(
    '  // a quoted name is called with brackets: tools["mcp__everything__get-sum"](args)\n',
  );
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

it("a declaration is short: the first sentence of a description, cut at 120 characters; in the code tool a direct tool (declared to the model already) has no comment", () => {
  const long: AgentTool<any, any> = {
    ...tool("mcp__fs__list"),
    description: `List a folder. ${"Very detailed. ".repeat(20)}`,
    exposure: "codemode",
  };
  const longer: AgentTool<any, any> = { ...tool("mcp__fs__tree"), description: "x".repeat(300), exposure: "codemode" };
  const declarations = toolDeclarations([long, longer]);
  expect(declarations).toContain("  /** List a folder. */\n  mcp__fs__list(args");
  expect(declarations).toContain(`  /** ${"x".repeat(119)}… */\n  mcp__fs__tree(args`);
  const code = createCodeTool({ tools: [tool("read"), long], sandbox });
  expect(code.description).toContain("\n  read(args: { a: number; b: number }): Promise<string>;\n");
  expect(code.description).not.toContain("The read tool.");
  expect(code.description).toContain("  /** List a folder. */\n  mcp__fs__list(args");
});
