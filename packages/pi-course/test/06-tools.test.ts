import { Type } from "typebox";
import { describe, expect, expectTypeOf, it } from "vitest";
import {
  ToolArgumentsError,
  defineTool,
  parseToolArguments,
  prepareToolArguments,
  toToolDefinition,
  validateToolArguments,
} from "../src/index.js";
import type { AgentTool, AgentToolResult, ToolCall } from "../src/index.js";

const readParams = Type.Object({
  path: Type.String(),
  offset: Type.Optional(Type.Integer({ minimum: 1 })),
  limit: Type.Optional(Type.Number()),
  follow: Type.Optional(Type.Boolean()),
});

function tool<T extends typeof readParams>(
  parameters: T,
  extra: Partial<AgentTool<T, undefined>> = {},
): AgentTool<T, undefined> {
  return {
    name: "read",
    label: "Read",
    description: "Reads a file.",
    parameters,
    execute: async () => ({ content: [{ type: "text", text: "" }], details: undefined }),
    ...extra,
  };
}

function call(args: unknown, extra: Partial<ToolCall> = {}): ToolCall {
  return { type: "toolCall", id: "call_1", name: "read", arguments: args, ...extra };
}

function errorOf(run: () => unknown, what?: string): ToolArgumentsError {
  try {
    run();
  } catch (error) {
    if (!(error instanceof ToolArgumentsError)) throw error; // e.g. a construction site
    return error;
  }
  throw new Error(`expected a ToolArgumentsError${what === undefined ? "" : ` for ${what}`}, nothing was thrown`);
}

