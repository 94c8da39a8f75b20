/**
 * Chapter 01: the TypeScript survival kit. A tagged union handled exhaustively (1.1), an `unknown`
 * value checked at a runtime boundary into a trusted object (1.2), and why a type assertion is not
 * validation (1.3). Types count too: `npm test` typechecks first, and the `@ts-expect-error`
 * lines below fail the typecheck if what they expect stops being an error.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, expectTypeOf, it } from "vitest";
import { assertSettings, kindOf, loadSettings, parseSettings, type Settings } from "../kit/boundary.js";
import { type Delta, describeDelta, unreachable } from "../kit/tagged-union.js";

describe("chapter 01 · a tagged union, handled exhaustively", () => {
  it("Lab 1.1 · describeDelta gives one line per kind of delta", () => {
    const deltas: Delta[] = [
      { type: "text", text: "hi" },
      { type: "toolCall", id: "c1", name: "read" },
      { type: "done", reason: "length" },
      { type: "error", message: "overloaded" },
    ];
    expect(deltas.map(describeDelta)).toEqual([
      'text: "hi"',
      "tool call read (c1)",
      "done: length",
      "error: overloaded",
    ]);
  });

  it("Lab 1.1 · a delta whose type no member has (data from outside, typed by assertion) throws instead of returning undefined", () => {
    const outside = JSON.parse('{ "type": "bogus" }') as Delta; // an assertion: nothing was checked
    expect(() => describeDelta(outside)).toThrow(new TypeError('unknown delta type "bogus"'));
  });

  it("Lab 1.1 · unreachable takes only never: the compiler refuses any other value", () => {
    expectTypeOf(unreachable).parameter(0).toBeNever();
    // @ts-expect-error a string is not never: this is the error a forgotten case produces
    expect(() => unreachable({ type: "late" }, "event")).toThrow(new TypeError('unknown event type "late"'));
    // data typed by assertion can be anything, null too: still the TypeError, never a crash reading .type
    expect(() => unreachable(null as never, "event")).toThrow(new TypeError("unknown event type undefined"));
  });

  // It reads the lab's source text, which mutation testing rewrites (`npm run mutants` sets PI_COURSE_MUTANTS).
  it.skipIf(process.env.PI_COURSE_MUTANTS === "1")(
    "Lab 1.1 · the compiler checks the switch: kit/tagged-union.ts typechecks, and a Delta member without a case does not",
    async () => {
      expect(describeDelta({ type: "done", reason: "stop" })).toBe("done: stop");
      const file = fileURLToPath(new URL("../kit/tagged-union.ts", import.meta.url));
      const source = readFileSync(file, "utf8");
      expect(
        typecheck(file, source),
        "kit/tagged-union.ts does not typecheck (the compiler's errors, by line)",
      ).toEqual([]);
      const last = '| { type: "error"; message: string };';
      expect(source, "the Delta union ends with its error member").toContain(last);
      const errors = typecheck(
        file,
        source.replace(last, '| { type: "error"; message: string }\n  | { type: "ping" };'),
      );
      expect(errors.join("\n"), "a Delta member without its case must be a compile error at unreachable").toMatch(
        /Argument of type '\{ type: "ping"; \}' is not assignable to parameter of type 'never'/,
      );
    },
  );
});

/**
 * The little of the standard library kit/tagged-union.ts uses: with it instead of the real lib
 * files the compiler reads one small file more, not dozens of large ones (seconds on a busy machine).
 */
const LIB = "/tagged-union-lib.d.ts";
const LIB_TEXT = `
interface Array<T> { length: number; [n: number]: T }
interface Boolean {}
interface CallableFunction {}
interface Function {}
interface IArguments {}
interface NewableFunction {}
interface Number {}
interface Object {}
interface RegExp {}
interface String {}
declare var JSON: { stringify(value: unknown): string };
declare class TypeError { constructor(message?: string) }
`;

/** The compiler's errors for one file (given its text), each as `line N: message`. */
function typecheck(file: string, text: string): string[] {
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    noLib: true,
    types: [],
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, version, ...rest) =>
    name === file
      ? ts.createSourceFile(name, text, version)
      : name === LIB
        ? ts.createSourceFile(name, LIB_TEXT, version)
        : getSourceFile(name, version, ...rest);
  const program = ts.createProgram([file, LIB], options, host);
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const line = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start).line + 1 : 0;
    return `line ${line}: ${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`;
  });
}

