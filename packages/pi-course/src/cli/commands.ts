/**
 * The program's commands besides a run (`npm start -- NAME …`): `export`, and those a later
 * chapter adds (chapter 14's `eval`, chapter 17's `mcp`). Each is loaded only when asked for. A table of its own, not
 * a part of `CliFeature`: a command reads the options with `parseArgs`, which reads the features,
 * so the features must not lead back to it.
 */
import type { CliIO } from "./io.js";

/** A command: argv after its name; resolves with the exit code. */
export interface CliCommand {
  name: string;
  run(argv: readonly string[], io: CliIO, signal?: AbortSignal): Promise<number>;
}

export const COMMANDS: readonly CliCommand[] = [
  {
    // a session as an HTML page, no agent
    name: "export",
    run: async (argv, io) => (await import("./export.js")).runExport(argv, io),
  },
  // #region ch14
  {
    // the eval harness (eval-command.ts parses the rest)
    name: "eval",
    run: async (argv, io, signal) => (await import("./eval-command.js")).runEval(argv, io, signal),
  },
  // #endregion
  // #region ch17
  {
    // the MCP servers of the user's and the project's mcp.json: add, list, get, remove
    name: "mcp",
    run: async (argv, io) => (await import("./mcp-command.js")).runMcpCommand(argv, io),
  },
  // #endregion
];
