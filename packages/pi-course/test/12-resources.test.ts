/**
 * Chapter 12: the project around the agent. Every test works on real folders made on disk (a
 * real `git init` where the walk must stop at the git root), real extension modules imported by
 * the host, and the real `Agent` on a scripted model.
 *
 * Timeouts are a minute: the first import of a TypeScript extension loads jiti's transformer
 * (about a second alone, over ten on a loaded machine; the course proof runs several folders at once).
 */
import { execFileSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Agent } from "../src/agent/agent.js";
import type { BeforeToolCallContext } from "../src/agent/types.js";
import { assistantMessage, textOf } from "../src/messages.js";
import { ScriptedModel } from "../src/models/scripted-model.js";
import {
  CONTEXT_FILE_MAX_BYTES,
  contextFilesSection,
  findContextFiles,
  linksOutside,
  truncationNote,
} from "../src/resources/context-files.js";
import type { ExtensionAPI, ExtensionFactory } from "../src/resources/extension-api.js";
import { ExtensionHost } from "../src/resources/extension-host.js";
import {
  expandTemplate,
  loadPromptTemplates,
  parseSlashCommand,
  splitArguments,
  templateFolders,
} from "../src/resources/prompt-templates.js";
import { composeSystemPrompt, loadResources, resourceTools } from "../src/resources/resources.js";
import { createSkillTool, SkillLibrary } from "../src/resources/skill-tool.js";
import { discoverSkills, skillInvocation, skillRoots, skillsSection } from "../src/resources/skills.js";
import { decideTrust, isTrusted, TrustStore, TrustStoreError } from "../src/resources/trust.js";
import type { ResourceLocations } from "../src/resources/types.js";
import type { AgentTool, ToolResultMessage } from "../src/types.js";

let base: string;
beforeEach(() => {
  // The real path: on macOS the temporary folder is a symlink (/var -> /private/var).
  base = realpathSync(mkdtempSync(path.join(tmpdir(), "pi-course-12-")));
});
afterEach(() => {
  rmSync(base, { recursive: true, force: true });
});

/** Writes `files` (path relative to `root` → text) and returns `root`. */
function tree(root: string, files: Record<string, string>): string {
  for (const [name, text] of Object.entries(files)) {
    const file = path.join(root, name);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, text);
  }
  mkdirSync(root, { recursive: true });
  return root;
}

function gitInit(folder: string): void {
  mkdirSync(folder, { recursive: true });
  execFileSync("git", ["init", "-q", folder]);
}

/** A home (`~`), its `~/.pi-course`, and a working folder. */
function locationsIn(cwd: string): ResourceLocations {
  const userHome = path.join(base, "home");
  mkdirSync(userHome, { recursive: true });
  return { cwd, piHome: path.join(userHome, ".pi-course"), userHome };
}

const skillFile = (frontmatter: string, body = "Do the thing.\n") => `---\n${frontmatter}\n---\n${body}`;

// ---------------------------------------------------------------------------------------------
// Lab 12.1: context files
// ---------------------------------------------------------------------------------------------

describe("context files", { timeout: 60_000 }, () => {
  it("Lab 12.1 · the user's AGENTS.md, then every folder from the root down, past the git root; AGENTS.md before CLAUDE.md", () => {
    const outer = path.join(base, "outer");
    const repo = path.join(outer, "repo");
    gitInit(repo);
    const cwd = path.join(repo, "pkg", "sub");
    tree(base, {
      "home/.pi-course/AGENTS.md": "user rules",
      "outer/AGENTS.md": "outer rules",
      "outer/repo/AGENTS.md": "repo rules",
      "outer/repo/pkg/CLAUDE.md": "pkg rules (claude)",
      "outer/repo/pkg/sub/AGENTS.md": "sub rules",
      "outer/repo/pkg/sub/CLAUDE.md": "not read: the folder has an AGENTS.md",
    });
    const { files, warnings } = findContextFiles({ cwd, piHome: path.join(base, "home", ".pi-course") });
    const ours = files.filter((f) => f.path.startsWith(base));
    expect(ours.map((f) => [path.relative(base, f.path), f.scope, f.text])).toEqual([
      ["home/.pi-course/AGENTS.md", "user", "user rules"],
      ["outer/AGENTS.md", "project", "outer rules"],
      ["outer/repo/AGENTS.md", "project", "repo rules"],
      ["outer/repo/pkg/CLAUDE.md", "project", "pkg rules (claude)"],
      ["outer/repo/pkg/sub/AGENTS.md", "project", "sub rules"],
    ]);
    expect(warnings).toEqual([]);
  });

  it("Lab 12.1 · a file over the cap is cut at a whole character with a visible note; a file reached twice is read once", () => {
    const cwd = path.join(base, "work");
    const big = "é".repeat(40_000); // 80,000 bytes
    tree(cwd, { "AGENTS.md": big });
    symlinkSync(path.join(cwd, "AGENTS.md"), path.join(base, "AGENTS.md"));
    const { files, warnings } = findContextFiles({ cwd });
    const ours = files.filter((f) => f.path.startsWith(base));
    expect(ours.map((f) => f.path)).toEqual([path.join(base, "AGENTS.md")]);
    const file = ours[0]!;
    expect(file.truncated).toBe(true);
    expect(file.bytes).toBe(80_000);
    const note = truncationNote(file.path, 80_000, CONTEXT_FILE_MAX_BYTES);
    expect(note).toBe(
      `[… cut: ${file.path} is 80000 bytes; only the first 65536 bytes are shown. Read the file for the rest.]`,
    );
    expect(file.text).toBe(`${"é".repeat(CONTEXT_FILE_MAX_BYTES / 2)}\n${note}`);
    expect(warnings).toEqual([
      { path: file.path, message: "it is 80000 bytes, over the cap of 65536: the model sees the first 65536 bytes" },
    ]);
    // an odd cap falls inside a two-byte character: that character is left out, not broken
    const odd = findContextFiles({ cwd, maxBytes: 5 }).files.find((f) => f.path.startsWith(base))!;
    expect(odd.text.split("\n")[0]).toBe("éé");
  });

  it("Lab 12.1 · an AGENTS.md that links outside its folder (a key in the home folder) is left out with a warning", () => {
    const cwd = path.join(base, "linked", "repo");
    tree(base, { "linked/id_key": "PRIVATE KEY", "linked/repo/a.ts": "" });
    symlinkSync(path.join(base, "linked", "id_key"), path.join(cwd, "AGENTS.md"));
    const { files, warnings } = findContextFiles({ cwd });
    expect(files.filter((f) => f.text.includes("PRIVATE KEY"))).toEqual([]);
    const real = realpathSync(path.join(base, "linked", "id_key"));
    expect(warnings).toEqual([{ path: path.join(cwd, "AGENTS.md"), message: linksOutside(real, cwd) }]);
    expect(linksOutside(real, cwd)).toBe(
      `it links to ${real}, outside ${cwd}: it is left out (a context file is read only inside the folder that holds it)`,
    );
  });

  it("Lab 12.1 · the system prompt shows each file with its path, outermost first", () => {
    const cwd = path.join(base, "a", "b");
    tree(base, { "a/AGENTS.md": "Use tabs.\n", "a/b/AGENTS.md": "Use spaces here.\n" });
    const files = findContextFiles({ cwd }).files.filter((f) => f.path.startsWith(base));
    expect(contextFilesSection(files)).toBe(
      [
        "<project_context>",
        "Instructions from AGENTS.md (or CLAUDE.md) files, the user's first, then from the outermost folder down to the",
        "working folder; where they disagree, the later (closer) file wins.",
        `<project_instructions path="${path.join(base, "a", "AGENTS.md")}">`,
        "Use tabs.",
        "</project_instructions>",
        `<project_instructions path="${path.join(base, "a", "b", "AGENTS.md")}">`,
        "Use spaces here.",
        "</project_instructions>",
        "</project_context>",
      ].join("\n"),
    );
    expect(contextFilesSection([])).toBe("");
  });
});