describe("chapter 06 · tools", () => {
  it("Lab 6.1 · valid arguments come back equal, as a new object", () => {
    const args = { path: "main.ts", offset: 2, follow: true };
    const toolCall = call(args);
    const out = validateToolArguments(tool(readParams), toolCall);
    expect(out).toEqual({ path: "main.ts", offset: 2, follow: true });
    expect(out).not.toBe(args);
    expect(toolCall.arguments).toBe(args);
  });

  it("Lab 6.1 · coercion table: numeric strings, boolean strings, numbers to strings", () => {
    const toolCall = call({ path: 42, offset: "3", limit: "-1.5e1", follow: "TRUE" });
    const before = structuredClone(toolCall);
    expect(validateToolArguments(tool(readParams), toolCall)).toEqual({
      path: "42",
      offset: 3,
      limit: -15,
      follow: true,
    });
    expect(toolCall).toEqual(before); // the call is never changed
    expect(validateToolArguments(tool(readParams), call({ path: "a", follow: " false " }))).toEqual({
      path: "a",
      follow: false,
    });
  });

  it("Lab 6.1 · coercion table: what is NOT guessed", () => {
    const schema = tool(readParams);
    // "4.5" is not an integer, "1" is not a boolean, "" and "abc" are not numbers, "0x10" is not JSON
    for (const args of [
      { path: "a", offset: "4.5" },
      { path: "a", follow: "1" },
      { path: "a", follow: 1 },
      { path: "a", limit: "" },
      { path: "a", limit: "abc" },
      { path: "a", limit: "0x10" },
      { path: null },
      { path: ["a"] },
    ]) {
      const what = `${JSON.stringify(args)} (not in the coercion table: it must be refused, not repaired)`;
      expect(errorOf(() => validateToolArguments(schema, call(args)), what).received, what).toEqual(args);
    }
  });

  it("Lab 6.1 · coercion table: double-encoded JSON, enum members, null for optional fields", () => {
    const params = Type.Object({
      paths: Type.Array(Type.String()),
      options: Type.Optional(Type.Object({ depth: Type.Integer() })),
      level: Type.Union([Type.Literal(1), Type.Literal(2)]),
      mode: Type.Optional(Type.Union([Type.Literal("fast"), Type.Literal("slow")])),
      note: Type.Optional(Type.String()),
      maybe: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    });
    const t = { ...tool(readParams), parameters: params } as unknown as AgentTool<typeof params>;
    const out = validateToolArguments(
      t,
      call({ paths: '["a","b"]', options: '{"depth":"2"}', level: "2", note: null, maybe: null }),
    );
    expect(out).toEqual({ paths: ["a", "b"], options: { depth: 2 }, level: 2, maybe: null });
    // the whole argument object double-encoded as a string
    expect(validateToolArguments(t, call('{"paths":[],"level":1}'))).toEqual({ paths: [], level: 1 });
    // nested items are coerced too
    const nums = Type.Object({ values: Type.Array(Type.Number()) });
    const tn = { ...tool(readParams), parameters: nums } as unknown as AgentTool<typeof nums>;
    expect(validateToolArguments(tn, call({ values: ["1", 2, "3.5"] }))).toEqual({ values: [1, 2, 3.5] });
  });

  it("Lab 6.1 · coercion table on plain JSON Schema (as MCP servers send it): const and enum without a type, allOf, a type list keeps what fits", () => {
    const schema = {
      type: "object",
      properties: {
        size: { enum: [1, 2, 3] },
        strict: { const: true },
        range: {
          allOf: [
            { type: "object", properties: { from: { type: "integer" } } },
            { type: "object", properties: { open: { type: "boolean" } } },
          ],
        },
        label: { type: ["string", "number"] },
        amount: { type: ["number", "boolean"] },
        flag: { type: ["number", "boolean"] },
        anything: {},
      },
      required: ["size", "strict"],
    };
    const t = { ...tool(readParams), parameters: schema } as unknown as AgentTool<typeof readParams>;
    const out = validateToolArguments(
      t,
      call({
        size: "3",
        strict: "true",
        range: { from: "2", open: "false" },
        label: "42",
        amount: "7",
        flag: "true",
        anything: "42",
      }),
    );
    expect(out).toEqual({
      size: 3,
      strict: true,
      range: { from: 2, open: false },
      label: "42", // already fits "string": kept as it is
      amount: 7,
      flag: true, // "number" cannot take it, "boolean" can
      anything: "42", // a schema with no type asks for nothing
    });
  });

  it("Lab 6.1 · coercion table: a string that is not JSON of the wanted kind is left for validation to refuse", () => {
    const schema = {
      type: "object",
      properties: { tags: { type: "array", items: { type: "number" } }, where: { type: "object" } },
    };
    const t = { ...tool(readParams), parameters: schema } as unknown as AgentTool<typeof readParams>;
    const error = errorOf(() => validateToolArguments(t, call({ tags: "nope", where: "here" })));
    expect(error.issues.map((issue) => issue.path).sort()).toEqual(["/tags", "/where"]);
    expect(error.received).toEqual({ tags: "nope", where: "here" });
  });

  it("Lab 6.1 · the error lists each failing field by path and the received arguments", () => {
    const args = { offset: "many", limit: true, follow: "yes" };
    const error = errorOf(() => validateToolArguments(tool(readParams), call(args)));
    expect(error.toolName).toBe("read");
    expect(error.received).toEqual(args);
    expect(error.issues.map((issue) => issue.path).sort()).toEqual(["/follow", "/limit", "/offset", "/path"]);
    expect(error.issues.find((issue) => issue.path === "/path")?.message).toBe("is required");
    expect(error.message).toContain('Invalid arguments for tool "read"');
    for (const path of ["/path", "/offset", "/limit", "/follow"]) expect(error.message).toContain(`${path}:`);
    expect(error.message).toContain(`Received arguments: ${JSON.stringify(args)}`);
  });

  it("Lab 6.1 · a failed union is one issue naming the allowed values", () => {
    const params = Type.Object({ mode: Type.Union([Type.Literal("fast"), Type.Literal("slow")]) });
    const t = { ...tool(readParams), parameters: params } as unknown as AgentTool<typeof params>;
    const error = errorOf(() => validateToolArguments(t, call({ mode: "medium" })));
    expect(error.issues).toEqual([{ path: "/mode", message: 'must be one of "fast", "slow"' }]);
  });

  it('Lab 6.1 · a "__proto__" key stays an own property of the copy, never a prototype', () => {
    const params = Type.Object({ path: Type.String() });
    const t = { ...tool(readParams), parameters: params } as unknown as AgentTool<typeof params>;
    const args = JSON.parse('{"path":"a","__proto__":{"polluted":true}}') as unknown;
    const out = validateToolArguments(t, call(args)) as Record<string, unknown>;
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.hasOwn(out, "__proto__")).toBe(true);
    expect(out.polluted).toBeUndefined();
    expect(out.path).toBe("a");
  });

  it("Lab 6.1 · arguments that are not an object, or not JSON data, are refused readably", () => {
    const error = errorOf(() => validateToolArguments(tool(readParams), call("not json")));
    expect(error.issues).toEqual([{ path: "", message: "must be object" }]);
    expect(error.message).toContain("(root): must be object");
    const weird = errorOf(() => validateToolArguments(tool(readParams), call({ path: () => 1 })));
    expect(weird.message).toContain("not plain JSON data");
  });

  it("Lab 6.1 · non-JSON arguments are shown readably in the error, never as [object Object]", () => {
    const args = { path: function opener() {}, size: 10n, at: new Date(0) };
    const error = errorOf(() => validateToolArguments(tool(readParams), call(args)));
    expect(error.received).toBe(args);
    expect(error.message).toBe(
      'Invalid arguments for tool "read":\n' +
        "the arguments are not plain JSON data (a function is not JSON)\n" +
        'Received arguments: {"path":[function opener],"size":10n,"at":Date(1970-01-01T00:00:00.000Z)}',
    );
    const cyclic: Record<string, unknown> = { path: "a" };
    cyclic.self = cyclic;
    const again = errorOf(() => validateToolArguments(tool(readParams), call(cyclic)));
    expect(again.message).toContain('Received arguments: {"path":"a","self":[circular]}');
  });

  it("Lab 6.2 · arguments that cannot be copied are refused as such, before prepareArguments runs", () => {
    let prepared = false;
    const t = tool(readParams, {
      prepareArguments(args) {
        prepared = true;
        return args;
      },
    });
    const error = errorOf(() => prepareToolArguments(t, call({ path: "a", size: 1n })));
    expect(prepared).toBe(false);
    expect(error.message).toBe(
      'Invalid arguments for tool "read":\n' +
        "the arguments are not plain JSON data (a bigint is not JSON)\n" +
        'Received arguments: {"path":"a","size":1n}',
    );
  });

  it("Lab 6.2 · prepareArguments repairs a copy before validation; the call is untouched", () => {
    const seen: unknown[] = [];
    const t = tool(readParams, {
      prepareArguments(args) {
        seen.push(args);
        const record = args as Record<string, unknown>;
        record.path = record.file_path; // a renamed field, repaired in place on the copy
        delete record.file_path;
        return record;
      },
    });
    const args = { file_path: "main.ts", offset: "2" };
    const toolCall = call(args);
    expect(prepareToolArguments(t, toolCall)).toEqual({ path: "main.ts", offset: 2 });
    expect(toolCall.arguments).toBe(args);
    expect(args).toEqual({ file_path: "main.ts", offset: "2" });
    expect(seen[0]).not.toBe(args);
  });

  it("Lab 6.2 · without prepareArguments the pipeline is plain validation", () => {
    expect(prepareToolArguments(tool(readParams), call({ path: "x", limit: "5" }))).toEqual({ path: "x", limit: 5 });
    const error = errorOf(() => prepareToolArguments(tool(readParams), call({})));
    expect(error.issues).toEqual([{ path: "/path", message: "is required" }]);
  });

  it("Lab 6.2 · a malformed-JSON call (argumentsError) is refused before prepareArguments", () => {
    let prepared = false;
    const t = tool(readParams, {
      prepareArguments(args) {
        prepared = true;
        return args;
      },
    });
    const toolCall = call({}, { rawArguments: '{"path": "ma', argumentsError: "Unexpected end of JSON input" });
    const error = errorOf(() => prepareToolArguments(t, toolCall));
    expect(prepared).toBe(false);
    expect(error.message).toContain("Unexpected end of JSON input");
    expect(error.message).toContain('Received arguments: {"path": "ma');
  });

  it("Lab 6.2 · the malformed-JSON error the model reads says what happened once, in one sentence", () => {
    const raw = '{"path": "ma';
    const toolCall = call({}, { rawArguments: raw, argumentsError: parseToolArguments(raw).error! });
    const message = errorOf(() => prepareToolArguments(tool(readParams), toolCall)).message;
    expect(message).toBe(
      `Invalid arguments for tool "read":\n${parseToolArguments(raw).error}\nReceived arguments: {"path": "ma`,
    );
    expect(message.match(/not valid JSON/g)).toHaveLength(1);
    expect(message).not.toMatch(/Re-issue/);
  });

  it("Lab 6.2 · a throwing prepareArguments becomes a readable ToolArgumentsError", () => {
    const t = tool(readParams, {
      prepareArguments() {
        throw new Error("cannot repair");
      },
    });
    // a ToolArgumentsError the model can read, not the hook's own error rethrown
    expect(() => prepareToolArguments(t, call({ path: "a" }))).toThrow(/prepareArguments failed: cannot repair/);
    const error = errorOf(() => prepareToolArguments(t, call({ path: "a" })));
    expect(error.message).toContain("prepareArguments failed: cannot repair");
  });

  it("Lab 6.3 · toToolDefinition shows name, description and a plain JSON Schema", () => {
    const t = tool(readParams);
    const definition = toToolDefinition(t);
    expect(definition).toEqual({
      name: "read",
      description: "Reads a file.",
      parameters: {
        type: "object",
        required: ["path"],
        properties: {
          path: { type: "string" },
          offset: { type: "integer", minimum: 1 },
          limit: { type: "number" },
          follow: { type: "boolean" },
        },
      },
    });
    expect(definition.parameters).not.toBe(t.parameters);
    expect(JSON.parse(JSON.stringify(definition))).toEqual(definition);
    expect(Object.isFrozen(definition.parameters)).toBe(true);
    expect(toToolDefinition(t).parameters).toBe(definition.parameters); // made once per schema
  });

  it("Lab 6.3 · defineTool keeps parameter inference for standalone definitions", async () => {
    const echo = defineTool({
      name: "echo",
      label: "Echo",
      description: "Repeats the text.",
      parameters: Type.Object({ text: Type.String(), times: Type.Optional(Type.Integer()) }),
      async execute(_id, params) {
        expectTypeOf(params).toEqualTypeOf<{ text: string; times?: number }>();
        return { content: [{ type: "text", text: params.text.repeat(params.times ?? 1) }], details: { n: 1 } };
      },
    });
    expectTypeOf(echo.execute).returns.resolves.toEqualTypeOf<AgentToolResult<{ n: number }>>();
    expect(toToolDefinition(echo).name).toBe("echo");
    const args = validateToolArguments(echo, {
      type: "toolCall",
      id: "1",
      name: "echo",
      arguments: { text: "ab", times: "2" },
    });
    expectTypeOf(args).toEqualTypeOf<{ text: string; times?: number }>();
    const result = await echo.execute("1", args);
    expect(result.content).toEqual([{ type: "text", text: "abab" }]);
  });

  it("Lab 6.3 · defineTool infers the details type also when execute declares onUpdate (arrow and method forms)", async () => {
    const parameters = Type.Object({ text: Type.String() });
    const arrow = defineTool({
      name: "count",
      label: "Count",
      description: "Counts the characters.",
      parameters,
      execute: async (_id, params, _signal, onUpdate) => {
        onUpdate?.({ content: [{ type: "text", text: "counting" }], details: { bytes: 0 } });
        return {
          content: [{ type: "text", text: String(params.text.length) }],
          details: { bytes: params.text.length },
        };
      },
    });
    const method = defineTool({
      name: "count",
      label: "Count",
      description: "Counts the characters.",
      parameters,
      async execute(_id, params, _signal, onUpdate) {
        onUpdate?.({ content: [], details: { bytes: 0 } });
        return { content: [], details: { bytes: params.text.length } };
      },
    });
    expectTypeOf(arrow.execute).returns.resolves.toEqualTypeOf<AgentToolResult<{ bytes: number }>>();
    expectTypeOf(method.execute).returns.resolves.toEqualTypeOf<AgentToolResult<{ bytes: number }>>();
    const updates: unknown[] = [];
    const result = await arrow.execute("1", { text: "abc" }, undefined, (partial) => updates.push(partial.details));
    expect(result.details).toEqual({ bytes: 3 });
    expect(updates).toEqual([{ bytes: 0 }]);
    expect(toToolDefinition(method).name).toBe("count");
  });
});
