/**
 * The authorization of a configured server, as the CLI and library users attach it
 * (`McpServersOptions.auth`): an `McpOAuth` for each remote server whose entry neither turns it
 * off (`"oauth": false`) nor sends an `Authorization` header of its own; none for stdio servers
 * (the specification: they take their keys from the environment).
 */
import type { McpServerConfig } from "../config.js";
import { McpOAuth, type McpOAuthOptions } from "./oauth.js";
import type { TokenStore } from "./token-store.js";

/** What every server's `McpOAuth` shares. */
export type SharedOAuthOptions<Store extends TokenStore = TokenStore> = Pick<
  McpOAuthOptions<Store>,
  "store" | "openUrl" | "fetch" | "loginTimeoutMs" | "redirectUri"
> & {
  /** What a person is told to do when `name` needs a login (default: call `McpOAuth.login`). */
  loginHint?: (name: string) => string;
};

/** The `McpOAuth` of `config`, or undefined when it gets none (see the file comment). */
export function oauthForServer<Store extends TokenStore>(
  config: McpServerConfig,
  shared: SharedOAuthOptions<Store>,
): McpOAuth<Store> | undefined {
  const transport = config.transport;
  if (transport?.kind !== "http" || config.oauth === false) return undefined;
  if (Object.keys(transport.headers ?? {}).some((name) => name.toLowerCase() === "authorization")) return undefined;
  const { loginHint, ...rest } = shared;
  return new McpOAuth({
    ...rest,
    ...config.oauth,
    serverUrl: transport.url,
    ...(loginHint !== undefined && { loginHint: loginHint(config.name) }),
  });
}