// ---------------------------------------------------------------------------------------------
// Lab 12.2: skills
// ---------------------------------------------------------------------------------------------

describe("skills", { timeout: 60_000 }, () => {
  it("Lab 12.2 · the specification's edge cases: lenient warnings, skipped only without a description or with broken YAML", () => {
    const root = tree(path.join(base, "skills"), {
      "good/SKILL.md": skillFile(
        "name: good\ndescription: Does good things. Use when asked to be good.\nlicense: MIT\ncompatibility: Needs git\n" +
          "metadata:\n  author: someone\n  version: '1.0'\nallowed-tools: Bash(git:*) Read",
      ),
      "good/references/guide.md": "guide",
      "Bad_Name/SKILL.md": skillFile("name: Bad_Name\ndescription: A bad name."),
      "mismatch/SKILL.md": skillFile("name: other-name\ndescription: Named unlike its folder."),
      "no-desc/SKILL.md": skillFile("name: no-desc"),
      "broken-yaml/SKILL.md": skillFile("name: broken-yaml\ndescription: Use it when: something happens"),
      "long-desc/SKILL.md": skillFile(`name: long-desc\ndescription: ${"x".repeat(1100)}`),
      "no-name/SKILL.md": skillFile("description: No name given."),
      "hidden/SKILL.md": skillFile("name: hidden\ndescription: Only the user runs it.\ndisable-model-invocation: true"),
      "unclosed/SKILL.md": "---\nname: unclosed\ndescription: never closed\n",
      "extra/SKILL.md": skillFile("name: extra\ndescription: Has an unknown field.\nauthor: me"),
      "group/inner/SKILL.md": skillFile("name: inner\ndescription: Found one level down."),
      "group/inner/deeper/SKILL.md": skillFile("name: deeper\ndescription: Not scanned: inside a skill."),
      ".hidden-folder/dot/SKILL.md": skillFile("name: dot\ndescription: Skipped: a dot-folder."),
      "node_modules/dep/SKILL.md": skillFile("name: dep\ndescription: Skipped: node_modules."),
    });
    const { skills, warnings } = discoverSkills([{ folder: root, scope: "user" }]);
    expect(skills.map((s) => s.name)).toEqual([
      "Bad_Name",
      "extra",
      "good",
      "inner",
      "hidden",
      "long-desc",
      "other-name",
      "no-name",
    ]);
    const good = skills.find((s) => s.name === "good")!;
    expect(good).toEqual({
      name: "good",
      description: "Does good things. Use when asked to be good.",
      location: path.join(root, "good", "SKILL.md"),
      folder: path.join(root, "good"),
      scope: "user",
      disableModelInvocation: false,
      license: "MIT",
      compatibility: "Needs git",
      metadata: { author: "someone", version: "1.0" },
      allowedTools: ["Bash(git:*)", "Read"],
    });
    expect(skills.find((s) => s.name === "hidden")!.disableModelInvocation).toBe(true);
    const at = (folder: string) => path.join(root, folder, "SKILL.md");
    expect(warnings).toEqual([
      {
        path: at("Bad_Name"),
        message:
          'the name "Bad_Name" breaks the specification: it may hold only lowercase letters a-z, digits and hyphens',
      },
      {
        path: at("broken-yaml"),
        message: expect.stringMatching(/^skipped: the frontmatter is not valid YAML \(line 3 of the file\): /),
      },
      { path: at("extra"), message: "unknown field `author` is ignored" },
      { path: at("long-desc"), message: "its description is 1100 characters long (the specification allows 1024)" },
      { path: at("mismatch"), message: 'the name "other-name" should match its folder\'s name "mismatch"' },
      {
        path: at("no-desc"),
        message:
          "skipped: it has no `description` in its frontmatter (the model needs it to know when to use the skill)",
      },
      { path: at("no-name"), message: 'it has no `name` in its frontmatter; it is named after its folder, "no-name"' },
      {
        path: at("unclosed"),
        message: "skipped: the frontmatter opened by the first `---` line is never closed by another `---` line",
      },
    ]);
  });

  it("Lab 12.2 · project skills from the working folder up to the git root, then the user's; the first of a name wins", () => {
    const repo = path.join(base, "outer", "repo");
    gitInit(repo);
    const cwd = path.join(repo, "app");
    const locations = locationsIn(cwd);
    tree(base, {
      "outer/.pi-course/skills/above/SKILL.md": skillFile("name: above\ndescription: Above the git root: never found."),
      "outer/repo/.agents/skills/shared/SKILL.md": skillFile("name: shared\ndescription: The repository's."),
      "outer/repo/.agents/skills/root-only/SKILL.md": skillFile("name: root-only\ndescription: Only at the root."),
      "outer/repo/app/.pi-course/skills/shared/SKILL.md": skillFile("name: shared\ndescription: The app's, closest."),
      "home/.pi-course/skills/shared/SKILL.md": skillFile("name: shared\ndescription: The user's."),
      "home/.pi-course/skills/mine/SKILL.md": skillFile("name: mine\ndescription: The user's own."),
      "home/.agents/skills/mine/SKILL.md": skillFile("name: mine\ndescription: Another of the user's."),
    });
    const { skills, warnings } = discoverSkills(skillRoots(locations, true));
    expect(skills.map((s) => [s.name, s.scope, path.relative(base, s.location)])).toEqual([
      ["shared", "project", "outer/repo/app/.pi-course/skills/shared/SKILL.md"],
      ["root-only", "project", "outer/repo/.agents/skills/root-only/SKILL.md"],
      ["mine", "user", "home/.pi-course/skills/mine/SKILL.md"],
    ]);
    const won = (rel: string) => path.join(base, rel);
    expect(warnings).toEqual([
      {
        path: won("outer/repo/.agents/skills/shared/SKILL.md"),
        message: `skipped: the skill "shared" of ${won("outer/repo/app/.pi-course/skills/shared/SKILL.md")} comes first and wins the name`,
      },
      {
        path: won("home/.pi-course/skills/shared/SKILL.md"),
        message: `skipped: the skill "shared" of ${won("outer/repo/app/.pi-course/skills/shared/SKILL.md")} comes first and wins the name`,
      },
      {
        path: won("home/.agents/skills/mine/SKILL.md"),
        message: `skipped: the skill "mine" of ${won("home/.pi-course/skills/mine/SKILL.md")} comes first and wins the name`,
      },
    ]);
    // an untrusted project contributes nothing
    expect(discoverSkills(skillRoots(locations, false)).skills.map((s) => s.name)).toEqual(["mine", "shared"]);
  });

  it("Lab 12.2 · names and descriptions are trimmed (a blank one is missing); the limits themselves are allowed", () => {
    const root = tree(path.join(base, "skills"), {
      "blank-name/SKILL.md": skillFile('name: "   "\ndescription: A blank name.'),
      "padded/SKILL.md": skillFile('name: " padded "\ndescription: A padded name.'),
      "blank-desc/SKILL.md": skillFile('name: blank-desc\ndescription: "   "'),
      "folded/SKILL.md": skillFile("name: folded\ndescription: |\n  Two lines,\n  kept.\n"),
      "at-limits/SKILL.md": skillFile(
        `name: at-limits\ndescription: ${"d".repeat(1024)}\ncompatibility: ${"c".repeat(500)}`,
      ),
      "over-compat/SKILL.md": skillFile(
        `name: over-compat\ndescription: Long compatibility.\ncompatibility: ${"c".repeat(501)}`,
      ),
    });
    const { skills, warnings } = discoverSkills([{ folder: root, scope: "user" }]);
    expect(skills.map((s) => [s.name, s.description.length])).toEqual([
      ["at-limits", 1024],
      ["blank-name", 13],
      ["folded", 16],
      ["over-compat", 19],
      ["padded", 14],
    ]);
    expect(skills.find((s) => s.name === "folded")!.description).toBe("Two lines,\nkept.");
    expect(skills.find((s) => s.name === "over-compat")!.compatibility).toBe("c".repeat(501));
    const at = (folder: string) => path.join(root, folder, "SKILL.md");
    expect(warnings).toEqual([
      {
        path: at("blank-desc"),
        message:
          "skipped: it has no `description` in its frontmatter (the model needs it to know when to use the skill)",
      },
      {
        path: at("blank-name"),
        message: 'it has no `name` in its frontmatter; it is named after its folder, "blank-name"',
      },
      { path: at("over-compat"), message: "its compatibility is 501 characters long (the specification allows 500)" },
    ]);
  });

  it("Lab 12.2 · an optional field of the wrong type is a warning and is ignored; the skill still loads", () => {
    const root = tree(path.join(base, "skills"), {
      "typed/SKILL.md": skillFile(
        "name: typed\ndescription: Wrong types.\nlicense: 5\ncompatibility: [git]\n" +
          "metadata:\n  author: someone\n  version: 2\nallowed-tools: [Read]\ndisable-model-invocation: 'yes'",
      ),
      "meta-text/SKILL.md": skillFile("name: meta-text\ndescription: Metadata as text.\nmetadata: author someone"),
      "meta-null/SKILL.md": skillFile("name: meta-null\ndescription: Metadata left empty.\nmetadata:"),
      "meta-list/SKILL.md": skillFile("name: meta-list\ndescription: Metadata as a list.\nmetadata: [a, b]"),
      "spaced/SKILL.md": skillFile(
        "name: spaced\ndescription: Blanks around tools.\nallowed-tools: '  Read   Bash(git:*) '",
      ),
    });
    const { skills, warnings } = discoverSkills([{ folder: root, scope: "project" }]);
    const folder = (name: string) => path.join(root, name);
    const plain = (name: string, description: string) => ({
      name,
      description,
      location: path.join(folder(name), "SKILL.md"),
      folder: folder(name),
      scope: "project",
      disableModelInvocation: false,
    });
    expect(skills).toEqual([
      plain("meta-list", "Metadata as a list."),
      plain("meta-null", "Metadata left empty."),
      plain("meta-text", "Metadata as text."),
      { ...plain("spaced", "Blanks around tools."), allowedTools: ["Read", "Bash(git:*)"] },
      { ...plain("typed", "Wrong types."), metadata: { author: "someone" } },
    ]);
    const at = (name: string) => path.join(folder(name), "SKILL.md");
    const notAMapping = "`metadata` should be a mapping of keys to strings; it is ignored";
    expect(warnings).toEqual([
      { path: at("meta-list"), message: notAMapping },
      { path: at("meta-null"), message: notAMapping },
      { path: at("meta-text"), message: notAMapping },
      { path: at("typed"), message: "`license` should be a string; it is ignored" },
      { path: at("typed"), message: "`compatibility` should be a string; it is ignored" },
      { path: at("typed"), message: "`metadata.version` should be a string; it is ignored" },
      { path: at("typed"), message: "`allowed-tools` should be a space-separated string; it is ignored" },
      { path: at("typed"), message: "`disable-model-invocation` should be true or false; the model may invoke it" },
    ]);
  });

  it("Lab 12.2 · a root is no skill itself; one SKILL.md reached through two roots (a run in the home folder) is no conflict; a missing root holds none", () => {
    const home = path.join(base, "home");
    tree(home, {
      ".pi-course/skills/mine/SKILL.md": skillFile("name: mine\ndescription: The user's own."),
      ".agents/skills/shared/SKILL.md": skillFile("name: shared\ndescription: Another of the user's."),
      "flat/SKILL.md": skillFile("name: flat\ndescription: A SKILL.md right in the root."),
    });
    // in the home folder (no git), the project's folders are the user's: every skill is reached twice
    const { skills, warnings } = discoverSkills(skillRoots(locationsIn(home), true));
    expect(skills.map((s) => [s.name, s.scope, path.relative(base, s.location)])).toEqual([
      ["mine", "project", "home/.pi-course/skills/mine/SKILL.md"],
      ["shared", "project", "home/.agents/skills/shared/SKILL.md"],
    ]);
    expect(warnings).toEqual([]);
    expect(
      discoverSkills([
        { folder: path.join(home, "flat"), scope: "user" },
        { folder: path.join(base, "nowhere"), scope: "user" },
        { folder: "", scope: "user" },
      ]),
    ).toEqual({ skills: [], warnings: [] });
  });

  it("Lab 12.2 · progressive disclosure: the prompt lists name, description and location; the body and files come on activation", async () => {
    const description = "Fills PDF forms.";
    const root = tree(path.join(base, "skills"), {
      "pdf/SKILL.md": skillFile(`name: pdf\ndescription: ${description}`, "# PDF\nRun scripts/fill.sh.\n"),
      "pdf/scripts/fill.sh": "#!/bin/sh\necho fill\n",
      "pdf/references/forms.md": "Forms guide.",
      "pdf/assets/logo.bin": "\u0000\u0001binary",
      "secret-tool/SKILL.md": skillFile(
        "name: secret-tool\ndescription: User only.\ndisable-model-invocation: true",
        "Secret body.",
      ),
      "secret-tool/notes.md": "notes",
    });
    writeFileSync(path.join(base, "outside.txt"), "outside");
    symlinkSync(path.join(base, "outside.txt"), path.join(root, "pdf", "references", "link.md"));
    const { skills } = discoverSkills([{ folder: root, scope: "user" }]);
    const section = skillsSection(skills);
    expect(section).toContain(
      `  <skill>\n    <name>pdf</name>\n    <description>${description}</description>\n    <location>${path.join(root, "pdf", "SKILL.md")}</location>\n  </skill>`,
    );
    expect(section).not.toContain("Run scripts/fill.sh");
    expect(section).not.toContain("secret-tool");
    const library = new SkillLibrary(skills);
    const tool = createSkillTool(library);
    const call = async (args: { name: string; path?: string }) => {
      const result = await tool.execute("c1", args);
      return {
        text: result.content.map((c) => (c.type === "text" ? c.text : "")).join(""),
        isError: result.isError === true,
      };
    };
    expect(await call({ name: "pdf", path: "references/forms.md" })).toEqual({
      text: 'activate the skill "pdf" first: call skill with {"name": "pdf"} alone',
      isError: true,
    });
    expect(await call({ name: "pdf" })).toEqual({
      text:
        `<skill name="pdf" location="${path.join(root, "pdf", "SKILL.md")}">\n# PDF\nRun scripts/fill.sh.\n</skill>\n\n` +
        "Files of this skill (read one with skill and its path):\nassets/\nassets/logo.bin\nreferences/\nreferences/forms.md\nreferences/link.md\nscripts/\nscripts/fill.sh\n",
      isError: false,
    });
    expect(await call({ name: "pdf", path: "references/forms.md" })).toEqual({ text: "Forms guide.", isError: false });
    expect(await call({ name: "pdf", path: "../secret-tool/notes.md" })).toEqual({
      text: `"../secret-tool/notes.md" is outside the skill's folder; give a path relative to ${path.join(root, "pdf")}`,
      isError: true,
    });
    expect((await call({ name: "pdf", path: path.join(base, "outside.txt") })).isError).toBe(true);
    expect(await call({ name: "pdf", path: "references/link.md" })).toEqual({
      text: '"references/link.md" leads outside the skill\'s folder (a symbolic link); it is not read',
      isError: true,
    });
    expect((await call({ name: "pdf", path: "assets/logo.bin" })).text).toMatch(
      /^"assets\/logo\.bin" is not a text file/,
    );
    expect(await call({ name: "secret-tool" })).toEqual({
      text: 'the skill "secret-tool" can be activated only by the user (/skill:secret-tool); it sets disable-model-invocation',
      isError: true,
    });
    expect(await call({ name: "nope" })).toEqual({
      text: 'there is no skill "nope"; the skills are: pdf',
      isError: true,
    });
    // the user activates it; then the model may read its files
    const secret = skills.find((s) => s.name === "secret-tool")!;
    expect(library.invoke("secret-tool", "  go  ")).toBe(
      `<skill name="secret-tool" location="${secret.location}">\nReferences are relative to ${secret.folder}.\n\nSecret body.\n</skill>\n\ngo`,
    );
    expect(skillInvocation(secret, "")).toBe(
      `<skill name="secret-tool" location="${secret.location}">\nReferences are relative to ${secret.folder}.\n\nSecret body.\n</skill>`,
    );
    expect(await call({ name: "secret-tool", path: "notes.md" })).toEqual({ text: "notes", isError: false });
  });
});

