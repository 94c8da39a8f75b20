/**
 * The import rules of `npm run lint` (.dependency-cruiser.cjs) catch what they promise: a tree
 * with an import cycle (type-only), an upward import and an import into types.ts is refused,
 * each by its rule; the same tree without them passes. Guards the rules against a path pattern
 * that, once edited, silently matches nothing.
 */
import { execFile } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
const DEPCRUISE = join(ROOT, "node_modules/.bin/depcruise");
const made: string[] = [];

afterAll(() => {
  for (const folder of made) rmSync(folder, { recursive: true, force: true });
});

/** A repository-shaped tree with the given files under packages/pi-course/src. */
function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), "pi-layers-"));
  made.push(root);
  copyFileSync(join(ROOT, ".dependency-cruiser.cjs"), join(root, ".dependency-cruiser.cjs"));
  writeFileSync(
    join(root, "tsconfig.json"),
    JSON.stringify({ compilerOptions: { module: "NodeNext", moduleResolution: "NodeNext", strict: true } }),
  );
  for (const [path, text] of Object.entries(files)) {
    const file = join(root, "packages/pi-course/src", path);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, text);
  }
  return root;
}

function cruise(root: string): Promise<{ code: number; output: string }> {
  return new Promise((done) => {
    execFile(
      DEPCRUISE,
      ["packages/pi-course/src", "--config", ".dependency-cruiser.cjs", "--output-type", "err"],
      { cwd: root },
      (error, stdout, stderr) => done({ code: error === null ? 0 : Number(error.code ?? 1), output: stdout + stderr }),
    );
  });
}

const HEALTHY = {
  "types.ts": "export interface Message { text: string }\n",
  "index.ts": 'export type { Message } from "./types.js";\nexport { loop } from "./agent/loop.js";\n',
  "models/model.ts": 'import type { Message } from "../types.js";\nexport const echo = (m: Message): Message => m;\n',
  "agent/loop.ts":
    'import { echo } from "../models/model.js";\nimport { fail } from "../base/errors.js";\nexport const loop = echo;\nexport { fail };\n',
  "base/errors.ts": 'import { text } from "./text.js";\nexport const fail = (m: string) => new Error(text(m));\n',
  "base/text.ts": "export const text = (m: string) => m;\n",
  "messages.ts": 'import { fail } from "./base/errors.js";\nexport const refuse = () => fail("no");\n',
};

describe("the import rules", () => {
  it("pass a tree that keeps them", async () => {
    const { code, output } = await cruise(tree(HEALTHY));
    expect(output).toContain("no dependency violations found");
    expect(code).toBe(0);
  }, 60_000);

  it("refuse a type-only cycle, an upward import, an import into types.ts and a use of index.ts, each by its rule", async () => {
    const { code, output } = await cruise(
      tree({
        ...HEALTHY,
        "types.ts":
          'import type { Shape } from "./shape.js";\nexport interface Message { text: string; shape?: Shape }\n',
        "shape.ts": 'import type { Message } from "./types.js";\nexport interface Shape { of: Message }\n',
        "models/model.ts":
          'import type { loop } from "../agent/loop.js";\nexport const echo = <T>(m: T): T => m;\nexport type L = typeof loop;\n',
        "agent/loop.ts":
          'import { echo } from "../models/model.js";\nimport type { Message } from "../index.js";\nexport const loop = (m: Message) => echo(m);\n',
      }),
    );
    expect(code).not.toBe(0);
    expect(output).toMatch(/no-circular: packages\/pi-course\/src\/(types|shape)\.ts/);
    expect(output).toContain(
      "types-imports-nothing: packages/pi-course/src/types.ts → packages/pi-course/src/shape.ts",
    );
    expect(output).toContain(
      "layer-models: packages/pi-course/src/models/model.ts → packages/pi-course/src/agent/loop.ts",
    );
    expect(output).toContain("no-index-inside: packages/pi-course/src/agent/loop.ts → packages/pi-course/src/index.ts");
  }, 60_000);

  it("refuse a helper of base/ that imports the vocabulary or a layer, by its rule", async () => {
    const { code, output } = await cruise(
      tree({
        ...HEALTHY,
        "base/errors.ts":
          'import type { Message } from "../types.js";\nimport { echo } from "../models/model.js";\nexport const fail = (m: Message) => new Error(echo(m).text);\n',
      }),
    );
    expect(code).not.toBe(0);
    expect(output).toContain(
      "base-imports-only-base: packages/pi-course/src/base/errors.ts → packages/pi-course/src/types.ts",
    );
    expect(output).toContain(
      "base-imports-only-base: packages/pi-course/src/base/errors.ts → packages/pi-course/src/models/model.ts",
    );
  }, 60_000);
});

describe("the top of src/", () => {
  it("holds only the vocabulary and index.ts: a helper goes into a folder, base/ for those under everything (ARCHITECTURE.md)", () => {
    const top = readdirSync(join(ROOT, "packages/pi-course/src"), { withFileTypes: true })
      .filter((entry) => entry.isFile())
      .map((entry) => entry.name)
      .sort();
    expect(top).toEqual(["event-stream.ts", "index.ts", "messages.ts", "model.ts", "types.ts"]);
  });
});