describe("chapter 01 · an unknown value checked at the boundary", () => {
  it("Lab 1.2 · valid settings come back as a new object; maxTokens is optional", () => {
    const input: unknown = { model: "gpt", tools: ["read", "ls"] };
    const settings = parseSettings(input);
    expect(settings).toEqual({ model: "gpt", tools: ["read", "ls"] });
    expect(settings).not.toHaveProperty("maxTokens");
    expect(settings).not.toBe(input);
    (input as { tools: string[] }).tools.push("bash");
    expect(settings.tools).toEqual(["read", "ls"]);
    expect(parseSettings({ model: "m", maxTokens: 512, tools: [] })).toEqual({ model: "m", maxTokens: 512, tools: [] });
    expectTypeOf(parseSettings).returns.toEqualTypeOf<Settings>();
  });

  it("Lab 1.2 · each wrong field is refused with a message naming it and what it got", () => {
    const refused = (candidate: unknown) => {
      try {
        parseSettings(candidate);
      } catch (error) {
        expect(error).toBeInstanceOf(TypeError);
        return (error as Error).message;
      }
      return "accepted";
    };
    expect(refused([])).toBe("settings must be an object, got an array");
    expect(refused(null)).toBe("settings must be an object, got null");
    expect(refused("gpt")).toBe("settings must be an object, got a string");
    expect(refused({ model: "m", tools: [], modle: "x" })).toBe(
      'settings has an unknown key "modle"; the keys are model, maxTokens, tools',
    );
    expect(refused({ model: "", tools: [] })).toBe('settings.model must be a non-empty string, got ""');
    expect(refused({ tools: [] })).toBe("settings.model must be a non-empty string, got undefined");
    expect(refused({ model: "m", maxTokens: 1.5, tools: [] })).toBe(
      "settings.maxTokens must be a positive integer, got 1.5",
    );
    expect(refused({ model: "m", maxTokens: "9", tools: [] })).toBe(
      'settings.maxTokens must be a positive integer, got "9"',
    );
    expect(refused({ model: "m", maxTokens: 0, tools: [] })).toBe(
      "settings.maxTokens must be a positive integer, got 0",
    );
    expect(refused({ model: "m", maxTokens: -5, tools: [] })).toBe(
      "settings.maxTokens must be a positive integer, got -5",
    );
    expect(refused({ model: "m", tools: "read" })).toBe("settings.tools must be an array of strings, got a string");
    expect(refused({ model: "m", tools: ["read", 7] })).toBe("settings.tools[1] must be a string, got a number");
    expect(kindOf(undefined)).toBe("undefined");
  });
});

describe("chapter 01 · a type assertion is not validation", () => {
  it("Lab 1.3 · JSON.parse(text) as Settings believes anything; loadSettings checks", () => {
    const text = '{ "model": 3, "tools": "read" }';
    const asserted = JSON.parse(text) as Settings; // typechecks: the compiler takes it on faith
    expect(typeof asserted.model).toBe("number");
    expect(() => loadSettings(text), "loadSettings must check what JSON.parse gives it").toThrow(
      new TypeError("settings.model must be a non-empty string, got 3"),
    );
    expect(loadSettings('{ "model": "m", "tools": ["read"] }')).toEqual({ model: "m", tools: ["read"] });
  });

  it("Lab 1.3 · text that is not JSON is refused with JSON.parse's own reason", () => {
    let reason = "";
    try {
      JSON.parse("{ model");
    } catch (error) {
      reason = (error as Error).message;
    }
    expect(() => loadSettings("{ model")).toThrow(new SyntaxError(`the settings are not JSON: ${reason}`));
  });

  it("Lab 1.3 · assertSettings narrows an unknown value to Settings, or throws parseSettings's error", () => {
    const value: unknown = { model: "m", tools: [] };
    assertSettings(value);
    expectTypeOf(value).toEqualTypeOf<Settings>();
    expect(value.model).toBe("m");
    expect(() => assertSettings({ model: "m" })).toThrow(
      new TypeError("settings.tools must be an array of strings, got undefined"),
    );
  });
});
