/**
 * The project around the agent, loaded in one call: context files, skills, prompt templates and
 * extensions, behind the trust gate. A program composes the agent from the result
 * (`systemPrompt`, `tools`, the extension host's hooks); the CLI does exactly that.
 *
 * The order: context files (text, no trust needed); then, if the project holds any protected
 * resource (a skill, a template or an extension in its folders), the trust decision (see
 * `trust.ts`), before anything of the project is read as a skill or a template and before any
 * of its extensions is imported; then skills and templates (the project's only when trusted);
 * then extensions: the user's (`~/.pi-course/extensions`), those named on the command line, and
 * the project's (`.pi-course/extensions` of the working folder; only when trusted).
 */
import path from "node:path";
import type { AgentTool } from "../types.js";
import { CONTEXT_FILE_MAX_BYTES, contextFilesSection, findContextFiles, type ContextFile } from "./context-files.js";
import { ExtensionHost, extensionFiles } from "./extension-host.js";
import { projectRoot } from "./folders.js";
import { loadPromptTemplates, templateFiles, templateFolders, type PromptTemplate } from "./prompt-templates.js";
import { createSkillTool, SkillLibrary } from "./skill-tool.js";
import { discoverSkills, skillFiles, skillRoots, skillsSection, type Skill } from "./skills.js";
import { decideTrust, TrustStore, type TrustOutcome } from "./trust.js";
import type { ResourceLocations, ResourceWarning } from "./types.js";

export interface LoadResourcesOptions {
  locations: ResourceLocations;
  /** `false` (`--no-context-files`): no AGENTS.md / CLAUDE.md at all. Default true. */
  contextFiles?: boolean;
  /** The cap per context file in bytes (default 64 KiB). */
  maxContextBytes?: number;
  /** The trust gate: `override` is `--approve`/`--no-approve`; `ask` asks the user (interactive only). */
  trust?: { override?: boolean; ask?: (folder: string) => Promise<boolean | undefined>; store?: TrustStore };
  /** Extensions named on the command line (`--extension PATH`): loaded, the user named them. */
  extensionPaths?: readonly string[];
  /** Tool names taken by the agent's own tools (extension tools may not reuse them). */
  reservedTools?: readonly string[];
  /** Command names taken by the conversation's own commands. */
  reservedCommands?: readonly string[];
  /** Option names taken by the command line's own options (without `--`). */
  reservedFlags?: readonly string[];
  /**
   * Files of the project that other features load only when it is trusted (the CLI's
   * `.pi-course/mcp.json`, which starts programs): found, they ask the trust question as a skill
   * does; their owner reads `trust` afterwards and says itself what it skipped.
   */
  alsoProtected?: readonly string[];
  /** How long an extension's factory may take (default 10 s). */
  factoryTimeoutMs?: number;
  /** Hears problems while the agent runs (an extension's after-hook that failed). */
  onDiagnostic?: (warning: ResourceWarning) => void;
}

/** Everything that loaded, and everything a person should know about it. */
export interface Resources {
  locations: ResourceLocations;
  contextFiles: ContextFile[];
  /** The skills that loaded, in precedence order (`/skills`). */
  skills: Skill[];
  /** The conversation's skills and which are active (the `skill` tool, `/skill:NAME`). */
  skillLibrary: SkillLibrary;
  templates: PromptTemplate[];
  extensions: ExtensionHost;
  /** The project's protected resources found on disk (nothing of them read yet when trust was decided). */
  projectResources: string[];
  /** The trust decision, or undefined when the project holds no protected resource (nobody is asked). */
  trust: TrustOutcome | undefined;
  /** Every problem, each with its file: skipped skills, collisions, cut files, failed extensions. */
  warnings: ResourceWarning[];
  /** Things that are not problems but should be said, e.g. that an untrusted project's resources were skipped. */
  notes: string[];
}

/**
 * The protected resources of the project (files or folders that would load only when trusted):
 * its skill folders, template files and extension files. Reads folder listings only.
 */
export function findProjectResources(locations: ResourceLocations): string[] {
  const { skills, templates, extensions } = projectResourcesByKind(locations);
  return [...skills, ...templates, ...extensions];
}

/** `findProjectResources`, by kind. */
function projectResourcesByKind(locations: ResourceLocations): Record<"skills" | "templates" | "extensions", string[]> {
  // listed, never read: nothing of a folder is read before it is trusted
  return {
    skills: skillFiles(skillRoots(locations, true).filter((r) => r.scope === "project")),
    templates: templateFiles(templateFolders(locations, true).filter((f) => f.scope === "project")),
    extensions: extensionFiles(projectExtensionFolder(locations)),
  };
}

