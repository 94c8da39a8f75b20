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
 * A machine's own key instead of a secret (`private_key_jwt`, RFC 7523), and cross-app access
 * through the company's identity provider (token exchange, then the JWT bearer grant):
 *
 * ```json
 * "oauth": { "grant": "client_credentials", "clientId": "svc", "privateKeyFile": "/home/me/keys/svc.pem",
 *            "keyId": "k1", "signingAlgorithm": "ES256" }
 * "oauth": { "grant": "cross_app_access", "clientId": "app", "clientSecret": "${APP_SECRET}",
 *            "identityProvider": { "tokenEndpoint": "https://idp.example/token", "clientId": "app-at-idp",
 *                                  "idToken": "${SSO_ID_TOKEN}" } }
 * ```
 *
 * A configured secret or key goes to one authorization server only: `"issuer"` names it
 * (`"issuer": "https://auth.example.com"`), else it is the first one they were used with. An MCP
 * server that names another is refused (`McpAuthError` "wrong-issuer") with nothing sent there.
 *
 * Every field is optional: with none, a server that asks for authorization gets dynamic client
 * registration and the code flow. `"oauth": false` turns authorization off for the server (a
 * 401 is then an HTTP error like any other). `${VAR}` in `clientSecret`, `privateKey` and the
 * identity provider's `clientSecret` and `idToken` is read from the environment, as in
 * `headers`. `"protocolVersion": "2025-03-26"` allows that revision's endpoint fallback for a
 * server that publishes no metadata.
 */
import type { ClientAuthMethod, ClientSettings } from "./client-identity.js";
import { isSecureUrl } from "./secure-url.js";

/** The identity provider of an entry's cross-app access (text only: the ID token comes from `${VAR}`). */
export interface IdentityProviderEntry {
  tokenEndpoint: string;
  clientId: string;
  clientSecret?: string;
  idToken: string;
}

/** What an entry's `"oauth"` says. */
export interface McpOAuthSettings extends Omit<ClientSettings, "clientName" | "privateKey"> {
  /** PEM text of the private key (usually `${VAR}`). */
  privateKey?: string;
  scopes?: string[];
  grant?: "authorization_code" | "client_credentials" | "cross_app_access";
  redirectPort?: number;
  identityProvider?: IdentityProviderEntry;
  protocolVersion?: string;
}

const FIELDS = [
  "clientId",
  "clientSecret",
  "clientMetadataUrl",
  "scopes",
  "grant",
  "redirectPort",
  "privateKey",
  "privateKeyFile",
  "keyId",
  "signingAlgorithm",
  "tokenEndpointAuthMethod",
  "identityProvider",
  "protocolVersion",
  "issuer",
];
const AUTH_METHODS: ClientAuthMethod[] = ["none", "client_secret_basic", "client_secret_post", "private_key_jwt"];

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
  const secretFields = ["clientSecret", "privateKey"];
  for (const field of [
    "clientId",
    "clientSecret",
    "clientMetadataUrl",
    "privateKey",
    "privateKeyFile",
    "keyId",
    "signingAlgorithm",
    "protocolVersion",
    "issuer",
  ] as const) {
    const text = o[field];
    if (text === undefined) continue;
    if (typeof text !== "string" || text === "") throw new Error(`"oauth.${field}" must be a non-empty string`);
    try {
      out[field] = secretFields.includes(field) ? expand(text) : text;
    } catch (error) {
      throw new Error(`"oauth.${field}": ${(error as Error).message}`);
    }
  }
  if (out.privateKey !== undefined && out.privateKeyFile !== undefined)
    throw new Error('"oauth.privateKey" and "oauth.privateKeyFile" are two ways to give the key: give one');
  if (o.tokenEndpointAuthMethod !== undefined) {
    const method = o.tokenEndpointAuthMethod;
    if (!AUTH_METHODS.includes(method as ClientAuthMethod))
      throw new Error(
        `"oauth.tokenEndpointAuthMethod" must be one of ${AUTH_METHODS.join(", ")}, got ${JSON.stringify(method)}`,
      );
    out.tokenEndpointAuthMethod = method as ClientAuthMethod;
  }
  if (o.identityProvider !== undefined) out.identityProvider = readIdentityProvider(o.identityProvider, expand);
  if (out.issuer !== undefined) {
    let url: URL | undefined;
    try {
      url = new URL(out.issuer);
    } catch {}
    if (url === undefined || !isSecureUrl(url))
      throw new Error(
        `"oauth.issuer" must be the https URL of the authorization server the client belongs to (its metadata's "issuer"), got ${JSON.stringify(out.issuer)}`,
      );
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
    if (o.grant !== "authorization_code" && o.grant !== "client_credentials" && o.grant !== "cross_app_access")
      throw new Error(
        `"oauth.grant" must be "authorization_code", "client_credentials" or "cross_app_access", got ${JSON.stringify(o.grant)}`,
      );
    const keyed = out.privateKey !== undefined || out.privateKeyFile !== undefined;
    if (o.grant === "client_credentials" && (out.clientId === undefined || (out.clientSecret === undefined && !keyed)))
      throw new Error('"oauth.grant": "client_credentials" needs "clientId" and "clientSecret" (or "privateKeyFile")');
    if (o.grant === "cross_app_access" && (out.clientId === undefined || out.identityProvider === undefined))
      throw new Error('"oauth.grant": "cross_app_access" needs "clientId" and "identityProvider"');
    out.grant = o.grant;
  }
  if (o.redirectPort !== undefined) {
    const port = o.redirectPort;
    if (typeof port !== "number" || !Number.isInteger(port) || port < 1 || port > 65535)
      throw new Error(`"oauth.redirectPort" must be a port number, got ${JSON.stringify(port)}`);
    out.redirectPort = port;
  }
  for (const key of Object.keys(o)) {
    if (!FIELDS.includes(key)) throw new Error(`"oauth.${key}" is not a field of "oauth" (${FIELDS.join(", ")})`);
  }
  return out;
}

/** Reads `"oauth.identityProvider"`. */
function readIdentityProvider(value: unknown, expand: (text: string) => string): IdentityProviderEntry {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new Error('"oauth.identityProvider" must be an object (tokenEndpoint, clientId, clientSecret, idToken)');
  const o = value as Record<string, unknown>;
  const text = (field: string, secret: boolean): string | undefined => {
    const v = o[field];
    if (v === undefined) return undefined;
    if (typeof v !== "string" || v === "")
      throw new Error(`"oauth.identityProvider.${field}" must be a non-empty string`);
    try {
      return secret ? expand(v) : v;
    } catch (error) {
      throw new Error(`"oauth.identityProvider.${field}": ${(error as Error).message}`);
    }
  };
  const tokenEndpoint = text("tokenEndpoint", false);
  const clientId = text("clientId", false);
  const idToken = text("idToken", true);
  const clientSecret = text("clientSecret", true);
  if (tokenEndpoint === undefined || clientId === undefined || idToken === undefined)
    throw new Error(
      '"oauth.identityProvider" needs "tokenEndpoint", "clientId" and "idToken" (e.g. "${SSO_ID_TOKEN}")',
    );
  for (const key of Object.keys(o)) {
    if (!["tokenEndpoint", "clientId", "clientSecret", "idToken"].includes(key))
      throw new Error(
        `"oauth.identityProvider.${key}" is not a field (tokenEndpoint, clientId, clientSecret, idToken)`,
      );
  }
  return { tokenEndpoint, clientId, idToken, ...(clientSecret !== undefined && { clientSecret }) };
}
