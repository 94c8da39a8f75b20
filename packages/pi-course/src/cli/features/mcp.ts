/**
 * MCP on the command line: `--mcp-config FILE` (repeatable) besides `~/.pi-course/mcp.json`; the
 * project's own `.pi-course/mcp.json` waits for the trust decision (main.ts).
 */
import path from "node:path";
import { McpConfigError, loadMcpConfig, type McpServerConfig } from "../../mcp/config.js";
import { homeFolder } from "../config.js";
import { neutralize } from "../trace.js";
import { CliUsageError } from "../usage-error.js";
import type { CliFeature } from "./feature.js";

declare module "../run-options.js" {
  interface RunOptions {
    /**
     * The MCP servers to start: `~/.pi-course/mcp.json`, then the project's `.pi-course/mcp.json`
     * once the folder is trusted (main.ts adds it), then each `--mcp-config FILE` (later files
     * replace earlier servers of the same name). Empty when none is configured.
     */
    mcpServers: McpServerConfig[];
    /** What a person should know about the MCP configuration (a project file not read, and why). */
    mcpNotices: string[];
    /** The `--mcp-config FILE`s, absolute, in order (read again with the project's file once it is trusted). */
    mcpConfigFiles: string[];
  }
}

export const mcp: CliFeature = {
  name: "mcp",
  options: [
    {
      name: "mcp-config",
      value: "FILE",
      section: "options",
      help: `start the MCP servers of FILE ({"mcpServers": {"NAME": {"command",
"args", "env", "cwd"} | {"url", "headers"}}}, as other agents write it)
besides those of ~/.pi-course/mcp.json; repeatable, later files win.
Their tools are named mcp__NAME__TOOL; \${VAR} in "env" and "headers" is
read from the environment; /mcp shows each server's state. A project's
.pi-course/mcp.json starts only in a trusted folder (see Trust below)
With more than 20 MCP tools, they are deferred: the model finds them with
tool_search, and each is declared once found`,
    },
  ],
  parse({ values, from, env }) {
    const mcpConfigFiles = (values.get("mcp-config") ?? []).map((file) => path.resolve(from, String(file)));
    try {
      // The project's own .pi-course/mcp.json waits for the trust decision (main.ts); these files
      // are the user's, so they are read now and a bad one is a usage error.
      const found = loadMcpConfig({
        home: path.dirname(homeFolder(env)),
        projectTrusted: false,
        files: mcpConfigFiles,
        env,
      });
      return { mcpServers: found.servers, mcpNotices: found.notices, mcpConfigFiles };
    } catch (error) {
      if (error instanceof McpConfigError) throw new CliUsageError(`${error.message}.`);
      throw error;
    }
  },
  commands: [
    {
      name: "mcp",
      help: "/mcp              the MCP servers: starting, ready with N tools, or failed and why; their stderr",
      run: ({ printer, runtime }) => {
        if (runtime.mcp === undefined)
          return printer.line("no MCP servers are configured (see --mcp-config and ~/.pi-course/mcp.json)", "dim");
        for (const text of runtime.mcp.describe().split("\n")) printer.line(neutralize(text));
      },
    },
  ],
};