/** What was found, by kind, only the kinds there are: `2 skills, 1 extension`. */
function kindsOf(found: Record<"skills" | "templates" | "extensions", string[]>): string {
  const one = { skills: "skill", templates: "template", extensions: "extension" } as const;
  return (Object.keys(one) as (keyof typeof one)[])
    .filter((kind) => found[kind].length > 0)
    .map((kind) => `${found[kind].length} ${found[kind].length === 1 ? one[kind] : kind}`)
    .join(", ");
}

/** The folder of the project's extensions: `.pi-course/extensions` in the working folder. */
export function projectExtensionFolder(locations: ResourceLocations): string {
  return path.join(locations.cwd, ".pi-course", "extensions");
}

/** Loads the project around the agent (see the file comment). Rejects only for a broken trust file. */
export async function loadResources(options: LoadResourcesOptions): Promise<Resources> {
  const { locations } = options;
  const warnings: ResourceWarning[] = [];
  const notes: string[] = [];
  let contextFiles: ContextFile[] = [];
  if (options.contextFiles !== false) {
    const found = findContextFiles({
      cwd: locations.cwd,
      piHome: locations.piHome,
      maxBytes: options.maxContextBytes ?? CONTEXT_FILE_MAX_BYTES,
    });
    contextFiles = found.files;
    warnings.push(...found.warnings);
  }
  const byKind = projectResourcesByKind(locations);
  const projectResources = [...byKind.skills, ...byKind.templates, ...byKind.extensions];
  let trust: TrustOutcome | undefined;
  if (
    projectResources.length > 0 ||
    (options.alsoProtected ?? []).length > 0 ||
    options.trust?.override !== undefined
  ) {
    trust = await decideTrust({
      folder: projectRoot(locations.cwd),
      store: options.trust?.store ?? TrustStore.inHome(locations.piHome),
      ...(options.trust?.override !== undefined && { override: options.trust.override }),
      ...(options.trust?.ask !== undefined && { ask: options.trust.ask }),
    });
    if (!trust.trusted && projectResources.length > 0) {
      const how =
        trust.source === "saved" || trust.source === "asked"
          ? `you decided not to trust it (${TrustStore.inHome(locations.piHome).file}); --approve loads them for one run`
          : trust.source === "flag"
            ? "--no-approve"
            : "it is not trusted yet: run with --approve, or answer the question in the interactive mode";
      notes.push(
        `${projectResources.length} project resource(s) of ${trust.folder} skipped (${kindsOf(byKind)}): ${how}`,
      );
    }
  }
  const trusted = trust?.trusted === true;
  const skillResult = discoverSkills(skillRoots(locations, trusted));
  warnings.push(...skillResult.warnings);
  const templateResult = loadPromptTemplates(templateFolders(locations, trusted));
  warnings.push(...templateResult.warnings);
  const host = new ExtensionHost({
    cwd: locations.cwd,
    reservedTools: [...(options.reservedTools ?? []), ...(skillResult.skills.length > 0 ? ["skill"] : [])],
    reservedCommands: [...(options.reservedCommands ?? []), ...templateResult.templates.map((t) => t.name)],
    ...(options.reservedFlags !== undefined && { reservedFlags: options.reservedFlags }),
    ...(options.factoryTimeoutMs !== undefined && { factoryTimeoutMs: options.factoryTimeoutMs }),
    ...(options.onDiagnostic !== undefined && { onDiagnostic: options.onDiagnostic }),
  });
  for (const file of extensionFiles(path.join(locations.piHome, "extensions"))) await host.load(file, "user");
  for (const file of options.extensionPaths ?? []) await host.load(path.resolve(locations.cwd, file), "flag");
  if (trusted) for (const file of extensionFiles(projectExtensionFolder(locations))) await host.load(file, "project");
  warnings.push(...host.warnings);
  return {
    locations,
    contextFiles,
    skills: skillResult.skills,
    skillLibrary: new SkillLibrary(skillResult.skills),
    templates: templateResult.templates,
    extensions: host,
    projectResources,
    trust,
    warnings,
    notes,
  };
}

/** The tools the resources add: `skill` when there are skills, then the extensions' tools. */
export function resourceTools(resources: Resources): AgentTool<any, any>[] {
  const tools: AgentTool<any, any>[] = [];
  if (resources.skills.length > 0) tools.push(createSkillTool(resources.skillLibrary));
  tools.push(...resources.extensions.tools);
  return tools;
}

/**
 * `base` with the resources' sections after it, in this order: the context files
 * (`<project_context>`), the skill catalogue (`<available_skills>`), the working folder, what
 * extensions added.
 */
export function composeSystemPrompt(base: string, resources: Resources): string {
  const sections = [
    base.trim(),
    contextFilesSection(resources.contextFiles),
    skillsSection(resources.skills),
    resources.contextFiles.length > 0 || resources.skills.length > 0
      ? `Current working folder: ${resources.locations.cwd}`
      : "",
    resources.extensions.systemPromptSection(),
  ];
  return sections.filter((s) => s !== "").join("\n\n");
}
