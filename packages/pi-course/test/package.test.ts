/**
 * The package as a user gets it: `npm pack`, install the tarball into a project outside the
 * repository, then typecheck and run a consumer that imports "@pi/course" and extends
 * `CustomAgentMessages` by declaration merging. Not a chapter test: no practice folder gets it.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { packedCourse } from "./support/packed-course.js";

const packageDir = join(dirname(fileURLToPath(import.meta.url)), "..");
const repoRoot = join(packageDir, "..", "..");
const tsc = join(repoRoot, "node_modules", "typescript", "bin", "tsc");

const consumer = `
import {
  EventStream,
  ScriptedModel,
  assistantMessage,
  textOf,
  userMessage,
  type AgentMessage,
  type AssistantMessage,
} from "@pi/course";

interface NoteMessage {
  role: "note";
  text: string;
  timestamp: number;
}

declare module "@pi/course" {
  interface CustomAgentMessages {
    note: NoteMessage;
  }
}

const transcript: AgentMessage[] = [
  userMessage("hello", { timestamp: 1 }),
  { role: "note", text: "kept by the app", timestamp: 2 },
];
// @ts-expect-error: a role nobody declared is not an AgentMessage
const bogus: AgentMessage = { role: "bogus", timestamp: 3 };
void bogus;

const stream = new EventStream<number, number>((n) => n < 0, (n) => -n);
stream.push(1);
stream.push(-2);
const seen: number[] = [];
for await (const n of stream) seen.push(n);

const model = new ScriptedModel([assistantMessage([{ type: "text", text: "hi there" }], "stop")]);
const reply: AssistantMessage = await model.stream({ messages: [] }).result();

console.log(JSON.stringify({ roles: transcript.map((m) => m.role), seen, result: await stream.result(), text: textOf(reply) }));
`;

describe("package · @pi/course as an installed dependency", () => {
  let work: string;
  let tarball: string;

  beforeAll(() => {
    work = mkdtempSync(join(tmpdir(), "pi-course-consumer-"));
    const packed = packedCourse();
    tarball = packed.tarball;
    writeFileSync(join(work, "files.json"), JSON.stringify(packed.files));
    const app = join(work, "app");
    execFileSync("mkdir", ["-p", app]);
    writeFileSync(
      join(app, "package.json"),
      JSON.stringify({
        name: "consumer",
        private: true,
        type: "module",
        dependencies: { "@pi/course": `file:${tarball}` },
      }),
    );
    writeFileSync(
      join(app, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          target: "ES2022",
          module: "NodeNext",
          moduleResolution: "NodeNext",
          strict: true,
          // As most projects do: checking every declaration file of typebox and @types/node
          // takes a minute and proves nothing about this package's own types.
          skipLibCheck: true,
          outDir: "out",
          typeRoots: [join(repoRoot, "node_modules", "@types")],
          types: ["node"],
        },
        files: ["consumer.ts", ...readmeExamples().map((_, i) => `readme-${i + 1}.ts`)],
      }),
    );
    writeFileSync(join(app, "consumer.ts"), consumer);
    // Every example of the package README, as a user would paste it (typebox comes as a peer).
    readmeExamples().forEach((code, i) => writeFileSync(join(app, `readme-${i + 1}.ts`), code));
    // The type-cost fixture: five defineTool tools, checked as a user's project is.
    writeFileSync(
      join(app, "five-tools.ts"),
      readFileSync(join(packageDir, "test", "fixtures", "type-cost", "five-tools.ts"), "utf8"),
    );
    writeFileSync(
      join(app, "tsconfig.type-cost.json"),
      JSON.stringify({
        compilerOptions: {
          target: "ES2022",
          module: "NodeNext",
          moduleResolution: "NodeNext",
          strict: true,
          skipLibCheck: true,
          noEmit: true,
          typeRoots: [join(repoRoot, "node_modules", "@types")],
          types: ["node"],
        },
        files: ["five-tools.ts"],
      }),
    );
    execFileSync("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline"], {
      cwd: app,
      stdio: ["ignore", "pipe", "pipe"],
    });
  }, 180_000);

  afterAll(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  /**
   * `tsc -p app` (the consumer and every README example, emitted to out/): one program, so it is
   * compiled once and both tests that need it read the same result (it was run once per test).
   */
  let compiled: { status: number | null; output: string } | undefined;
  const compileApp = () => {
    const app = join(work, "app");
    if (compiled === undefined) {
      const run = spawnSync(process.execPath, [tsc, "-p", app], { cwd: app, encoding: "utf8" });
      compiled = { status: run.status, output: `${run.stdout}${run.stderr}${run.error?.message ?? ""}` };
    }
    return compiled;
  };

  it("Package · the tarball ships compiled ESM with declarations, and no tests", () => {
    const files = JSON.parse(readFileSync(join(work, "files.json"), "utf8")) as string[];
    expect(files).toContain("dist/index.js");
    expect(files).toContain("dist/index.d.ts");
    expect(files).toContain("package.json");
    expect(files.filter((f) => f.startsWith("test/") || f.endsWith(".test.ts"))).toEqual([]);
  });

  it("Package · the installed, bundled root exports every name the sources' index.ts exports, and no other", async () => {
    const app = join(work, "app");
    const installed = execFileSync(
      process.execPath,
      ["--input-type=module", "-e", 'console.log(JSON.stringify(Object.keys(await import("@pi/course")).sort()))'],
      { cwd: app, encoding: "utf8" },
    );
    const source = Object.keys(await import("../src/index.js")).sort();
    expect(source.length).toBeGreaterThan(250);
    expect(JSON.parse(installed)).toEqual(source);
  }, 60_000);

  it("Package · the root import loads neither TypeBox's compiler, nor TypeBox's Type beyond the builders the sources use (its type engine: a record keyed by a string is built without it), nor child_process, crypto, worker_threads or http; each loads on first use and works as the sources do", async () => {
    // The bundle's stand-ins (scripts/bundle.ts): what they defer must still be there when used.
    const app = join(work, "app");
    const script = `
import { createRequire } from "node:module";
const before = new Set(process.moduleLoadList);
const course = await import("@pi/course");
const { Type } = await import("typebox");
const heavy = () =>
  process.moduleLoadList.filter((m) => !before.has(m) && /^NativeModule (child_process|crypto|worker_threads|http)$/.test(m));
const bundled = () =>
  Object.keys(createRequire(import.meta.url).cache).flatMap((file) => (file.endsWith(".cjs") ? [file.replace(/.*\\//, "")] : []));
const atImport = { heavy: heavy(), bundled: bundled() };
const tool = {
  name: "add", label: "add", description: "Adds two numbers.",
  parameters: Type.Object({ a: Type.Number(), b: Type.Number() }),
  execute: async () => ({ content: [], details: undefined }),
};
let refusal;
try {
  course.validateToolArguments(tool, { type: "toolCall", id: "1", name: "add", arguments: { a: "one" } });
} catch (error) {
  refusal = [error.name, error.message];
}
const coerced = course.validateToolArguments(tool, { type: "toolCall", id: "2", name: "add", arguments: { a: "1", b: 2 } });
const afterCheck = { heavy: heavy(), bundled: bundled() };
// a record schema of the sources (mcp.json's), built at import without TypeBox's type engine, checks as TypeBox's
let mcpRefusal;
try {
  course.parseMcpConfig('{"mcpServers": {"a": 1}, "x": 2}', "mcp.json", {});
  course.parseMcpConfig('{"mcpServers": []}', "mcp.json", {});
} catch (error) {
  mcpRefusal = [error.name, error.message];
}
const echoed = await course.runCommand("echo hi", { cwd: process.cwd() });
const session = await course.SessionFile.create(process.cwd() + "/session.jsonl", { cwd: process.cwd() });
// an extension's api.Type: a builder the sources use is there at once, any other member loads the whole Type
const host = new course.ExtensionHost({ cwd: process.cwd() });
let extension;
await host.loadFactory((api) => {
  const built = api.Type.Object({ x: api.Type.String() });
  const record = api.Type.Record(api.Type.String(), api.Type.Number(), { description: "by name" });
  const before = bundled();
  // a record of any other key is TypeBox's own, with its engine
  const numbered = api.Type.Record(api.Type.Integer(), api.Type.String());
  const after = bundled();
  const kinds = [record, numbered].map((schema) => [schema["~kind"], api.Type.IsRecord(schema)]);
  extension = { built, record, numbered, kinds, before, parsed: api.Type.Script("{ y: number }"), after, members: Object.keys(api.Type).length };
}, "inline", "user");
console.log(JSON.stringify({ atImport, refusal, coerced, afterCheck, mcpRefusal, echoed: echoed.output, id: session.header.id.length, after: heavy().sort(), extension }));
`;
    writeFileSync(join(app, "first-use.mjs"), script);
    const out = JSON.parse(execFileSync(process.execPath, ["first-use.mjs"], { cwd: app, encoding: "utf8" }));
    const { Type } = await import("typebox");
    const { parseMcpConfig, validateToolArguments } = await import("../src/index.js");
    let mcpSources: unknown;
    try {
      parseMcpConfig('{"mcpServers": {"a": 1}, "x": 2}', "mcp.json", {});
      parseMcpConfig('{"mcpServers": []}', "mcp.json", {});
    } catch (error) {
      mcpSources = [(error as Error).name, (error as Error).message];
    }
    expect(mcpSources).toEqual(["McpConfigError", expect.stringContaining("mcp.json")]);
    let sources: unknown;
    try {
      validateToolArguments(
        {
          name: "add",
          label: "add",
          description: "Adds two numbers.",
          parameters: Type.Object({ a: Type.Number(), b: Type.Number() }),
          execute: async () => ({ content: [], details: undefined }),
        },
        { type: "toolCall", id: "1", name: "add", arguments: { a: "one" } },
      );
    } catch (error) {
      sources = [(error as Error).name, (error as Error).message];
    }
    expect(out).toEqual({
      atImport: { heavy: [], bundled: [] },
      refusal: sources,
      coerced: { a: 1, b: 2 },
      afterCheck: { heavy: [], bundled: ["typebox-compile.cjs"] },
      mcpRefusal: mcpSources,
      echoed: "hi\n",
      id: 36,
      after: ["NativeModule child_process", "NativeModule crypto"],
      extension: {
        built: Type.Object({ x: Type.String() }),
        record: Type.Record(Type.String(), Type.Number(), { description: "by name" }),
        numbered: Type.Record(Type.Integer(), Type.String()),
        kinds: [
          ["Record", true],
          ["Record", true],
        ],
        before: ["typebox-compile.cjs"],
        parsed: Type.Script("{ y: number }"),
        after: ["typebox-compile.cjs", "typebox-type.cjs"],
        members: Object.keys(Type).length,
      },
    });
  }, 60_000);

  /**
   * What a fresh process compiles when it loads `entry` of the installed package: the file and the
   * chunks it imports statically (a dynamic import() is a chunk of its own, read when it runs), as
   * the modules bundled into them (each chunk's source map names them): `src/…` for the sources,
   * `typebox/…` for TypeBox's (under its build/ folder).
   */
  const bundledSources = (...entries: string[]): { files: number; sources: string[] } => {
    const read = new Set<string>();
    const visit = (file: string) => {
      if (read.has(file)) return;
      read.add(file);
      for (const [, spec] of readFileSync(file, "utf8").matchAll(/^(?:import|export)\b[^;]*?["'](\.[^"']+)["'];/gm))
        visit(join(dirname(file), spec!));
    };
    for (const entry of entries) visit(entry);
    const sources = [...read].flatMap((file) =>
      (JSON.parse(readFileSync(`${file}.map`, "utf8")).sources as string[]).map((source) =>
        source.replace(/^.*?node_modules\/typebox\/build\//, "typebox/").replace(/^.*?\/src\//, "src/"),
      ),
    );
    return { files: read.size, sources };
  };

  it("Package · the chunks the root import reads carry neither TypeBox's type engine nor its compiler: those are in the .cjs files loaded on first use", () => {
    const dist = join(work, "app", "node_modules", "@pi", "course", "dist");
    const root = bundledSources(join(dist, "index.js"));
    const typebox = root.sources.flatMap((source) => (source.startsWith("typebox/") ? [source.slice(8)] : []));
    expect(root.files).toBeGreaterThan(10);
    // the builders are there (Type.Object, a record's own small part, …), and neither the engine
    // (instantiate.mjs and what only it reaches) nor the compiler
    expect(typebox).toContain("type/types/object.mjs");
    expect(typebox).toContain("type/engine/record/record_create.mjs");
    expect(
      typebox.filter((source) => /^(type\/engine\/(instantiate|record\/instantiate)|compile\/)/.test(source)),
    ).toEqual([]);
    expect(typebox.filter((source) => source.startsWith("type/engine/")).length).toBeLessThan(10);
    const cjs = readdirSync(join(dist, "cli")).filter((file) => file.endsWith(".cjs"));
    expect(cjs.sort()).toEqual(["typebox-compile.cjs", "typebox-type.cjs"]);
    expect(readFileSync(join(dist, "cli", "typebox-type.cjs"), "utf8")).toContain("function RecordInstantiate(");
  });

  it("Package · the CLI's launcher and its agent load neither the MCP login (OAuth flows, the browser opener), nor the session page, nor TypeBox's type engine until a command needs them", () => {
    const cli = join(work, "app", "node_modules", "@pi", "course", "dist", "cli");
    const start = join(cli, "start.js");
    // the agent: the launcher's modules and main's chunk, which start.js imports once it is the agent
    const main = /import\("\.\/(chunk-main-[A-Z0-9]+\.js)"\)/.exec(readFileSync(start, "utf8"))?.[1];
    expect(main).toBeDefined();
    const launcher = bundledSources(start);
    const agent = bundledSources(start, join(cli, main!));
    expect(agent.files).toBeGreaterThan(launcher.files);
    for (const { sources } of [launcher, agent]) {
      expect(sources).toContain("src/cli/launch.ts");
      expect(sources).toContain("src/cli/features/mcp.ts");
      expect(
        sources.filter((source) =>
          /^(src\/mcp\/auth\/(oauth|discovery|loopback|token-request)\.ts|src\/cli\/(mcp-login|open-browser|export)\.ts|src\/session-page\/page\.ts|typebox\/type\/engine\/instantiate\.mjs)$/.test(
            source,
          ),
        ),
      ).toEqual([]);
    }
    expect(agent.sources).toContain("src/cli/main.ts");
    expect(agent.sources).toContain("src/agent/agent.ts");
  });

  it("Package · ships a README that says it is ESM-only and how to install it", () => {
    const files = JSON.parse(readFileSync(join(work, "files.json"), "utf8")) as string[];
    expect(files).toContain("README.md");
    const readme = readFileSync(join(work, "app", "node_modules", "@pi", "course", "README.md"), "utf8");
    expect(readme).toMatch(/ESM only/);
    expect(readme).toContain("npm install @pi/course typebox");
  });

  it("Package · the declarations state contracts where they are used: no doc comment sends a user to a chapter, a lab or a source file", () => {
    // A user reads these on hover, with no course and no sources at hand. A module's own header
    // (the comment a .d.ts starts with) is where the file says what it is part of, so it is not
    // checked; every comment on a declaration is.
    const dist = join(work, "app", "node_modules", "@pi", "course", "dist");
    const walk = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? walk(join(dir, e.name)) : e.name.endsWith(".d.ts") ? [join(dir, e.name)] : [],
      );
    const found: string[] = [];
    const files = walk(dist);
    for (const file of files) {
      const text = readFileSync(file, "utf8");
      for (const comment of text.matchAll(/\/\*\*[\s\S]*?\*\//g)) {
        if (comment.index === 0) continue;
        for (const hit of comment[0].matchAll(/\b[Cc]hapters? \d+|\bLab \d+\.\d+|`[\w./-]+\.ts`/g))
          found.push(`${relative(dist, file)}: ${hit[0]}`);
      }
    }
    expect(files.length).toBeGreaterThan(50);
    expect(found).toEqual([]);
  });

  it("Package · exports list types first and a default; typebox is a peer; pi-course is a bin that runs", () => {
    const installed = join(work, "app", "node_modules", "@pi", "course");
    const pkg = JSON.parse(readFileSync(join(installed, "package.json"), "utf8"));
    expect(Object.keys(pkg.exports["."])).toEqual(["types", "import", "default"]);
    expect(pkg.peerDependencies).toEqual({ typebox: expect.any(String) });
    expect(pkg.dependencies?.typebox).toBeUndefined();
    // npm installs the peer for a user who did not list it.
    expect(JSON.parse(readFileSync(join(work, "app", "node_modules", "typebox", "package.json"), "utf8")).name).toBe(
      "typebox",
    );
    expect(pkg.bin).toEqual({ "pi-course": "./dist/cli/start.js" });
    const bin = join(work, "app", "node_modules", ".bin", "pi-course");
    // Run as a user runs it (not from an npm script): the usage lines name the bin, not npm start.
    const env = { ...process.env, npm_lifecycle_event: "", npm_package_name: "" };
    const help = execFileSync(bin, ["--help"], { encoding: "utf8", env });
    expect(help).toMatch(/--base-url/);
    expect(help.split("\n")[0]).toMatch(/^pi-course: /);
    expect(help).toContain("  pi-course --continue ");
    expect(help).not.toContain("npm start");
    // --version says package.json's version (the bundle carries it as a constant)
    expect(execFileSync(bin, ["--version"], { encoding: "utf8", env })).toBe(`pi-course ${pkg.version}\n`);
    const misused = spawnSync(bin, ["--verbose"], { encoding: "utf8", env });
    expect([misused.status, misused.stderr]).toEqual([
      2,
      "error: unknown option --verbose.\nRun `pi-course --help` for the options.\n",
    ]);
  }, 60_000);

  it("Package · every README example typechecks, and each that runs offline prints what the README says", () => {
    const app = join(work, "app");
    const checked = compileApp();
    expect(checked.output).toBe(""); // tsc's errors, if any, name the example and line
    expect(checked.status).toBe(0);
    const run = (i: number) =>
      execFileSync(process.execPath, [join(app, "out", `readme-${i + 1}.js`)], {
        cwd: app,
        encoding: "utf8",
        env: { ...process.env, OPENAI_API_KEY: "" },
      });
    const examples = readmeExamples();
    const outputs = examples.map((code, i) => (code.includes("not run there") ? undefined : run(i)));
    // the README says what each prints (the sections' "It prints …" lines)
    expect(outputs[0]).toBe("2 + 3 = 5\n");
    const byStart = (start: string) => outputs[examples.findIndex((code) => code.includes(start))];
    expect(byStart("ModelCatalogue.builtin()")).toMatch(
      /^128000 0\.15 false\nHello! · fell back from gpt-4o to scripted-model \(gpt-4o: .*ECONNREFUSED.*\)\n\$0\.00039\n$/,
    );
    expect(byStart("createCodeTool({ tools: [weather] })")).toBe(
      'Result: ["Oslo: 21°C","Lima: 21°C","Pune: 21°C"]\nTool calls: 3\n',
    );
    expect(byStart("McpServers.start")).toBe(
      "toy: ready with 1 tool\nmcp__toy__shout [ { type: 'text', text: 'HELLO' } ]\n",
    );
    expect(byStart("RunJournal")).toBe("Done.\n2 messages, 1 branch(es)\n");
    expect(readFileSync(join(app, "durable-demo.html"), "utf8")).toContain("Tidy the README.");
    // only the example that calls a provider and the two that need a protected MCP server are not run
    expect(
      examples.filter((code) => code.includes("not run there")).map((code) => /not run there: ([^)]*)/.exec(code)?.[1]),
    ).toEqual([
      "it calls OpenAI",
      "it needs a protected server and a person",
      "it needs an authorization server and a person",
    ]);
  }, 180_000);

  it("Package · the example suite ships, and the installed CLI runs it offline", () => {
    const app = join(work, "app");
    const suite = join(app, "node_modules", "@pi", "course", "evals", "offline");
    const out = join(work, "eval-report");
    const tmp = join(work, "eval-tmp");
    mkdirSync(tmp);
    const result = spawnSync(
      process.execPath,
      [join(app, "node_modules", "@pi", "course", "dist", "cli", "start.js"), "eval", suite, "--out", out],
      // a TMPDIR of its own: the eval watches the top of its temporary folder, where other test files write
      { cwd: app, encoding: "utf8", env: { ...process.env, HOME: work, INIT_CWD: app, TMPDIR: tmp } },
    );
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^5\/5 cases passed/m);
    expect(readFileSync(join(out, "report.html"), "utf8")).toContain("fix-failing-function");
  }, 300_000);

  it("Package · five defineTool tools cost a user's type check under 15,000 types (tsc --extendedDiagnostics)", () => {
    // Before the fix (issue 32) this program counted 156,311 types and 1,306,109 instantiations:
    // TypeScript related TypeBox's Static<…> conditional types to each other (variance measuring).
    const app = join(work, "app");
    // A type error in the fixture makes tsc exit non-zero: execFileSync throws, the test fails.
    const output = execFileSync(process.execPath, [tsc, "-p", "tsconfig.type-cost.json", "--extendedDiagnostics"], {
      cwd: app,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    });
    const count = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, "m").exec(output)?.[1]);
    expect(count("Types")).toBeGreaterThan(0);
    expect(count("Types")).toBeLessThan(15_000);
  }, 120_000);

  it("Package · a consumer typechecks (declaration merging included) and runs", () => {
    const app = join(work, "app");
    const checked = compileApp();
    expect(checked.output).toBe(""); // tsc's errors, if any, name the file and line
    expect(checked.status).toBe(0);
    const out = execFileSync(process.execPath, [join(app, "out", "consumer.js")], { cwd: app, encoding: "utf8" });
    expect(JSON.parse(out)).toEqual({ roles: ["user", "note"], seen: [1, -2], result: 2, text: "hi there" });
  }, 120_000);
});

/** The TypeScript examples of the package README, in order. */
function readmeExamples(): string[] {
  const readme = readFileSync(join(packageDir, "README.md"), "utf8");
  return [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => match[1]!);
}
