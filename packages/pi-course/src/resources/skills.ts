/**
 * Agent Skills, as the public specification (agentskills.io) defines them: a skill is a folder
 * with a `SKILL.md` (YAML frontmatter with `name` and `description`; optional `license`,
 * `compatibility`, `metadata`, `allowed-tools`; and pi's `disable-model-invocation`), and
 * optional `scripts/`, `references/` and `assets/`.
 *
 * Found, in this order (the first skill of a name wins, each collision is a warning):
 * the project's `.pi-course/skills/` and `.agents/skills/` in every folder from the working folder
 * up to the git root (closest first; only for a trusted project), then the user's
 * `~/.pi-course/skills/` and `~/.agents/skills/`. In a skills folder, a folder with a `SKILL.md`
 * is a skill (nothing below it is scanned); other folders are scanned for skills, except
 * dot-folders and `node_modules`.
 *
 * Validation is lenient, as the specification advises clients: a bad name, a long description
 * or an unknown field is a warning and the skill loads; only a skill whose description is
 * missing or whose frontmatter does not parse is skipped (with the reason).
 *
 * Progressive disclosure: the system prompt lists each skill's name, description and location
 * (`skillsSection`); the body is read from disk only when the skill is activated (`skill-tool.ts`
 * for the model, `/skill:NAME` for the user).
 */
import { readdirSync, realpathSync, statSync } from "node:fs";
import path from "node:path";
import { parseFrontmatter } from "./frontmatter.js";
import { readResourceFile } from "./resource-file.js";
import { foldersToProjectRoot } from "./folders.js";
import type { ResourceLocations, ResourceScope, ResourceWarning } from "./types.js";

/** A skill found on disk (its body is not read until it is activated). */
export interface Skill {
  name: string;
  description: string;
  /** The absolute path of its `SKILL.md`. */
  location: string;
  /** The skill's folder (absolute): its files are read relative to it. */
  folder: string;
  scope: Exclude<ResourceScope, "flag">;
  /** `disable-model-invocation: true`: not listed to the model; only the user activates it. */
  disableModelInvocation: boolean;
  license?: string;
  compatibility?: string;
  metadata?: Record<string, string>;
  /** `allowed-tools` (experimental in the specification): the tools the skill expects, as given. */
  allowedTools?: string[];
}

/** One folder skills are looked for in. */
export interface SkillRoot {
  folder: string;
  scope: Skill["scope"];
}

/** The longest `name` and `description` (and `compatibility`) the specification allows. */
export const SKILL_NAME_MAX = 64;
export const SKILL_DESCRIPTION_MAX = 1024;
export const SKILL_COMPATIBILITY_MAX = 500;

const KNOWN_FIELDS = new Set([
  "name",
  "description",
  "license",
  "compatibility",
  "metadata",
  "allowed-tools",
  "disable-model-invocation",
]);

/**
 * The folders skills are looked for in, in precedence order. Project folders only when
 * `trustedProject` (the trust gate decides).
 */
export function skillRoots(locations: ResourceLocations, trustedProject: boolean): SkillRoot[] {
  const roots: SkillRoot[] = [];
  if (trustedProject) {
    for (const folder of foldersToProjectRoot(locations.cwd)) {
      roots.push({ folder: path.join(folder, ".pi-course", "skills"), scope: "project" });
      roots.push({ folder: path.join(folder, ".agents", "skills"), scope: "project" });
    }
  }
  roots.push({ folder: path.join(locations.piHome, "skills"), scope: "user" });
  roots.push({ folder: path.join(locations.userHome, ".agents", "skills"), scope: "user" });
  return roots;
}

/**
 * What is wrong with a skill name by the specification (1–64 characters of `a-z`, `0-9` and
 * `-`, not starting or ending with `-`, no `--`), or undefined when it is fine.
 */
export function skillNameProblem(name: string): string | undefined {
  if (name.length === 0) return "it is empty";
  if (name.length > SKILL_NAME_MAX) return `it is ${name.length} characters long (at most ${SKILL_NAME_MAX})`;
  if (!/^[a-z0-9-]+$/.test(name)) return "it may hold only lowercase letters a-z, digits and hyphens";
  if (name.startsWith("-") || name.endsWith("-")) return "it may not start or end with a hyphen";
  if (name.includes("--")) return "it may not hold two hyphens in a row";
  return undefined;
}

/**
 * Reads one skill folder (`folder/SKILL.md`). Returns the skill, or undefined when it is skipped;
 * every problem is pushed to `warnings` (a skipped skill's warning says it is skipped and why).
 */
