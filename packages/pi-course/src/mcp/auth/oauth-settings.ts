/**
 * The `"oauth"` object of a remote server's entry in `mcp.json`:
 *
 * ```json
 * "web": { "url": "https://example.com/mcp",
 *          "oauth": { "clientId": "…", "clientSecret": "${WEB_SECRET}", "scopes": ["mcp:tools"],
 *                     "clientMetadataUrl": "https://me.example/client.json",
 *                     "grant": "client_credentials", "redirectPort": 8765 } }
 * ```
 *
 * Every field is optional: with none, a server that asks for authorization gets dynamic client
 * registration and the code flow. `"oauth": false` turns authorization off for the server (a
 * 401 is then an HTTP error like any other). `${VAR}` in `clientSecret` is read from the
 * environment, as in `headers`.
 */
import type { ClientSettings } from "./client-identity.js";

/** What an entry's `"oauth"` says. */
export interface McpOAuthSettings extends Omit<ClientSettings, "clientName"> {
  scopes?: string[];
  grant?: "authorization_code" | "client_credentials";
  redirectPort?: number;
}

/**
 * Reads an entry's `"oauth"` value (`expand` replaces `${VAR}`s). Throws an `Error` that says
 * what is wrong.
 */
export function readOAuthSettings(value: unknown, expand: (text: string) => string): McpOAuthSettings | false {
  if (value === false) return false;
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new Error('"oauth" must be an object (or false to turn authorization off)');
  const o = value as Record<string, unknown>;
  const out: McpOAuthSettings = {};
  for (const field of ["clientId", "clientSecret", "clientMetadataUrl"] as const) {
    const text = o[field];
    if (text === undefined) continue;
    if (typeof text !== "string" || text === "") throw new Error(`"oauth.${field}" must be a non-empty string`);
    try {
      out[field] = field === "clientSecret" ? expand(text) : text;
    } catch (error) {
      throw new Error(`"oauth.${field}": ${(error as Error).message}`);
    }
  }
  if (out.clientMetadataUrl !== undefined) {
    let url: URL;
    try {
      url = new URL(out.clientMetadataUrl);
    } catch {
      throw new Error(`"oauth.clientMetadataUrl" is not a URL: ${JSON.stringify(out.clientMetadataUrl)}`);
    }
    if (url.pathname === "/") throw new Error('"oauth.clientMetadataUrl" must have a path (it is the client id)');
    const loopback = ["127.0.0.1", "localhost", "[::1]"].includes(url.hostname);
    if (url.protocol !== "https:" && !(loopback && url.protocol === "http:"))
      throw new Error('"oauth.clientMetadataUrl" must be an https URL (authorization servers fetch it)');
  }
  if (o.scopes !== undefined) {
    if (!Array.isArray(o.scopes) || !o.scopes.every((s) => typeof s === "string" && /^\S+$/.test(s)))
      throw new Error('"oauth.scopes" must be a list of scope names (no spaces)');
    out.scopes = o.scopes as string[];
  }
  if (o.grant !== undefined) {
    if (o.grant !== "authorization_code" && o.grant !== "client_credentials")
      throw new Error(
        `"oauth.grant" must be "authorization_code" or "client_credentials", got ${JSON.stringify(o.grant)}`,
      );
    if (o.grant === "client_credentials" && (out.clientId === undefined || out.clientSecret === undefined))
      throw new Error('"oauth.grant": "client_credentials" needs "clientId" and "clientSecret"');
    out.grant = o.grant;
  }
  if (o.redirectPort !== undefined) {
    const port = o.redirectPort;
    if (typeof port !== "number" || !Number.isInteger(port) || port < 1 || port > 65535)
      throw new Error(`"oauth.redirectPort" must be a port number, got ${JSON.stringify(port)}`);
    out.redirectPort = port;
  }
  for (const key of Object.keys(o)) {
    if (!["clientId", "clientSecret", "clientMetadataUrl", "scopes", "grant", "redirectPort"].includes(key))
      throw new Error(
        `"oauth.${key}" is not a field of "oauth" (clientId, clientSecret, clientMetadataUrl, scopes, grant, redirectPort)`,
      );
  }
  return out;
}