// ---------------------------------------------------------------------------------------------
// Lab 12.3: prompt templates
// ---------------------------------------------------------------------------------------------

describe("prompt templates", { timeout: 60_000 }, () => {
  it("Lab 12.3 · arguments split as a shell splits words", () => {
    expect(splitArguments("")).toEqual([]);
    expect(splitArguments("  a   b\tc ")).toEqual(["a", "b", "c"]);
    expect(splitArguments(`"two words" 'single $1 \\n' mixed"quo"'ted'`)).toEqual([
      "two words",
      "single $1 \\n",
      "mixedquoted",
    ]);
    expect(splitArguments(`"a \\"quote\\" and \\\\ and \\x" b\\ c ""`)).toEqual([
      'a "quote" and \\ and \\x',
      "b c",
      "",
    ]);
    expect(splitArguments(`"unclosed quote runs on`)).toEqual(["unclosed quote runs on"]);
    expect(splitArguments(`'unclosed single $1`)).toEqual(["unclosed single $1"]);
    // a line break is a blank too; a lone backslash at the end has nothing to escape and stays
    expect(splitArguments("a\nb\r\nc")).toEqual(["a", "b", "c"]);
    expect(splitArguments("dir\\")).toEqual(["dir\\"]);
  });

  it("Lab 12.3 · $1, $@, $ARGUMENTS, ${N:-default}, ${@:N:L}; substituted text is not expanded again", () => {
    const body =
      "Review $1 for ${2:-bugs}. All: $@. Again: $ARGUMENTS. Rest: ${@:2}. One: ${@:2:1}. Tenth: ${10}. Missing: [$3]";
    expect(expandTemplate(body, ["main.ts", "speed", "x"])).toBe(
      "Review main.ts for speed. All: main.ts speed x. Again: main.ts speed x. Rest: speed x. One: speed. Tenth: . Missing: [x]",
    );
    expect(expandTemplate("Review $1 for ${2:-bugs}.", ["a.ts"])).toBe("Review a.ts for bugs.");
    expect(expandTemplate("Review $1 for ${2:-bugs}.", ["a.ts", ""])).toBe("Review a.ts for bugs.");
    // an argument that looks like a placeholder stays as it is
    expect(expandTemplate("$1 then $2", ["$2", "${1:-x} $ARGUMENTS"])).toBe("$2 then ${1:-x} $ARGUMENTS");
    expect(expandTemplate("cost: $5.00 and $HOME", [])).toBe("cost: .00 and $HOME");
  });

  it("Lab 12.3 · templates from the project's and the user's prompts folders; the project's wins a name", () => {
    const cwd = path.join(base, "work");
    const locations = locationsIn(cwd);
    const explain = "Explain this code in plain words, step by step, for a newcomer to the codebase: $@";
    tree(base, {
      "work/.pi-course/prompts/review.md":
        "---\ndescription: Review a file\nargument-hint: <file> [focus]\n---\nReview $1 for ${2:-bugs}.\n",
      "work/.pi-course/prompts/bad name.md": "skipped",
      "home/.pi-course/prompts/review.md": "The user's review.",
      "home/.pi-course/prompts/explain.md": `\n\n${explain}\n`,
      "home/.pi-course/prompts/broken.md": "---\ndescription: [unclosed\n---\nbody",
    });
    const { templates, warnings } = loadPromptTemplates(templateFolders(locations, true));
    expect(templates.map((t) => [t.name, t.scope, t.description, t.argumentHint])).toEqual([
      ["review", "project", "Review a file", "<file> [focus]"],
      ["explain", "user", `${explain.slice(0, 59)}…`, undefined], // the first line, cut to 60 characters
    ]);
    expect(templates[0]!.body).toBe("Review $1 for ${2:-bugs}.\n");
    expect(expandTemplate(templates[0]!.body, splitArguments("src/a.ts"))).toBe("Review src/a.ts for bugs.\n");
    expect(warnings.map((w) => [path.relative(base, w.path), w.message.replace(/\(line.*$/, "")])).toEqual([
      [
        "work/.pi-course/prompts/bad name.md",
        'skipped: "bad name" cannot be a command (letters, digits, ".", "_" and "-", not first)',
      ],
      ["home/.pi-course/prompts/broken.md", "skipped: the frontmatter is not valid YAML "],
      [
        "home/.pi-course/prompts/review.md",
        `skipped: the template /review of ${path.join(cwd, ".pi-course", "prompts", "review.md")} comes first and wins the name`,
      ],
    ]);
    expect(loadPromptTemplates(templateFolders(locations, false)).templates.map((t) => t.path)).toEqual([
      path.join(base, "home/.pi-course/prompts/explain.md"),
      path.join(base, "home/.pi-course/prompts/review.md"),
    ]);
    expect(parseSlashCommand("/review  src/a.ts  'the speed'")).toEqual({
      name: "review",
      args: "src/a.ts  'the speed'",
    });
    expect(parseSlashCommand("/skill:pdf")).toEqual({ name: "skill:pdf", args: "" });
    expect(parseSlashCommand("not a command")).toBeUndefined();
  });
});

// ---------------------------------------------------------------------------------------------
// Lab 12.4: the extension host
// ---------------------------------------------------------------------------------------------

/** A TypeScript extension: a tool, a command, a prompt section and a before-hook that denies rm. */
const TS_EXTENSION = `
// the API as far as this extension uses it (an extension outside the package declares its own)
interface Api { registerTool(tool: object): void; registerCommand(name: string, command: object): void; addSystemPrompt(text: string): void; beforeToolCall(hook: (call: { toolName: string; args: Record<string, unknown> }) => object | undefined): void; Type: { Object(p: object): object; String(): object } }
interface Args { text: string }
export default function (api: Api): void {
  const shout = (text: string): string => text.toUpperCase();
  api.registerTool({
    name: "shout", label: "Shout", description: "Says the text loudly.",
    parameters: api.Type.Object({ text: api.Type.String() }),
    execute: async (_id: string, args: Args) => ({ content: [{ type: "text", text: shout(args.text) }], details: undefined }),
  });
  api.registerCommand("shout", { description: "Shouts its arguments", run: (args: string) => shout(args) });
  api.addSystemPrompt("Shout only when asked.");
  api.beforeToolCall((call) => (call.toolName === "shell" && String(call.args.command).includes("rm ") ? { block: true, reason: "no rm here" } : undefined));
}
`;

/** A JavaScript extension with a plain JSON Schema and an after-hook that adds a line. */
const JS_EXTENSION = `
export default async (api) => {
  await new Promise((resolve) => setTimeout(resolve, 5));
  api.registerTool({
    name: "shell", label: "Shell", description: "Pretends to run a command.",
    parameters: { type: "object", properties: { command: { type: "string" } }, required: ["command"] },
    execute: async (_id, args) => ({ content: [{ type: "text", text: "ran " + args.command }], details: { command: args.command } }),
  });
  api.afterToolCall((call) => call.toolName === "shell" ? { content: [...call.result.content, { type: "text", text: " (checked)" }] } : undefined);
};
`;

function call(id: string, name: string, args: Record<string, unknown>) {
  return { type: "toolCall" as const, id, name, arguments: args };
}

/** Runs one prompt on a scripted model that makes `calls` in one turn, then stops; returns the tool results. */
async function runCalls(
  host: ExtensionHost,
  tools: AgentTool<any, any>[],
  calls: ReturnType<typeof call>[],
): Promise<ToolResultMessage[]> {
  const model = new ScriptedModel([
    assistantMessage(calls, "toolUse"),
    assistantMessage([{ type: "text", text: "done" }], "stop"),
  ]);
  const agent = new Agent({
    initialState: { model, tools },
    beforeToolCall: host.beforeToolCall,
    afterToolCall: host.afterToolCall,
  });
  await agent.prompt("go");
  expect(agent.state.errorMessage).toBeUndefined();
  return agent.state.messages.filter((m): m is ToolResultMessage => "role" in m && m.role === "toolResult");
}

describe("extension host", { timeout: 60_000 }, () => {
  it("Lab 12.4 · TypeScript and JavaScript extensions register tools, commands, prompt sections and hooks that the Agent runs", async () => {
    const folder = tree(path.join(base, "ext"), { "shout.ts": TS_EXTENSION, "shell.mjs": JS_EXTENSION });
    const host = new ExtensionHost({ cwd: base, reservedTools: ["read"], reservedCommands: ["help"] });
    expect(await host.load(path.join(folder, "shout.ts"), "user")).toBe(true);
    expect(await host.load(path.join(folder, "shell.mjs"), "project")).toBe(true);
    expect(host.warnings).toEqual([]);
    expect(host.extensions).toEqual([
      {
        path: path.join(folder, "shout.ts"),
        scope: "user",
        tools: ["shout"],
        commands: ["shout"],
        flags: [],
        beforeHooks: 1,
        afterHooks: 0,
        promptSections: 1,
      },
      {
        path: path.join(folder, "shell.mjs"),
        scope: "project",
        tools: ["shell"],
        commands: [],
        flags: [],
        beforeHooks: 0,
        afterHooks: 1,
        promptSections: 0,
      },
    ]);
    expect(host.systemPromptSection()).toBe(
      `<extension path="${path.join(folder, "shout.ts")}">\nShout only when asked.\n</extension>`,
    );
    expect(await host.commands.get("shout")!.run("hi there", { cwd: base, say: () => {} })).toBe("HI THERE");
    const results = await runCalls(host, host.tools, [
      call("c1", "shout", { text: "hey" }),
      call("c2", "shell", { command: "ls" }),
      call("c3", "shell", { command: "rm -rf /" }),
    ]);
    expect(results.map((r) => [r.toolCallId, textOf(r), r.isError])).toEqual([
      ["c1", "HEY", false],
      ["c2", "ran ls\n (checked)", false],
      ["c3", `blocked by the extension ${path.join(folder, "shout.ts")}: no rm here`, true],
    ]);
  });

  it("Lab 12.4 · stage then commit: a factory that throws, hangs or is missing registers nothing; late registrations and taken names are refused", async () => {
    const folder = tree(path.join(base, "ext"), {
      "throws.mjs": `export default (api) => { api.registerTool({ name: "half", description: "d", parameters: {}, execute: async () => ({ content: [], details: 0 }) }); throw new Error("boom"); };`,
      "hangs.mjs": `export default (api) => { api.addSystemPrompt("never"); return new Promise(() => {}); };`,
      "nodefault.mjs": `export const x = 1;`,
      "syntax.ts": `export default (api: ) => {`,
      "taken.mjs": `export default (api) => { api.registerTool({ name: "read", description: "d", parameters: {}, execute: async () => ({ content: [], details: 0 }) }); api.registerCommand("help", { description: "d", run: () => "" }); api.registerCommand("fine", { description: "d", run: () => "ok" }); };`,
    });
    const host = new ExtensionHost({
      cwd: base,
      reservedTools: ["read"],
      reservedCommands: ["help"],
      factoryTimeoutMs: 100,
    });
    let late: ((api: unknown) => void) | undefined;
    const loaded = [
      await host.load(path.join(folder, "throws.mjs"), "user"),
      await host.load(path.join(folder, "hangs.mjs"), "user"),
      await host.load(path.join(folder, "nodefault.mjs"), "user"),
      await host.load(path.join(folder, "syntax.ts"), "user"),
      await host.load(path.join(folder, "taken.mjs"), "user"),
      await host.loadFactory((api) => void (late = () => api.addSystemPrompt("too late")), "late", "flag"),
    ];
    expect(loaded).toEqual([false, false, false, false, true, true]);
    expect(() => late!(undefined)).toThrow("addSystemPrompt: register while the extension's factory runs, not later");
    expect(host.tools).toEqual([]);
    expect([...host.commands.keys()]).toEqual(["fine"]);
    expect(host.systemPromptSection()).toBe("");
    expect(
      host.warnings.map((w) => [path.basename(w.path), w.message.replace(/imported \(.*$/s, "imported (…)")]),
    ).toEqual([
      ["throws.mjs", "not loaded (nothing of it is registered): its factory threw: boom"],
      ["hangs.mjs", "not loaded (nothing of it is registered): its factory did not finish within 100 ms"],
      ["nodefault.mjs", "not loaded: its default export must be a function (api) => void (the extension's factory)"],
      ["syntax.ts", "not loaded: it cannot be imported (…)"],
      ["taken.mjs", 'its tool "read" is left out: another tool has that name'],
      ["taken.mjs", "its command /help is left out: another command has that name"],
    ]);
  });

  it("Lab 12.4 · a malformed registration fails the factory (nothing of it registers); every method refuses once the factory has returned", async () => {
    const host = new ExtensionHost({ cwd: base });
    const execute = async () => ({ content: [], details: undefined });
    const tool = { name: "t", label: "T", description: "d", parameters: {}, execute };
    const bad: [string, (api: ExtensionAPI) => void][] = [
      ["null tool", (api) => api.registerTool(null as never)],
      ["no execute", (api) => api.registerTool({ ...tool, execute: undefined } as never)],
      ["no description", (api) => api.registerTool({ ...tool, description: undefined } as never)],
      ["bad tool name", (api) => api.registerTool({ ...tool, name: "two words" })],
      ["no parameters", (api) => api.registerTool({ ...tool, parameters: undefined } as never)],
      ["null parameters", (api) => api.registerTool({ ...tool, parameters: null } as never)],
      ["bad command name", (api) => api.registerCommand("Deploy", { description: "d", run: () => "" })],
      ["no run", (api) => api.registerCommand("deploy", { description: "d" } as never)],
      ["no command", (api) => api.registerCommand("deploy", undefined as never)],
      ["before not a function", (api) => api.beforeToolCall("deny" as never)],
      ["after not a function", (api) => api.afterToolCall(undefined as never)],
      ["prompt not a string", (api) => api.addSystemPrompt(42 as never)],
      ["zero timeout", (api) => api.beforeToolCall(() => undefined, { timeoutMs: 0 })],
      ["NaN timeout", (api) => api.afterToolCall(() => undefined, { timeoutMs: Number.NaN })],
    ];
    for (const [name, register] of bad) {
      const loaded = await host.loadFactory(
        (api) => {
          api.addSystemPrompt("staged first");
          register(api);
        },
        name,
        "user",
      );
      expect(loaded, name).toBe(false);
    }
    const threw = "not loaded (nothing of it is registered): its factory threw: ";
    expect(host.warnings.map((w) => [w.path, w.message.replace(threw, "")])).toEqual([
      ["null tool", "registerTool needs a tool with a name, a description, parameters and an execute function"],
      ["no execute", "registerTool needs a tool with a name, a description, parameters and an execute function"],
      ["no description", "registerTool needs a tool with a name, a description, parameters and an execute function"],
      ["bad tool name", 'tool name "two words": use 1-64 of A-Z a-z 0-9 _ -'],
      ["no parameters", 'tool "t" needs parameters (a JSON Schema object)'],
      ["null parameters", 'tool "t" needs parameters (a JSON Schema object)'],
      ["bad command name", 'command name "Deploy": use a-z, 0-9 and -, a letter or digit first'],
      ["no run", 'command "/deploy" needs a run function'],
      ["no command", 'command "/deploy" needs a run function'],
      ["before not a function", "beforeToolCall needs a function"],
      ["after not a function", "afterToolCall needs a function"],
      ["prompt not a string", "addSystemPrompt needs a string"],
      ["zero timeout", "a hook's timeoutMs must be a positive number of milliseconds, got 0"],
      ["NaN timeout", "a hook's timeoutMs must be a positive number of milliseconds, got NaN"],
    ]);
    expect(host.warnings.every((w) => w.message.startsWith(threw))).toBe(true);
    expect([host.extensions, host.tools, host.commands.size, host.systemPromptSection()]).toEqual([[], [], 0, ""]);
    expect([host.hasBeforeHooks, host.hasAfterHooks]).toEqual([false, false]);
    // once the factory has returned, every method refuses
    let api: ExtensionAPI | undefined;
    expect(await host.loadFactory((given) => void (api = given), "kept", "user")).toBe(true);
    const late: [string, () => void][] = [
      ["registerTool", () => api!.registerTool(tool)],
      ["registerCommand", () => api!.registerCommand("deploy", { description: "d", run: () => "" })],
      ["beforeToolCall", () => api!.beforeToolCall(() => undefined)],
      ["afterToolCall", () => api!.afterToolCall(() => undefined)],
    ];
    for (const [method, register] of late) {
      expect(register).toThrow(`${method}: register while the extension's factory runs, not later`);
    }
    expect([host.tools, host.commands.size, host.hasBeforeHooks, host.hasAfterHooks]).toEqual([[], 0, false, false]);
  });

  it("Lab 12.4 · a tool without a label is labelled by its name; a tool name an earlier extension took is left out", async () => {
    const host = new ExtensionHost({ cwd: base });
    const execute = async () => ({ content: [], details: "first" });
    const plain = { name: "plain", description: "d", parameters: {}, execute };
    await host.loadFactory(
      (api) => {
        api.registerTool(plain as never);
        api.registerTool({ ...plain, name: "labelled", label: "Nicely Labelled" });
      },
      "first.ts",
      "user",
    );
    await host.loadFactory(
      (api) =>
        api.registerTool({ ...plain, label: "Second", execute: async () => ({ content: [], details: "second" }) }),
      "second.ts",
      "project",
    );
    expect(host.tools.map((t) => [t.name, t.label])).toEqual([
      ["plain", "plain"],
      ["labelled", "Nicely Labelled"],
    ]);
    expect((await host.tools[0]!.execute("c1", {})).details).toBe("first");
    expect(host.warnings).toEqual([
      { path: "second.ts", message: 'its tool "plain" is left out: another tool has that name' },
    ]);
    expect(host.extensions.map((e) => [e.path, e.tools])).toEqual([
      ["first.ts", ["plain", "labelled"]],
      ["second.ts", []],
    ]);
  });

  it("Lab 12.4 · flags: committed with the rest and read through getFlag once the CLI sets them; a taken name is left out, a bad one fails the factory", async () => {
    const host = new ExtensionHost({ cwd: base, reservedFlags: ["model"] });
    let api: ExtensionAPI | undefined;
    const plan: ExtensionFactory = (given) => {
      api = given;
      given.registerFlag("plan", { description: "plan only" });
      given.registerFlag("level", { description: "how hard", type: "string", default: "low" });
      given.registerFlag("model", { description: "mine" });
      expect(given.getFlag("level")).toBeUndefined(); // not committed yet
    };
    expect(await host.loadFactory(plan, "plan.ts", "user")).toBe(true);
    expect(host.warnings).toEqual([
      { path: "plan.ts", message: "its flag --model is left out: another option has that name" },
    ]);
    expect(host.extensions[0]!.flags).toEqual(["plan", "level"]);
    expect([api!.getFlag("plan"), api!.getFlag("level"), api!.getFlag("model")]).toEqual([undefined, "low", undefined]);
    host.flags.setValues(
      new Map<string, string | true>([
        ["plan", true],
        ["level", "high"],
        ["model", "x"],
      ]),
    );
    expect([api!.getFlag("plan"), api!.getFlag("level"), api!.getFlag("model")]).toEqual([true, "high", undefined]);
    expect(host.flags.list().map((flag) => [flag.name, flag.type, flag.extension])).toEqual([
      ["plan", "boolean", "plan.ts"],
      ["level", "string", "plan.ts"],
    ]);
    expect(
      await host.loadFactory((given) => given.registerFlag("Bad Name", { description: "d" }), "bad.ts", "user"),
    ).toBe(false);
    expect(host.warnings.at(-1)).toEqual({
      path: "bad.ts",
      message:
        'not loaded (nothing of it is registered): its factory threw: flag name "Bad Name": use a-z, 0-9 and -, a letter or digit first, without the leading --',
    });
    expect(
      await host.loadFactory((given) => given.registerFlag("plan", { description: "again" }), "again.ts", "user"),
    ).toBe(true);
    expect(host.warnings.at(-1)).toEqual({
      path: "again.ts",
      message: "its flag --plan is left out: another option has that name",
    });
    expect(() => api!.registerFlag("late", { description: "d" })).toThrow(
      "registerFlag: register while the extension's factory runs, not later",
    );
  });

  it("Lab 12.4 · before-hooks fail closed (throw, deny, hang, unreadable or unclear answer, abort); only block: true blocks; a failing after-hook is a diagnostic and the result stands", async () => {
    const diagnostics: string[] = [];
    const host = new ExtensionHost({ cwd: base, onDiagnostic: (w) => diagnostics.push(`${w.path}: ${w.message}`) });
    let runs = 0;
    const echo: AgentTool<any, any> = {
      name: "echo",
      label: "Echo",
      description: "Echoes.",
      parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] } as never,
      execute: async (_id: string, args: { text: string }) => {
        runs++;
        return { content: [{ type: "text", text: args.text }], details: undefined };
      },
    };
    await host.loadFactory(
      (api) => {
        api.beforeToolCall(
          (c) => {
            if (c.args.text === "throw") throw new Error("the policy file is missing");
            if (c.args.text === "deny") return { block: true };
            if (c.args.text === "hang") return new Promise(() => {});
            if (c.args.text === "null") return null as never;
            if (c.args.text === "not-block") return { block: false, reason: "looked fine" };
            if (c.args.text === "empty-reason") return { block: true, reason: "" };
            if (c.args.text === "truthy") return { block: "yes" } as never;
            if (c.args.text === "a-string") return "block" as never;
            if (c.args.text === "unreadable") {
              return {
                get block(): boolean {
                  throw new Error("a getter broke");
                },
              };
            }
            return undefined;
          },
          { timeoutMs: 50 },
        );
        api.afterToolCall(
          (c) => {
            if (c.args.text === "after-throws") throw new Error("after broke");
            if (c.args.text === "after-hangs") return new Promise(() => {});
            return undefined;
          },
          { timeoutMs: 50 },
        );
      },
      "policy",
      "flag",
    );
    const results = await runCalls(
      host,
      [echo],
      [
        call("a", "echo", { text: "throw" }),
        call("b", "echo", { text: "deny" }),
        call("c", "echo", { text: "hang" }),
        call("n", "echo", { text: "null" }),
        call("o", "echo", { text: "not-block" }),
        call("r", "echo", { text: "empty-reason" }),
        call("u", "echo", { text: "unreadable" }),
        call("t", "echo", { text: "truthy" }),
        call("s", "echo", { text: "a-string" }),
        call("d", "echo", { text: "after-throws" }),
        call("e", "echo", { text: "after-hangs" }),
        call("f", "echo", { text: "fine" }),
      ],
    );
    expect(results.map((r) => [r.toolCallId, textOf(r), r.isError])).toEqual([
      [
        "a",
        "the tool call was not run: a check of the extension policy failed (the policy file is missing) (extension checks fail closed).",
        true,
      ],
      ["b", "blocked by the extension policy: no reason given", true],
      [
        "c",
        "the tool call was not run: a check of the extension policy did not answer within 50 ms (extension checks fail closed).",
        true,
      ],
      ["n", "null", false],
      ["o", "not-block", false],
      ["r", "blocked by the extension policy: no reason given", true],
      [
        "u",
        "the tool call was not run: a check of the extension policy gave an answer that cannot be read (a getter broke) (extension checks fail closed).",
        true,
      ],
      // a JavaScript extension's answer that is not a clear yes or no blocks too
      [
        "t",
        "the tool call was not run: a check of the extension policy gave an answer that cannot be read (its block is a string, not true or false) (extension checks fail closed).",
        true,
      ],
      [
        "s",
        "the tool call was not run: a check of the extension policy gave an answer that cannot be read (a string, not an object) (extension checks fail closed).",
        true,
      ],
      ["d", "after-throws", false],
      ["e", "after-hangs", false],
      ["f", "fine", false],
    ]);
    // the tool ran once for each call that was let through, never again
    expect(runs).toBe(5);
    // the run is aborted while a check is pending: the call is blocked, not let through
    const controller = new AbortController();
    controller.abort();
    const pending = call("z", "echo", { text: "hang" });
    expect(
      await host.beforeToolCall(
        { toolCall: pending, args: pending.arguments } as unknown as BeforeToolCallContext,
        controller.signal,
      ),
    ).toEqual({ block: true, reason: "the run was aborted before the call's checks finished" });
    expect(diagnostics).toEqual([
      'policy: its afterToolCall hook failed (after broke) for "echo"; the result is kept as it was',
      'policy: its afterToolCall hook did not answer within 50 ms for "echo"; the result is kept as it was',
    ]);
  });
});

