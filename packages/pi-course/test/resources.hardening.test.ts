/**
 * A hostile repository before and after the trust gate (issue 41, items 10 and 11): an alias
 * bomb in a skill's frontmatter, a FIFO named SKILL.md, a template that is `/dev/zero`, a
 * template larger than the cap, a skills folder full of links to itself, and an AGENTS.md that is
 * a link to a key outside the repository. Untrusted, nothing of its protected files is read (no
 * warning about them: they were only listed); trusted, each is a warning and the start goes on.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadResources } from "../src/resources/resources.js";
import { RESOURCE_FILE_MAX_BYTES } from "../src/resources/resource-file.js";
import type { ResourceLocations } from "../src/resources/types.js";

let base: string;
let repo: string;
let locations: ResourceLocations;
const BOMB = [
  "---",
  "name: bomb",
  "description: x",
  'a: &a ["x","x","x","x","x","x","x","x","x","x"]',
  "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]",
  "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]",
  "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]",
  "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]",
  "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]",
  "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f,*f]",
  "h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g,*g]",
  "---",
  "Boom.",
].join("\n");

beforeAll(() => {
  // The real path: on macOS the temporary folder is a symlink (/var -> /private/var).
  base = realpathSync(mkdtempSync(path.join(tmpdir(), "pi-hostile-repo-")));
  repo = path.join(base, "repo");
  const skills = path.join(repo, ".pi-course", "skills");
  const prompts = path.join(repo, ".pi-course", "prompts");
  for (const folder of ["bomb", "fifo", "fine"]) mkdirSync(path.join(skills, folder), { recursive: true });
  mkdirSync(prompts, { recursive: true });
  mkdirSync(path.join(base, "home", ".pi-course"), { recursive: true });
  execFileSync("git", ["init", "-q", repo]);
  writeFileSync(path.join(skills, "bomb", "SKILL.md"), BOMB);
  execFileSync("mkfifo", [path.join(skills, "fifo", "SKILL.md")]);
  writeFileSync(path.join(skills, "fine", "SKILL.md"), "---\nname: fine\ndescription: A fine skill.\n---\nDo it.\n");
  // ten links back to the skills folder: a walk that follows them reads it 10^4 times over
  for (let i = 0; i < 10; i++) symlinkSync(skills, path.join(skills, `loop${i}`));
  symlinkSync("/dev/zero", path.join(prompts, "zero.md"));
  writeFileSync(path.join(prompts, "huge.md"), "x".repeat(RESOURCE_FILE_MAX_BYTES + 1));
  writeFileSync(path.join(prompts, "deploy.md"), "Deploy $1.");
  writeFileSync(path.join(base, "id_key"), "PRIVATE KEY");
  symlinkSync(path.join(base, "id_key"), path.join(repo, "AGENTS.md"));
  locations = { cwd: repo, piHome: path.join(base, "home", ".pi-course"), userHome: path.join(base, "home") };
});
afterAll(() => rmSync(base, { recursive: true, force: true }));

const ofRepo = (warnings: { path: string; message: string }[]) =>
  warnings.filter((w) => w.path.startsWith(repo)).map((w) => [path.relative(repo, w.path), w.message]);

describe("a hostile repository", () => {
  it("untrusted: its skills and templates are listed for the question, never read; the linked AGENTS.md is left out", async () => {
    const listed: string[] = [];
    const resources = await loadResources({
      locations,
      trust: {
        ask: async () => {
          listed.push("asked");
          return false;
        },
      },
    });
    expect(listed).toEqual(["asked"]);
    expect(resources.projectResources.map((p) => path.relative(repo, p)).sort()).toEqual([
      ".pi-course/prompts/deploy.md",
      ".pi-course/prompts/huge.md",
      ".pi-course/prompts/zero.md",
      ".pi-course/skills/bomb/SKILL.md",
      ".pi-course/skills/fine/SKILL.md",
    ]);
    expect(resources.contextFiles.filter((f) => f.text.includes("PRIVATE KEY"))).toEqual([]);
    expect(ofRepo(resources.warnings)).toEqual([
      [
        "AGENTS.md",
        `it links to ${path.join(base, "id_key")}, outside ${repo}: it is left out (a context file is read only inside the folder that holds it)`,
      ],
    ]);
  });

  it("trusted: each bad file is a warning, the good ones load, and the start goes on", async () => {
    const resources = await loadResources({ locations, trust: { override: true } });
    expect(resources.skills.filter((s) => s.scope === "project").map((s) => s.name)).toEqual(["fine"]);
    expect(resources.templates.map((t) => t.name)).toEqual(["deploy"]);
    const warnings = ofRepo(resources.warnings);
    expect(warnings.filter(([file]) => file !== "AGENTS.md")).toEqual([
      [
        ".pi-course/skills/bomb/SKILL.md",
        "skipped: the frontmatter cannot be read as YAML: Excessive alias count indicates a resource exhaustion attack",
      ],
      [
        ".pi-course/prompts/huge.md",
        `skipped: it is larger than ${RESOURCE_FILE_MAX_BYTES} bytes, more than a file read here may hold`,
      ],
      [".pi-course/prompts/zero.md", "skipped: it is not a regular file (it is a device)"],
    ]);
  });
});

describe("the note of an untrusted folder", () => {
  it("names the kinds that were there, with their counts", async () => {
    const only = path.join(base, "only-extensions");
    mkdirSync(path.join(only, ".pi-course", "extensions"), { recursive: true });
    execFileSync("git", ["init", "-q", only]);
    for (const name of ["a.mjs", "b.mjs"])
      writeFileSync(path.join(only, ".pi-course", "extensions", name), "export default () => {};\n");
    const resources = await loadResources({ locations: { ...locations, cwd: only } });
    expect(resources.notes).toEqual([
      `2 project resource(s) of ${only} skipped (2 extensions): it is not trusted yet: run with --approve, or answer the question in the interactive mode`,
    ]);
  });
});
