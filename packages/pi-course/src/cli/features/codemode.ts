/**
 * Codemode on the command line: `--codemode` (or `$PI_COURSE_CODEMODE`, or `"codemode"` in the
 * config file) adds the `code` tool, a script that calls the other tools in a QuickJS sandbox:
 * first in the tool list the model is given, over every other tool of that list (the MCP
 * servers' and `tool_search` too, each time the list changes).
 */
import { CliUsageError } from "../usage-error.js";
import type { CliFeature } from "./feature.js";

declare module "../run-options.js" {
  interface RunOptions {
    /**
     * `--codemode`, or `$PI_COURSE_CODEMODE` / the config file's `"codemode"` set to `1`, `on` or
     * `true` (a setting: see settings.ts): add the `code` tool (a script that calls the other
     * tools, in a QuickJS sandbox). Absent: off.
     */
    codemode?: boolean;
    /**
     * A later feature brings tools reached only through the code tool (an MCP server whose
     * entry says `"exposure": "codemode"`): the code tool is added even without `--codemode`.
     */
    codeToolWanted?: boolean;
  }
}

/**
 * The codemode setting's value (`--codemode` gives "on"; `$PI_COURSE_CODEMODE`, `"codemode"`):
 * `1`, `on`, `true` (any case) turn it on, `0`, `off`, `false` or nothing leave it off; anything
 * else is a usage error `${subject} must be 1, on or true (or 0, off, false), got "…".`, where
 * `subject` says where the value came from (`$PI_COURSE_CODEMODE`, or `"codemode" in FILE`).
 */
export function codemodeOf(text: string | undefined, subject: string): boolean {
  const value = text?.trim().toLowerCase();
  if (value === undefined || value === "" || value === "0" || value === "off" || value === "false") return false;
  if (value === "1" || value === "on" || value === "true") return true;
  throw new CliUsageError(`${subject} must be 1, on or true (or 0, off, false), got "${value.slice(0, 12)}".`);
}

export const codemode: CliFeature = {
  name: "codemode",
  options: [
    {
      name: "codemode",
      setting: "codemode",
      settingValue: "on",
      section: "options",
      help: `add the code tool: the model writes one JavaScript snippet that calls
the other tools (await tools.NAME(args)) in a QuickJS sandbox in a worker
thread, each call checked like its own; also $PI_COURSE_CODEMODE=1 or
"codemode": "on" in the config file`,
    },
  ],
  parse({ settings, configFile }) {
    const from = settings.codemode?.source === "config" ? `"codemode" in ${configFile}` : "$PI_COURSE_CODEMODE";
    return { codemode: codemodeOf(settings.codemode?.value, from) };
  },
  async setUp(runtime) {
    const { codemode, codeToolWanted } = runtime.options;
    if (codemode !== true && codeToolWanted !== true) return undefined;
    // loaded only when it is used: the launcher and the other runs never load the sandbox
    const { createCodeTool } = await import("../../codemode/code-tool.js");
    return {
      exposeTools: (tools) =>
        codemode === true || tools.some((tool) => tool.exposure === "codemode")
          ? [createCodeTool({ tools }), ...tools]
          : tools,
    };
  },
};
