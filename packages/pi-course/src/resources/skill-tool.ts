/**
 * How the model activates a skill and reads its files: the `skill` tool.
 *
 * A user's skill lies outside the workspace, where `read` cannot reach. Rather than widening the
 * workspace (which would widen `write`, `edit` and `bash` too), the `skill` tool reads, and only
 * reads, the folders of the skills that were found: `{name}` activates a skill (its instructions
 * and the list of its files), `{name, path}` reads one of its files once it is active. A path
 * that leaves the skill's folder, also through a symbolic link, is refused.
 *
 * `SkillLibrary` holds the skills of a conversation and which are active; `/skill:NAME` (the user)
 * activates through it too, so the model can then read that skill's files.
 */
import { errorText } from "../base/errors.js";
import { readdirSync, readFileSync, realpathSync, statSync } from "node:fs";
import path from "node:path";
import { Type } from "typebox";
import { defineTool } from "../agent/tools.js";
import type { AgentTool } from "../types.js";
import { readSkillBody, skillInvocation, type Skill } from "./skills.js";

/** The largest skill file the tool returns (256 KiB); bigger files are refused with a hint. */
export const SKILL_FILE_MAX_BYTES = 256 * 1024;

/** The skills of one conversation, and which of them are active. */
export class SkillLibrary {
  private readonly byName = new Map<string, Skill>();
  private readonly active = new Set<string>();

  constructor(readonly skills: readonly Skill[]) {
    for (const skill of skills) this.byName.set(skill.name, skill);
  }

  get(name: string): Skill | undefined {
    return this.byName.get(name);
  }

  isActive(name: string): boolean {
    return this.active.has(name);
  }

  /**
   * Marks `name` active and returns it. Throws an `Error` the model or user can act on for an
   * unknown skill, and for the model (`by: "model"`) a skill with `disable-model-invocation`.
   */
  activate(name: string, by: "model" | "user"): Skill {
    const skill = this.byName.get(name);
    if (skill === undefined) {
      const known = this.skills.filter((s) => by === "user" || !s.disableModelInvocation).map((s) => s.name);
      throw new Error(
        `there is no skill "${name}"; the skills are: ${known.length === 0 ? "(none)" : known.join(", ")}`,
      );
    }
    if (by === "model" && skill.disableModelInvocation) {
      throw new Error(
        `the skill "${name}" can be activated only by the user (/skill:${name}); it sets disable-model-invocation`,
      );
    }
    this.active.add(name);
    return skill;
  }

  /** What `/skill:NAME ARGS` sends the model (see `skillInvocation`); activates the skill. */
  invoke(name: string, args: string): string {
    return skillInvocation(this.activate(name, "user"), args);
  }

  /**
   * The text of `relative` inside the active skill `name`'s folder (a folder: its entries).
   * Throws for a skill that is not active, a path outside its folder (lexically or through a
   * symbolic link), a file that is not text, or one over `SKILL_FILE_MAX_BYTES`.
   */
  readFile(name: string, relative: string): string {
    const skill = this.byName.get(name);
    if (skill === undefined || !this.active.has(name)) {
      throw new Error(`activate the skill "${name}" first: call skill with {"name": "${name}"} alone`);
    }
    const target = path.resolve(skill.folder, relative);
    const inside = (outer: string, inner: string) => {
      const r = path.relative(outer, inner);
      return r === "" || (!r.startsWith("..") && !path.isAbsolute(r));
    };
    if (path.isAbsolute(relative) || !inside(skill.folder, target)) {
      throw new Error(`"${relative}" is outside the skill's folder; give a path relative to ${skill.folder}`);
    }
    let real: string;
    try {
      real = realpathSync(target);
    } catch (error) {
      throw new Error(
        `the skill "${name}" has no "${relative}" (${(error as NodeJS.ErrnoException).code ?? String(error)})`,
      );
    }
    if (!inside(realpathSync(skill.folder), real)) {
      throw new Error(`"${relative}" leads outside the skill's folder (a symbolic link); it is not read`);
    }
    const stats = statSync(real);
    if (stats.isDirectory()) return listFiles(real, real).join("\n") || "(an empty folder)";
    if (stats.size > SKILL_FILE_MAX_BYTES) {
      throw new Error(
        `"${relative}" is ${stats.size} bytes, over ${SKILL_FILE_MAX_BYTES}; read parts of it with bash (e.g. head, sed -n)`,
      );
    }
    const bytes = readFileSync(real);
    if (bytes.includes(0)) throw new Error(`"${relative}" is not a text file; use it with bash by its path ${target}`);
    return bytes.toString("utf8");
  }
}

/** Files below `folder` relative to `base` (folders end in `/`), dot-entries left out, at most 200. */
function listFiles(folder: string, base: string, out: string[] = []): string[] {
  let entries;
  try {
    entries = readdirSync(folder, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1));
  } catch {
    return out;
  }
  for (const entry of entries) {
    if (out.length >= 200 || entry.name.startsWith(".")) continue;
    const full = path.join(folder, entry.name);
    const shown = path.relative(base, full);
    if (entry.isDirectory()) {
      out.push(`${shown}/`);
      listFiles(full, base, out);
    } else out.push(shown);
  }
  return out;
}

const skillParameters = Type.Object({
  name: Type.String({ description: "The skill's name, as listed in <available_skills>." }),
  path: Type.Optional(
    Type.String({
      description:
        "A file of the active skill, relative to its folder (e.g. references/guide.md). Leave out to activate.",
    }),
  ),
});

/** What a `skill` call did, for programs and UIs. */
export interface SkillToolDetails {
  skill: string;
  /** `activate` without a path, `read` with one. */
  action: "activate" | "read";
  path?: string;
}

/**
 * The `skill` tool over `library`: `{name}` activates a skill and returns its instructions and
 * its files; `{name, path}` reads a file of an active skill. Refusals are error results the
 * model can read (never a throw out of `execute`).
 */
export function createSkillTool(library: SkillLibrary): AgentTool<typeof skillParameters, SkillToolDetails> {
  return defineTool({
    name: "skill",
    label: "Skill",
    description:
      "Activates one of the skills listed in <available_skills> and returns its instructions, or, with `path`, reads one " +
      "of an active skill's files (relative to the skill's folder). Read-only.",
    parameters: skillParameters,
    executionMode: "parallel",
    execute: async (_id, { name, path: relative }) => {
      try {
        if (relative === undefined || relative === "") {
          const skill = library.activate(name, "model");
          const files = listFiles(skill.folder, skill.folder).filter((f) => f !== "SKILL.md");
          const text =
            `<skill name="${skill.name}" location="${skill.location}">\n${readSkillBody(skill)}\n</skill>\n` +
            (files.length === 0
              ? ""
              : `\nFiles of this skill (read one with skill and its path):\n${files.join("\n")}\n`);
          return { content: [{ type: "text", text }], details: { skill: name, action: "activate" } };
        }
        const text = library.readFile(name, relative);
        return { content: [{ type: "text", text }], details: { skill: name, action: "read", path: relative } };
      } catch (error) {
        return {
          content: [{ type: "text", text: errorText(error) }],
          details: { skill: name, action: relative ? "read" : "activate", ...(relative && { path: relative }) },
          isError: true,
        };
      }
    },
  });
}
