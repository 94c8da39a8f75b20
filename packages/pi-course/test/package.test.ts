/**
 * The package as a user gets it: `npm pack`, install the tarball into a project outside the
 * repository, then typecheck and run a consumer that imports "@pi/course" and extends
 * `CustomAgentMessages` by declaration merging. Not a chapter test: no practice folder gets it.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

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
    const packed = execFileSync("npm", ["pack", "--json", "--pack-destination", work], {
      cwd: packageDir,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    });
    const [info] = JSON.parse(packed.slice(packed.indexOf("["))) as { filename: string; files: { path: string }[] }[];
    tarball = join(work, info!.filename);
    writeFileSync(join(work, "files.json"), JSON.stringify(info!.files.map((f) => f.path)));
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
        files: ["consumer.ts", "readme-example.ts"],
      }),
    );
    writeFileSync(join(app, "consumer.ts"), consumer);
    // The package README's first example, as a user would paste it (typebox comes as a peer).
    const readme = readFileSync(join(packageDir, "README.md"), "utf8");
    writeFileSync(join(app, "readme-example.ts"), /```ts\n([\s\S]*?)```/.exec(readme)![1]!);
    execFileSync("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline"], {
      cwd: app,
      stdio: ["ignore", "pipe", "pipe"],
    });
  }, 180_000);

  afterAll(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it("Package · the tarball ships compiled ESM with declarations, and no tests", () => {
    const files = JSON.parse(readFileSync(join(work, "files.json"), "utf8")) as string[];
    expect(files).toContain("dist/index.js");
    expect(files).toContain("dist/index.d.ts");
    expect(files).toContain("package.json");
    expect(files.filter((f) => f.startsWith("test/") || f.endsWith(".test.ts"))).toEqual([]);
  });

  it("Package · ships a README that says it is ESM-only and how to install it", () => {
    const files = JSON.parse(readFileSync(join(work, "files.json"), "utf8")) as string[];
    expect(files).toContain("README.md");
    const readme = readFileSync(join(work, "app", "node_modules", "@pi", "course", "README.md"), "utf8");
    expect(readme).toMatch(/ESM only/);
    expect(readme).toContain("npm install @pi/course typebox");
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
    const help = execFileSync(join(work, "app", "node_modules", ".bin", "pi-course"), ["--help"], { encoding: "utf8" });
    expect(help).toMatch(/--base-url/);
  }, 60_000);

  it("Package · the README's example typechecks and prints what it says", () => {
    const app = join(work, "app");
    execFileSync(process.execPath, [tsc, "-p", app], { cwd: app, stdio: ["ignore", "pipe", "pipe"] });
    const out = execFileSync(process.execPath, [join(app, "out", "readme-example.js")], { cwd: app, encoding: "utf8" });
    expect(out).toBe("2 + 3 = 5\n");
  }, 120_000);

  it("Package · a consumer typechecks (declaration merging included) and runs", () => {
    const app = join(work, "app");
    execFileSync(process.execPath, [tsc, "-p", app], { cwd: app, stdio: ["ignore", "pipe", "pipe"] });
    const out = execFileSync(process.execPath, [join(app, "out", "consumer.js")], { cwd: app, encoding: "utf8" });
    expect(JSON.parse(out)).toEqual({ roles: ["user", "note"], seen: [1, -2], result: 2, text: "hi there" });
  }, 120_000);
});