export function readSkill(folder: string, scope: Skill["scope"], warnings: ResourceWarning[]): Skill | undefined {
  const location = path.join(folder, "SKILL.md");
  const read = readResourceFile(location);
  if ("problem" in read) {
    warnings.push({ path: location, message: `skipped: ${read.problem}` });
    return undefined;
  }
  const text = read.text;
  // #region lab 12.2 readSkill
  const parsed = parseFrontmatter(text);
  if (!parsed.ok) {
    warnings.push({ path: location, message: `skipped: ${parsed.error}` });
    return undefined;
  }
  const data = parsed.data;
  const warn = (message: string) => warnings.push({ path: location, message });
  const description = typeof data.description === "string" ? data.description.trim() : "";
  if (description === "") {
    warn("skipped: it has no `description` in its frontmatter (the model needs it to know when to use the skill)");
    return undefined;
  }
  const folderName = path.basename(folder);
  let name: string;
  if (typeof data.name === "string" && data.name.trim() !== "") {
    name = data.name.trim();
    const problem = skillNameProblem(name);
    if (problem !== undefined) warn(`the name "${name}" breaks the specification: ${problem}`);
    if (name !== folderName) warn(`the name "${name}" should match its folder's name "${folderName}"`);
  } else {
    name = folderName;
    warn(`it has no \`name\` in its frontmatter; it is named after its folder, "${name}"`);
  }
  if (description.length > SKILL_DESCRIPTION_MAX) {
    warn(
      `its description is ${description.length} characters long (the specification allows ${SKILL_DESCRIPTION_MAX})`,
    );
  }
  const skill: Skill = {
    name,
    description,
    location,
    folder,
    scope,
    disableModelInvocation: data["disable-model-invocation"] === true,
  };
  if (data.license !== undefined) {
    if (typeof data.license === "string") skill.license = data.license;
    else warn("`license` should be a string; it is ignored");
  }
  if (data.compatibility !== undefined) {
    if (typeof data.compatibility !== "string") warn("`compatibility` should be a string; it is ignored");
    else {
      skill.compatibility = data.compatibility;
      if (data.compatibility.length > SKILL_COMPATIBILITY_MAX) {
        warn(
          `its compatibility is ${data.compatibility.length} characters long (the specification allows ${SKILL_COMPATIBILITY_MAX})`,
        );
      }
    }
  }
  if (data.metadata !== undefined) {
    const metadata = data.metadata;
    if (typeof metadata !== "object" || metadata === null || Array.isArray(metadata)) {
      warn("`metadata` should be a mapping of keys to strings; it is ignored");
    } else {
      skill.metadata = {};
      for (const [key, value] of Object.entries(metadata)) {
        if (typeof value === "string") skill.metadata[key] = value;
        else warn(`\`metadata.${key}\` should be a string; it is ignored`);
      }
    }
  }
  const allowed = data["allowed-tools"];
  if (allowed !== undefined) {
    if (typeof allowed === "string") skill.allowedTools = allowed.split(/\s+/).filter((t) => t !== "");
    else warn("`allowed-tools` should be a space-separated string; it is ignored");
  }
  if (data["disable-model-invocation"] !== undefined && typeof data["disable-model-invocation"] !== "boolean") {
    warn("`disable-model-invocation` should be true or false; the model may invoke it");
  }
  for (const key of Object.keys(data)) if (!KNOWN_FIELDS.has(key)) warn(`unknown field \`${key}\` is ignored`);
  return skill;
  // #endregion
}

/**
 * The skill folders below `root` (a folder with `SKILL.md` is one; its insides are not scanned).
 * A folder reached twice (a symbolic link loop, or two links to one folder) is scanned once, and
 * the walk stops after `MAX_SCANNED_FOLDERS` folders: a repository cannot hold the start up.
 */
function skillFolders(root: string, depth = 0, seen = new Set<string>()): string[] {
  let entries;
  try {
    const real = realpathSync(root);
    if (seen.has(real) || seen.size >= MAX_SCANNED_FOLDERS) return [];
    seen.add(real);
    entries = readdirSync(root, { withFileTypes: true });
  } catch {
    return [];
  }
  if (entries.some((e) => e.name === "SKILL.md" && (e.isFile() || e.isSymbolicLink()))) return [root];
  if (depth >= 4) return [];
  const found: string[] = [];
  for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    if (entry.name.startsWith(".") || entry.name === "node_modules") continue;
    const child = path.join(root, entry.name);
    let isFolder = entry.isDirectory();
    if (entry.isSymbolicLink()) {
      try {
        isFolder = statSync(child).isDirectory();
      } catch {
        isFolder = false;
      }
    }
    if (isFolder) found.push(...skillFolders(child, depth + 1, seen));
  }
  return found;
}

