/**
 * practice/typecheck.ts checks many folders in one program and checks a file that several folders
 * hold in the same context only once. These tests show that a file is never given another
 * folder's result when anything it depends on differs: what it imports (directly or not), a body
 * that decides an inferred return type, or a module augmentation in a file it does not import.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { typecheckFolders, type TypecheckStats } from "../typecheck.js";

const TSCONFIG = JSON.stringify({
  compilerOptions: {
    target: "ES2022",
    lib: ["ES2022"],
    module: "NodeNext",
    moduleResolution: "NodeNext",
    strict: true,
    skipLibCheck: true,
    noEmit: true,
    types: [],
  },
  include: ["src/**/*.ts"],
});

const root = mkdtempSync(join(tmpdir(), "pi-typecheck-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let count = 0;
/** A folder holding `files` (paths under src/) and a tsconfig.json. */
function folder(files: Record<string, string>): string {
  const dir = join(root, `f${++count}`);
  for (const [file, text] of Object.entries({
    "tsconfig.json": TSCONFIG,
    ...Object.fromEntries(Object.entries(files).map(([f, t]) => [`src/${f}`, t])),
  })) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), text);
  }
  return dir;
}

/** `use.ts` is the same text in every folder below; what it imports is not. */
const USE = `import { make, type Box } from "./mid.js";\nexport const box: Box = make();\nexport const n: number = box.value;\n`;
const MID = `export { make, type Box } from "./lib.js";\n`;

function check(folders: string[]): { result: Map<string, string[]>; stats: TypecheckStats } {
  const stats: TypecheckStats = { checked: 0, reused: 0 };
  return { result: typecheckFolders(folders, stats), stats };
}

describe("typecheckFolders: one check per distinct context, never a result from another context", () => {
  it("a file whose indirect import differs in a signature is checked in each folder", () => {
    const good = folder({
      "use.ts": USE,
      "mid.ts": MID,
      "lib.ts": "export interface Box { value: number }\nexport function make(): Box {\n  return { value: 1 };\n}\n",
    });
    const bad = folder({
      "use.ts": USE,
      "mid.ts": MID,
      "lib.ts":
        "export interface Box { value: string }\nexport function make(): Box {\n  return { value: 'one' };\n}\n",
    });
    const { result } = check([good, bad]);
    expect(result.get(good)).toEqual([]);
    expect(result.get(bad)).toEqual([
      expect.stringMatching(/^src\/use\.ts\(3,14\): error TS2322: Type 'string' is not assignable to type 'number'\./),
    ]);
  });

  it("a body that decides an inferred return type counts; a body behind a written return type is shared", () => {
    const lib = (body: string, returns = "") =>
      `export interface Box { value: number }\nexport function make()${returns} {\n  ${body}\n}\n`;
    const inferredGood = folder({ "use.ts": USE, "mid.ts": MID, "lib.ts": lib("return { value: 1 };") });
    const inferredBad = folder({
      "use.ts": USE,
      "mid.ts": MID,
      "lib.ts": lib("return { value: 1, extra: true } as unknown as string;"),
    });
    const inferred = check([inferredGood, inferredBad]);
    expect(inferred.result.get(inferredGood)).toEqual([]);
    expect(inferred.result.get(inferredBad)).toContainEqual(
      expect.stringMatching(/^src\/use\.ts\(2,14\): error TS2322: Type 'string' is not assignable to type 'Box'\./),
    );

    // The same two bodies behind `: Box`: use.ts and mid.ts see only the signature, so the second
    // folder gets their (empty) result from the first; lib.ts itself is checked in both.
    const writtenGood = folder({ "use.ts": USE, "mid.ts": MID, "lib.ts": lib("return { value: 1 };", ": Box") });
    const writtenBad = folder({ "use.ts": USE, "mid.ts": MID, "lib.ts": lib("return 'one';", ": Box") });
    const written = check([writtenGood, writtenBad]);
    expect(written.result.get(writtenGood)).toEqual([]);
    expect(written.result.get(writtenBad)).toEqual([
      expect.stringMatching(/^src\/lib\.ts\(3,3\): error TS2322: Type 'string' is not assignable to type 'Box'\./),
    ]);
    expect(written.stats).toEqual({ checked: 4, reused: 2 });
  });

  it("a module augmentation in a file nobody imports changes the context of every file of its folder", () => {
    const lib = "export interface Box { value: number }\nexport function make(): Box {\n  return { value: 1 };\n}\n";
    const plain = folder({ "use.ts": USE, "mid.ts": MID, "lib.ts": lib });
    const augmented = folder({
      "use.ts": USE,
      "mid.ts": MID,
      "lib.ts": lib,
      "augment.ts": `declare module "./lib.js" {\n  interface Box { label: string }\n}\nexport {};\n`,
    });
    const { result } = check([plain, augmented]);
    expect(result.get(plain)).toEqual([]);
    expect(result.get(augmented)).toContainEqual(
      expect.stringMatching(/^src\/lib\.ts\(3,3\): error TS2741: Property 'label' is missing/),
    );
  });

  it("an error in a shared file is reported in every folder that holds it, with that folder's paths", () => {
    const broken = `import { make } from "./mid.js";\nexport const n: string = make().value;\n`;
    const lib = "export interface Box { value: number }\nexport function make(): Box {\n  return { value: 1 };\n}\n";
    const one = folder({ "use.ts": broken, "mid.ts": MID, "lib.ts": lib });
    const two = folder({ "use.ts": broken, "mid.ts": MID, "lib.ts": lib });
    const { result, stats } = check([one, two]);
    const error = expect.stringMatching(
      /^src\/use\.ts\(2,14\): error TS2322: Type 'number' is not assignable to type 'string'\./,
    );
    expect(result.get(one)).toEqual([error]);
    expect(result.get(two)).toEqual([error]);
    expect(stats).toEqual({ checked: 3, reused: 3 });
  });
});
