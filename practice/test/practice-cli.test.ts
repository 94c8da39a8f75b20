/**
 * End to end: the real `npm run practice` (root script → workspace script → tsx practice/cli.ts)
 * writes a chapter folder into a temporary directory, and refuses what it must refuse.
 */
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadCatalogue, REPO_ROOT } from "../catalogue.js";
import { cdPath } from "../cli.js";
import { focusedCommand } from "../learning.js";

const catalogue = await loadCatalogue();
const chapter = catalogue.rebuild.find((c) => c.id === "03") ?? catalogue.rebuild[0]!;
const valid = catalogue.chapters.map((c) => c.id).join(", ");
const temp = mkdtempSync(join(tmpdir(), "pi-practice-e2e-"));
afterAll(() => rmSync(temp, { recursive: true, force: true }));

function npm(args: string[]): Promise<{ code: number; out: string }> {
  const env = { ...process.env };
  for (const key of Object.keys(env)) if (/^(VITEST|TINYPOOL|__VITEST|INIT_CWD|npm_)/i.test(key)) delete env[key];
  return new Promise((resolve) => {
    execFile("npm", args, { cwd: REPO_ROOT, env, timeout: 120_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, out: `${stdout}${stderr}` });
    });
  });
}

describe("npm run practice, for real", () => {
  it("prints the cd path relative only when the folder is inside the current directory's tree", () => {
    expect(cdPath("/home/ada/work/my-03", "/home/ada")).toBe("./work/my-03");
    expect(cdPath("/tmp/x", "/home/ada/repo")).toBe("/tmp/x");
    expect(cdPath("/home/ada/my-03", "/home/ada/repo")).toBe("/home/ada/my-03");
  });

  it("makes a standalone chapter folder, then refuses to overwrite it", async () => {
    const target = join(temp, "my-ch");
    const made = await npm(["run", "practice", "--", String(chapter.number), target]);
    expect(made.out).toContain(target);
    expect(made.code).toBe(0);
    // The folder is outside the directory npm ran in: the cd line names it absolutely.
    expect(made.out).toContain(`  cd ${target}\n`);
    // the one-lab command is the guide's fast one (a path filter, seconds), not npm test -- -t (every file first)
    expect(made.out).toContain(`  ${focusedCommand(chapter.id, chapter.labs[0]!.id)}    # `);
    expect(made.out).not.toContain("npm test -- -t");
    // npm test typechecks first, so type errors and expectTypeOf tests count.
    expect(JSON.parse(readFileSync(join(target, "package.json"), "utf8")).scripts.test).toBe(
      "tsc --noEmit -p tsconfig.json && vitest run",
    );
    expect(readdirSync(target).sort()).toEqual(
      [".gitignore", "LEARNING.md", "kit", "package.json", "src", "test", "tsconfig.json", "vitest.config.ts"].sort(),
    );
    expect(existsSync(join(target, chapter.testFile))).toBe(true);
    const sites = readdirSync(join(target, "src"), { recursive: true })
      .map((f) => join(target, "src", String(f)))
      .filter((f) => f.endsWith(".ts"))
      .map((f) => readFileSync(f, "utf8"))
      .join("\n");
    expect(sites).toContain(`Lab ${chapter.labs[0]!.id} `);
    expect(sites).toContain("：尚未实现 (not implemented yet)");
    expect(readFileSync(join(target, "LEARNING.md"), "utf8")).toMatch(new RegExp(`^# 第 ${chapter.id} 章`));

    const again = await npm(["run", "practice", "--", chapter.id, target]);
    expect(again.code).not.toBe(0);
    expect(again.out).toContain("already exists");
  }, 180_000);

  it("with -w @pi/course, resolves a relative folder against where npm was run", async () => {
    const target = join(temp, "ws");
    const made = await npm(["run", "practice", "-w", "@pi/course", "--", chapter.id, relative(REPO_ROOT, target)]);
    expect(made.code).toBe(0);
    expect(existsSync(join(target, "LEARNING.md"))).toBe(true);
  }, 180_000);

  it("refuses an unknown chapter (listing the valid ones), a malformed number, and a folder inside the repository", async () => {
    const [unknown, malformed, inside, atRoot] = await Promise.all([
      npm(["run", "practice", "--", "99", join(temp, "x1")]),
      npm(["run", "practice", "--", "3a", join(temp, "x2")]),
      npm(["run", "practice", "--", chapter.id, "packages/pi-course/my-ch"]),
      npm(["run", "practice", "--", chapter.id, "my-ch"]),
    ]);
    expect(unknown.code).not.toBe(0);
    expect(unknown.out).toContain(`Valid chapters: ${valid}.`);
    expect(malformed.code).not.toBe(0);
    expect(malformed.out).toContain('"3a" is not a chapter number');
    expect(inside.code).not.toBe(0);
    expect(inside.out).toContain(`is inside the repository ${REPO_ROOT}`);
    expect(existsSync(join(REPO_ROOT, "packages", "pi-course", "my-ch"))).toBe(false);
    // Not only packages/ and practice/: anywhere in the repository it would be an untracked folder.
    expect(atRoot.code).not.toBe(0);
    expect(atRoot.out).toContain(`is inside the repository ${REPO_ROOT}`);
    expect(existsSync(join(REPO_ROOT, "my-ch"))).toBe(false);
    // Nothing half-made: no refused folder, no staging folder.
    expect(readdirSync(temp).filter((name) => name.startsWith("x") || name.startsWith("."))).toEqual([]);
  }, 180_000);

  it("with -s, a refusal is the only line, named after the command; the exit code stays non-zero", async () => {
    const [practice, checkpoint] = await Promise.all([
      npm(["run", "-s", "practice", "--", "99", join(temp, "x3")]),
      npm(["run", "-s", "checkpoint", "--", "99"]),
    ]);
    expect(practice.code).toBe(2);
    expect(practice.out).toBe(`practice: 没有第 99 章 (no chapter 99). Valid chapters: ${valid}.\n`);
    expect(checkpoint.code).toBe(2);
    expect(checkpoint.out).toBe(`checkpoint: 没有第 99 章 (no chapter 99). Valid chapters: ${valid}.\n`);
  }, 180_000);
});