/** The most folders one skills root is scanned for skills. */
const MAX_SCANNED_FOLDERS = 2_000;

/**
 * The `SKILL.md` files `discoverSkills` would read under `roots`, listed without reading any of
 * them (what the trust question names before anything of an untrusted folder is read).
 */
export function skillFiles(roots: readonly SkillRoot[]): string[] {
  return roots.flatMap((root) =>
    root.folder === ""
      ? []
      : skillFolders(root.folder)
          .filter((f) => f !== root.folder)
          .map((f) => path.join(f, "SKILL.md")),
  );
}

/**
 * Every skill under `roots`, the first of each name winning; each later skill of a taken name is
 * a warning naming the one that won. A skills folder that is not there is not a warning.
 */
export function discoverSkills(roots: readonly SkillRoot[]): { skills: Skill[]; warnings: ResourceWarning[] } {
  // #region lab 12.2 discoverSkills
  const skills: Skill[] = [];
  const warnings: ResourceWarning[] = [];
  const byName = new Map<string, Skill>();
  for (const root of roots) {
    // a root that itself holds SKILL.md is one skill's folder, not a folder of skills: it gives none
    for (const folder of root.folder === "" ? [] : skillFolders(root.folder).filter((f) => f !== root.folder)) {
      const skill = readSkill(folder, root.scope, warnings);
      if (skill === undefined) continue;
      const winner = byName.get(skill.name);
      if (winner !== undefined) {
        if (winner.location !== skill.location) {
          warnings.push({
            path: skill.location,
            message: `skipped: the skill "${skill.name}" of ${winner.location} comes first and wins the name`,
          });
        }
        continue;
      }
      byName.set(skill.name, skill);
      skills.push(skill);
    }
  }
  return { skills, warnings };
  // #endregion
}

function escapeXml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

/**
 * The system prompt's skill catalogue (empty text when no skill may be invoked by the model):
 * name, description and location of each skill without `disable-model-invocation`, and how to
 * activate one (the read-only `skill` tool, `createSkillTool`).
 */
export function skillsSection(skills: readonly Skill[]): string {
  const listed = skills.filter((s) => !s.disableModelInvocation);
  if (listed.length === 0) return "";
  const entries = listed.map(
    (s) =>
      `  <skill>\n    <name>${escapeXml(s.name)}</name>\n    <description>${escapeXml(s.description)}</description>\n` +
      `    <location>${escapeXml(s.location)}</location>\n  </skill>`,
  );
  return [
    "The following skills provide specialised instructions for specific tasks. When a task matches a skill's",
    'description, activate it first: call the `skill` tool with its name (e.g. {"name": "pdf-tools"}) to read its',
    'instructions; then `skill` with a `path` relative to the skill\'s folder (e.g. {"name": "pdf-tools", "path":',
    '"references/forms.md"}) reads its other files. Run its scripts with bash by their absolute path.',
    "<available_skills>",
    ...entries,
    "</available_skills>",
  ].join("\n");
}

/** The instructions of a skill (its `SKILL.md` without the frontmatter), read from disk now. */
export function readSkillBody(skill: Skill): string {
  const read = readResourceFile(skill.location);
  if ("problem" in read)
    throw new Error(`the skill "${skill.name}" cannot be read any more: ${read.problem} (${skill.location})`);
  const parsed = parseFrontmatter(read.text);
  if (!parsed.ok)
    throw new Error(`the skill "${skill.name}" cannot be read any more: ${parsed.error} (${skill.location})`);
  return parsed.body.trim();
}

/**
 * What `/skill:NAME ARGS` sends the model: the skill's instructions in a
 * `<skill name="…" location="…">` block (its files are relative to the folder of `location`),
 * then the user's arguments, if any.
 */
export function skillInvocation(skill: Skill, args: string): string {
  const block =
    `<skill name="${escapeXml(skill.name)}" location="${escapeXml(skill.location)}">\n` +
    `References are relative to ${skill.folder}.\n\n${readSkillBody(skill)}\n</skill>`;
  return args.trim() === "" ? block : `${block}\n\n${args.trim()}`;
}
