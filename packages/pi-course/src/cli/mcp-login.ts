/**
 * `npm start -- mcp login NAME` and `mcp logout NAME`: OAuth for a remote MCP server of the
 * user's or the project's `mcp.json`, kept in `~/.pi-course/mcp-auth/` (one 0600 file per server
 * URL; `McpTokenStore`). Login prints the authorization URL, opens it in a browser where there
 * is one (`open-browser.ts`) and waits for the browser to come back to the loopback redirect (5
 * minutes, or `--timeout SECONDS`); a server configured with `"grant": "client_credentials"`
 * gets its token without a browser. Neither ever prints a token. What the server, its
 * authorization server or the configuration chose (the server's name, the URL to open, the
 * issuer, the scope, an error's words) is shown through the terminal guard (terminal-text.ts).
 */
import { errorText } from "../base/errors.js";
import { McpTokenStore } from "../mcp/auth/token-store.js";
import { oauthForServer } from "../mcp/auth/server-auth.js";
import type { McpServerConfig } from "../mcp/config.js";
import type { CliIO } from "./io.js";
import { openBrowser } from "./open-browser.js";
import { mcpAuthFolder } from "./settings.js";
import { untrustedText, untrustedUrl } from "./terminal-text.js";

/** What a person is told when the server `name` needs a login. */
export function loginHint(name: string): string {
  return `run "pi-course mcp login ${name}"`;
}

/** The OAuth of `config` with the CLI's store; throws when the server takes none. */
function oauthOf(config: McpServerConfig, env: NodeJS.ProcessEnv) {
  if (config.transport?.kind !== "http")
    throw new Error(`the MCP server "${config.name}" is started as a program; it takes its keys in "env", not a login`);
  const auth = oauthForServer(config, { store: new McpTokenStore(mcpAuthFolder(env)), loginHint });
  if (auth === undefined)
    throw new Error(
      `the MCP server "${config.name}" sends its own Authorization header or has "oauth": false; remove that to log in`,
    );
  return auth;
}

/** Logs in to `config`'s server; resolves with the exit code. */
export async function runLogin(
  config: McpServerConfig,
  io: CliIO,
  options: { browser: boolean; timeoutMs: number | undefined },
): Promise<number> {
  const auth = oauthOf(config, io.env);
  const name = shown(config.name);
  try {
    const result = await auth.login({
      ...(options.timeoutMs !== undefined && { timeoutMs: options.timeoutMs }),
      openUrl: async (url) => {
        const address = untrustedUrl(url);
        if ("refused" in address)
          throw new Error(`the authorization server's page cannot be offered: ${address.refused}`);
        io.stdout.write(
          `To authorize the MCP server ${name} (of ${config.source}), open this URL in a browser:\n\n${address.lines.join("\n")}\n\n`,
        );
        const opened = options.browser ? await openBrowser(url, io.env) : undefined;
        io.stdout.write(
          opened !== undefined
            ? `(opened with ${shown(opened)}); waiting for the browser to come back…\n`
            : "waiting for the browser to come back…\n",
        );
      },
    });
    const scope = result.scope !== undefined ? ` with the scope "${shown(result.scope)}"` : "";
    io.stdout.write(
      `logged in to the MCP server ${name} at ${shown(result.issuer)}${scope}; ` +
        `the tokens are kept in ${auth.options.store.fileOf(auth.options.serverUrl)} (only you can read it)\n`,
    );
    return 0;
  } catch (error) {
    io.stderr.write(`error: cannot log in to the MCP server ${name}: ${shown(errorText(error))}\n`);
    return 1;
  }
}

/** Forgets `config`'s tokens; resolves with the exit code. */
export async function runLogout(config: McpServerConfig, io: CliIO): Promise<number> {
  const auth = oauthOf(config, io.env);
  const had = await auth.logout();
  io.stdout.write(
    had
      ? `logged out of the MCP server ${shown(config.name)}: its tokens are deleted\n`
      : `no tokens were kept for the MCP server ${shown(config.name)}\n`,
  );
  return 0;
}

/** A text the server, its authorization server or the configuration chose, as the terminal shows it. */
function shown(text: string): string {
  return untrustedText(text, { max: 500 });
}