// ---------------------------------------------------------------------------------------------
// Lab 12.5: the trust gate
// ---------------------------------------------------------------------------------------------

describe("trust gate", { timeout: 60_000 }, () => {
  it("Lab 12.5 · decisions are saved per folder and the closest folder's decision wins", () => {
    const piHome = path.join(base, "home", ".pi-course");
    const store = TrustStore.inHome(piHome);
    const parent = tree(path.join(base, "code"), { "x/y/z/file": "", "sibling/file": "" });
    expect(isTrusted(parent, piHome)).toBeUndefined();
    store.remember(parent, true, new Date(0));
    store.remember(path.join(parent, "x"), false, new Date(0));
    expect(isTrusted(parent, piHome)).toBe(true);
    expect(isTrusted(path.join(parent, "sibling"), piHome)).toBe(true);
    const closest = "the decision of the closest folder wins, not the first saved one that covers it";
    expect(isTrusted(path.join(parent, "x"), piHome), closest).toBe(false);
    expect(isTrusted(path.join(parent, "x", "y", "z"), piHome), closest).toBe(false);
    expect(isTrusted(path.join(base, "codex"), piHome)).toBeUndefined(); // a prefix is not a parent
    // the closest wins whatever the order the decisions were saved in (here the child first)
    const otherHome = path.join(base, "other-home");
    TrustStore.inHome(otherHome).remember(path.join(parent, "x"), false, new Date(0));
    TrustStore.inHome(otherHome).remember(parent, true, new Date(0));
    expect(isTrusted(path.join(parent, "x", "y"), otherHome), closest).toBe(false);
    expect(isTrusted(path.join(parent, "sibling"), otherHome)).toBe(true);
    // a symlinked path means the same folder
    symlinkSync(path.join(parent, "x"), path.join(base, "link"));
    expect(isTrusted(path.join(base, "link", "y"), piHome)).toBe(false);
    expect(JSON.parse(readFileSync(store.file, "utf8"))).toEqual({
      version: 1,
      folders: {
        [parent]: { trusted: true, decidedAt: "1970-01-01T00:00:00.000Z" },
        [path.join(parent, "x")]: { trusted: false, decidedAt: "1970-01-01T00:00:00.000Z" },
      },
    });
    writeFileSync(store.file, "{ not json");
    expect(() => isTrusted(parent, piHome)).toThrow(TrustStoreError);
    expect(() => isTrusted(parent, piHome)).toThrow(`the trust file ${store.file} is not JSON`);
  });

  it("Lab 12.5 · the rule of a run: the flag, else the saved decision, else the user's answer (asked once, saved), else untrusted", async () => {
    const store = TrustStore.inHome(path.join(base, "home", ".pi-course"));
    const folder = tree(path.join(base, "project"), {});
    const asked: string[] = [];
    const ask = async (f: string) => {
      asked.push(f);
      return true;
    };
    expect(await decideTrust({ folder, store })).toEqual({ folder, trusted: false, source: "default" });
    expect(await decideTrust({ folder, store, ask: async () => undefined })).toEqual({
      folder,
      trusted: false,
      source: "default",
    });
    expect(store.decisions()).toEqual([]);
    expect(await decideTrust({ folder, store, override: true, ask })).toEqual({
      folder,
      trusted: true,
      source: "flag",
    });
    expect(store.decisions()).toEqual([]);
    expect(await decideTrust({ folder, store, ask })).toMatchObject({ folder, trusted: true, source: "asked" });
    expect(await decideTrust({ folder, store, ask })).toMatchObject({ folder, trusted: true, source: "saved" });
    expect(asked).toEqual([folder]);
    expect(await decideTrust({ folder, store, override: false })).toEqual({ folder, trusted: false, source: "flag" });
  });

  it("Lab 12.5 · an untrusted project's extension is never imported, its skills and templates are skipped and the run says so", async () => {
    const repo = path.join(base, "cloned");
    gitInit(repo);
    const sideEffect = path.join(base, "imported.txt");
    tree(repo, {
      "AGENTS.md": "Project rules.",
      ".pi-course/extensions/evil.mjs": `import { writeFileSync } from "node:fs";\nwriteFileSync(${JSON.stringify(sideEffect)}, "imported");\nexport default (api) => api.addSystemPrompt("evil");\n`,
      ".pi-course/skills/project-skill/SKILL.md": skillFile("name: project-skill\ndescription: The project's."),
      ".pi-course/prompts/deploy.md": "Deploy $1.",
    });
    const locations = locationsIn(repo);
    tree(locations.piHome, { "skills/mine/SKILL.md": skillFile("name: mine\ndescription: The user's.") });
    let sawSideEffectWhenAsked: boolean | undefined;
    const untrusted = await loadResources({
      locations,
      trust: {
        ask: async () => {
          sawSideEffectWhenAsked = existsSync(sideEffect);
          return false;
        },
      },
    });
    expect(sawSideEffectWhenAsked, "the project's extension ran before the user was asked").toBe(false);
    expect(existsSync(sideEffect), "the untrusted project's extension ran (its side-effect file exists)").toBe(false);
    expect(untrusted.trust).toMatchObject({ folder: repo, trusted: false, source: "asked" });
    expect(untrusted.projectResources.map((p) => path.relative(repo, p))).toEqual([
      ".pi-course/skills/project-skill/SKILL.md",
      ".pi-course/prompts/deploy.md",
      ".pi-course/extensions/evil.mjs",
    ]);
    expect(untrusted.skills.map((s) => s.name)).toEqual(["mine"]);
    expect(untrusted.templates).toEqual([]);
    expect(untrusted.extensions.extensions).toEqual([]);
    expect(untrusted.contextFiles.filter((f) => f.path.startsWith(base)).map((f) => f.text)).toEqual([
      "Project rules.",
    ]);
    expect(untrusted.notes).toEqual([
      `3 project resource(s) of ${repo} skipped (1 skill, 1 template, 1 extension): you decided not to trust it (${path.join(locations.piHome, "trust.json")}); --approve loads them for one run`,
    ]);
    // saved: print and json modes (nobody to ask) skip it too, and say so
    const again = await loadResources({ locations });
    expect(existsSync(sideEffect)).toBe(false);
    expect(again.trust).toMatchObject({ trusted: false, source: "saved" });
    expect(again.notes).toEqual(untrusted.notes);
    // never decided, nobody to ask (print and json modes): skipped, and said so
    rmSync(path.join(locations.piHome, "trust.json"));
    expect((await loadResources({ locations })).notes).toEqual([
      `3 project resource(s) of ${repo} skipped (1 skill, 1 template, 1 extension): it is not trusted yet: run with --approve, or answer the question in the interactive mode`,
    ]);
    expect(existsSync(sideEffect)).toBe(false);
    // --approve: loaded for this run
    const approved = await loadResources({ locations, trust: { override: true } });
    expect(readFileSync(sideEffect, "utf8")).toBe("imported");
    expect(approved.skills.map((s) => s.name)).toEqual(["project-skill", "mine"]);
    expect(approved.templates.map((t) => t.name)).toEqual(["deploy"]);
    expect(approved.notes).toEqual([]);
    expect(resourceTools(approved).map((t) => t.name)).toEqual(["skill"]);
    const prompt = composeSystemPrompt("You are an agent.", approved);
    const parts = [
      "You are an agent.",
      "<project_context>",
      "<available_skills>",
      `Current working folder: ${repo}`,
      `<extension path="${path.join(repo, ".pi-course", "extensions", "evil.mjs")}">\nevil\n</extension>`,
    ];
    const positions = parts.map((p) => prompt.indexOf(p));
    expect(positions.every((p) => p >= 0)).toBe(true);
    expect([...positions].sort((a, b) => a - b)).toEqual(positions);
  });
});
