/**
 * The README keeps its promises: the two commands, and a library example that really runs.
 * (Not a chapter test: no chapter owns it, so it runs in the repository only.)
 */
import { spawn } from "node:child_process";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { bundledScript } from "./support/bundled-script.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, "..", "..", "..");
const readmePath = path.join(repoRoot, "README.md");

describe("README", () => {
  it("README · every TypeScript example of both READMEs typechecks as a user's module would (strict)", async () => {
    const root = await readFile(readmePath, "utf8");
    const library = root.slice(
      root.indexOf("## Use the library"),
      root.indexOf("\n## ", root.indexOf("## Use the library") + 1),
    );
    const pkg = await readFile(path.join(repoRoot, "packages", "pi-course", "README.md"), "utf8");
    const blocks = [library, pkg].flatMap((text) => [...text.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!));
    expect(blocks.length).toBeGreaterThanOrEqual(5);
    // Under node_modules/ so that "typebox" resolves as it would for a user; "@pi/course" is the source.
    const dir = path.join(repoRoot, "node_modules", ".cache", `pi-course-readme-types-${process.pid}`);
    await mkdir(dir, { recursive: true });
    try {
      const files = blocks.map((_, i) => path.join(dir, `example-${i}.mts`));
      await Promise.all(blocks.map((code, i) => writeFile(files[i]!, `${code}\nexport {};\n`)));
      const program = ts.createProgram(files, {
        target: ts.ScriptTarget.ES2022,
        lib: ["lib.es2022.d.ts"],
        module: ts.ModuleKind.NodeNext,
        moduleResolution: ts.ModuleResolutionKind.NodeNext,
        strict: true,
        skipLibCheck: true,
        noEmit: true,
        typeRoots: [path.join(repoRoot, "node_modules", "@types")],
        types: ["node"],
        paths: { "@pi/course": [path.join(repoRoot, "packages", "pi-course", "src", "index.ts")] },
      });
      // The examples' own diagnostics, as a user's `tsc` reports them for a module of theirs (with
      // skipLibCheck, the library's declarations are not checked there). The library's sources
      // are checked by `npm run typecheck`: checking every source body again here tripled the cost.
      const diagnostics = [
        ...program.getOptionsDiagnostics(),
        ...program.getGlobalDiagnostics(),
        ...files.flatMap((file) => {
          const source = program.getSourceFile(file)!;
          return [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)];
        }),
      ];
      const text = ts.formatDiagnostics(diagnostics, {
        getCanonicalFileName: (f) => f,
        getCurrentDirectory: () => dir,
        getNewLine: () => "\n",
      });
      expect(text).toBe(""); // each error names the example file and line
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it("README · names exactly the two commands: npm install && npm start, and npm test", async () => {
    const readme = await readFile(readmePath, "utf8");
    expect(readme).toContain("```sh\nnpm install && npm start\n```");
    expect(readme).toContain("```sh\nnpm test\n```");
    const root = JSON.parse(await readFile(path.join(repoRoot, "package.json"), "utf8"));
    expect(root.scripts.test).toMatch(/vitest run/);
    expect(root.scripts.start).toBe("npm run start -w @pi/course --");
  });

  it("README · the table of the coding tools' argument repairs is the one in repairs.ts", async () => {
    const readme = await readFile(readmePath, "utf8");
    const source = await readFile(
      path.join(repoRoot, "packages", "pi-course", "src", "coding-tools", "repairs.ts"),
      "utf8",
    );
    const rows = source
      .split("\n")
      .filter((line) => line.startsWith(" * |"))
      .map((line) => line.slice(3));
    expect(rows).toHaveLength(5);
    expect(readme).toContain(rows.join("\n"));
  });

  it("README · the library example runs and prints the lifecycle it describes", async () => {
    const output = await runExample(0);
    const lines = output.trimEnd().split("\n");
    const collapsed = lines.filter((line, i) => !(line === "message_update" && lines[i - 1] === "message_update"));
    expect(collapsed).toEqual([
      "agent_start",
      "turn_start",
      "message_start",
      "message_end",
      "message_start",
      "message_update",
      "message_end",
      "tool_execution_start",
      "tool_execution_end",
      "message_start",
      "message_end",
      "turn_end",
      "turn_start",
      "message_start",
      "message_update",
      "message_end",
      "turn_end",
      "agent_end",
      "4 new messages",
    ]);
  }, 60_000);

  it("README · the Agent example runs: two prompts, the follow-up injected in the second run", async () => {
    const output = await runExample(1);
    expect(output.trimEnd().split("\n")).toEqual([
      "user: Hi",
      "assistant: Hello!",
      "user: Remember the milk.",
      "assistant: Noted.",
      "user: Still there?",
      "assistant: Yes.",
      "6 messages in the transcript",
    ]);
  }, 60_000);

  it("README · the session example runs: the second agent resumes from the file and appends to it", async () => {
    const output = await runExample(2);
    expect(output.trimEnd().split("\n")).toEqual(["2 messages resumed", "4 entries on disk"]);
  }, 60_000);
});

/** Runs the `index`-th ts example of the README's library section; resolves with its stdout. */
async function runExample(index: number): Promise<string> {
  const readme = await readFile(readmePath, "utf8");
  const section = readme.slice(
    readme.indexOf("## Use the library"),
    readme.indexOf("\n## ", readme.indexOf("## Use the library") + 1),
  );
  const code = [...section.matchAll(/```ts\n([\s\S]*?)```/g)][index]?.[1];
  expect(code).toContain('from "@pi/course"');
  // Under node_modules/ so that "typebox" resolves as it would for a user; "@pi/course" is the source.
  const dir = path.join(repoRoot, "node_modules", ".cache", `pi-course-readme-${process.pid}-${index}`);
  await mkdir(dir, { recursive: true });
  const file = path.join(dir, "example.mts");
  const source = path.join(repoRoot, "packages", "pi-course", "src", "index.ts");
  await writeFile(file, code!.replace('from "@pi/course"', `from ${JSON.stringify(source)}`));
  try {
    const output = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
      const child = spawn(process.execPath, [bundledScript(file)], { cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
      child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
      child.on("error", reject);
      child.on("close", (code) => resolve({ code, stdout, stderr }));
    });
    expect(output.stderr).toBe("");
    expect(output.code).toBe(0);
    return output.stdout;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
