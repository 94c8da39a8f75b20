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
      JSON.stringify({ name: "consumer", private: true, type: "module", dependencies: { "@pi/course": `file:${tarball}` } }),
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
        files: ["consumer.ts"],
      }),
    );
    writeFileSync(join(app, "consumer.ts"), consumer);
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

  it("Package · a consumer typechecks (declaration merging included) and runs", () => {
    const app = join(work, "app");
    execFileSync(process.execPath, [tsc, "-p", app], { cwd: app, stdio: ["ignore", "pipe", "pipe"] });
    const out = execFileSync(process.execPath, [join(app, "out", "consumer.js")], { cwd: app, encoding: "utf8" });
    expect(JSON.parse(out)).toEqual({ roles: ["user", "note"], seen: [1, -2], result: 2, text: "hi there" });
  }, 120_000);
});
