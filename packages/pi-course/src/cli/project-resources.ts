/**
 * The project around the agent, as the CLI shows and uses it: the trust question of the
 * interactive mode, the banner lines that list what loaded (and every warning), and the
 * expansion of `/skill:NAME args` and `/TEMPLATE args` into the text sent to the model.
 */
import readline from "node:readline";
import type { Readable, Writable } from "node:stream";
import { expandTemplate, parseSlashCommand, splitArguments } from "../resources/prompt-templates.js";
import type { Resources } from "../resources/resources.js";
import { neutralize, untrustedText } from "./terminal-text.js";

/**
 * Asks on the terminal whether to trust `folder` (y/yes trusts, anything else does not; Ctrl-C or
 * Ctrl-D dismisses: untrusted for this run, nothing saved). Lists what would load first.
 */
export function askTrust(
  io: { input: Readable; output: Writable },
  projectResources: readonly string[],
): (folder: string) => Promise<boolean | undefined> {
  return (folder) =>
    new Promise((resolve) => {
      const out = io.output;
      out.write(
        `\nThe folder ${neutralize(folder)} holds project resources that can steer the agent or run code in it:\n`,
      );
      for (const file of projectResources.slice(0, 10)) out.write(`  ${untrustedText(file, { indent: "    │ " })}\n`);
      if (projectResources.length > 10) out.write(`  … and ${projectResources.length - 10} more\n`);
      const rl = readline.createInterface({ input: io.input, output: io.output, terminal: true });
      let answered = false;
      rl.on("SIGINT", () => rl.close());
      rl.on("close", () => {
        if (!answered) {
          out.write("\n");
          resolve(undefined);
        }
      });
      rl.question("Trust this folder and load them? The answer is remembered (y/N) ", (answer) => {
        answered = true;
        rl.close();
        resolve(/^\s*y(es)?\s*$/i.test(answer));
      });
    });
}

/** The banner's lines about the resources (what loaded), and the warnings (one each). */
export function resourceBanner(resources: Resources): { lines: string[]; warnings: string[] } {
  const lines: string[] = [];
  if (resources.contextFiles.length > 0) {
    lines.push(`context:   ${resources.contextFiles.map((f) => f.path + (f.truncated ? " (cut)" : "")).join(", ")}`);
  }
  if (resources.trust !== undefined) {
    const how = {
      flag: "--approve/--no-approve",
      saved: "saved decision",
      asked: "your answer",
      default: "not decided",
    }[resources.trust.source];
    lines.push(`trust:     ${resources.trust.folder}: ${resources.trust.trusted ? "trusted" : "not trusted"} (${how})`);
  }
  if (resources.skills.length > 0) {
    lines.push(
      `skills:    ${resources.skills.map((s) => `${s.name} (${s.scope}${s.disableModelInvocation ? ", user only" : ""})`).join(", ")}`,
    );
  }
  if (resources.templates.length > 0)
    lines.push(`templates: ${resources.templates.map((t) => `/${t.name}`).join(", ")}`);
  for (const ext of resources.extensions.extensions) {
    const parts = [
      ext.tools.length > 0 ? `tools ${ext.tools.join(", ")}` : "",
      ext.commands.length > 0 ? `commands ${ext.commands.map((c) => `/${c}`).join(", ")}` : "",
      ext.flags.length > 0 ? `flags ${ext.flags.map((f) => `--${f}`).join(", ")}` : "",
      ext.beforeHooks + ext.afterHooks > 0 ? `hooks ${ext.beforeHooks} before, ${ext.afterHooks} after` : "",
      ext.promptSections > 0 ? "a prompt section" : "",
    ].filter((p) => p !== "");
    lines.push(`extension: ${ext.path} (${ext.scope}${parts.length > 0 ? `: ${parts.join("; ")}` : ""})`);
  }
  const warnings = resources.warnings.map((w) => `${w.path}: ${w.message}`);
  // names, paths and messages the project's files chose: through the terminal guard
  return { lines: lines.map((line) => untrustedText(line)), warnings: warnings.map((line) => untrustedText(line)) };
}

/** What a line typed by the user becomes. */
export type ExpandedInput =
  /** Send `text` to the model; `note` says what was expanded. */
  | { kind: "prompt"; text: string; note: string }
  /** A `/skill:` or template problem to show. */
  | { kind: "error"; message: string }
  /** Not ours: an ordinary line or a built-in command. */
  | { kind: "none" };

/** Reads `/skill:NAME args` and `/TEMPLATE args`; anything else (a command of the table too) is `none`. */
export function expandInput(resources: Resources | undefined, line: string): ExpandedInput {
  const command = parseSlashCommand(line);
  if (resources === undefined || command === undefined) return { kind: "none" };
  if (command.name.startsWith("skill:")) {
    const name = command.name.slice("skill:".length);
    try {
      return {
        kind: "prompt",
        text: resources.skillLibrary.invoke(name, command.args),
        note: `skill ${name} activated`,
      };
    } catch (error) {
      return { kind: "error", message: (error as Error).message };
    }
  }
  const template = resources.templates.find((t) => t.name === command.name);
  if (template !== undefined) {
    return {
      kind: "prompt",
      text: expandTemplate(template.body, splitArguments(command.args)).trim(),
      note: `/${template.name} expanded`,
    };
  }
  return { kind: "none" };
}

/** The `/help` lines for templates (`/skills` and an extension's commands are rows of the command table). */
export function resourceHelp(resources: Resources | undefined): string[] {
  if (resources === undefined) return [];
  const lines: string[] = [];
  for (const t of resources.templates)
    lines.push(`/${t.name}${t.argumentHint ? ` ${t.argumentHint}` : ""}`.padEnd(17) + ` ${t.description} (template)`);
  return lines.map((line) => untrustedText(line));
}
