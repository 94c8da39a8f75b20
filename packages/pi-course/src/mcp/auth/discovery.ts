/**
 * Discovery, as the MCP authorization specification (2025-11-25) orders it:
 *
 * 1. The protected resource metadata of the MCP server (RFC 9728): at the URL the 401's
 *    `WWW-Authenticate` names (`resource_metadata`), else at the well-known URL with the
 *    server's path inserted (`/.well-known/oauth-protected-resource/mcp`), else at the root
 *    (`/.well-known/oauth-protected-resource`). Its `resource` must be the server's URL or a
 *    prefix of it (same origin), else it is refused: a document may not claim another resource.
 * 2. The metadata of the first authorization server it names (`authorization_servers`): for an
 *    issuer with a path (`https://as.example/tenant`), RFC 8414 with the path inserted, OpenID
 *    Connect discovery with the path inserted, then OpenID discovery with the path appended; for
 *    one without, RFC 8414 then OpenID discovery. The first JSON document wins; its `issuer`
 *    must be the issuer asked for.
 * 3. For the authorization code flow, PKCE S256 must be in its
 *    `code_challenge_methods_supported`, else authorizing is refused (the specification's rule:
 *    without it the server may ignore the challenge); `requirePkce` checks it.
 *
 * The 2025-03-26 revision's fallback: a server that negotiated (or is configured to speak)
 * `2025-03-26` and publishes neither document has its endpoints at the root of its origin
 * (`/authorize`, `/token`, `/register`). The 2025-06-18 revision dropped that fallback, so for
 * any other revision a server without metadata is refused with what was tried.
 *
 * Every document is fetched through the one outbound policy (`auth-fetch.ts`: a few same-origin
 * hops, the scheme rule on each, a byte cap and a time limit).
 */
import { errorText } from "../../base/errors.js";
import { type AuthFetch, authFetch } from "./auth-fetch.js";
import { McpAuthError } from "./auth-error.js";
import { requireSecureUrl } from "./secure-url.js";
import type { BearerChallenge } from "./www-authenticate.js";

/** The fields of a protected resource metadata document the client uses (RFC 9728 §2). */
export interface ProtectedResourceMetadata {
  resource: string;
  authorization_servers?: string[];
  scopes_supported?: string[];
  [field: string]: unknown;
}

/** The fields of authorization server metadata the client uses (RFC 8414 §2, and CIMD's flag). */
export interface AuthorizationServerMetadata {
  issuer: string;
  authorization_endpoint?: string;
  token_endpoint: string;
  registration_endpoint?: string;
  scopes_supported?: string[];
  grant_types_supported?: string[];
  code_challenge_methods_supported?: string[];
  token_endpoint_auth_methods_supported?: string[];
  token_endpoint_auth_signing_alg_values_supported?: string[];
  /** The Client ID Metadata Document draft: the server accepts a URL as `client_id`. */
  client_id_metadata_document_supported?: boolean;
  [field: string]: unknown;
}

/** What discovery found for one MCP server. */
export interface Discovered {
  /** The resource indicator (RFC 8707) sent on authorization and token requests. */
  resource: string;
  /** The server's protected resource metadata (absent when it has none: the origin is then the issuer). */
  resourceMetadata?: ProtectedResourceMetadata;
  authorizationServer: AuthorizationServerMetadata;
}

/**
 * The canonical URI of an MCP server as a resource indicator (RFC 8707 §2, the specification's
 * "canonical server URI"): its URL without fragment, scheme and host lower case (URL does that).
 */
export function canonicalResource(serverUrl: string): string {
  const url = new URL(serverUrl);
  url.hash = "";
  return url.href;
}

/** The revision whose servers may publish no metadata (the endpoint fallback applies to them only). */
export const FALLBACK_REVISION = "2025-03-26";

/**
 * Discovers how to authorize against the MCP server at `serverUrl`, from what its 401 said
 * (`challenge`); `protocolVersion`: the revision the server speaks, when known. Throws
 * `McpAuthError` ("discovery") naming the URLs tried when a document is missing or wrong.
 */
export async function discover(
  serverUrl: string,
  challenge: BearerChallenge,
  http: AuthFetch = authFetch(),
  protocolVersion?: string,
): Promise<Discovered> {
  const resourceMetadata = await protectedResourceMetadata(serverUrl, challenge, http);
  // A server without RFC 9728 metadata: the specification's fallback is its origin as the issuer.
  const issuer = resourceMetadata?.authorization_servers?.[0] ?? new URL(serverUrl).origin;
  const legacy = resourceMetadata === undefined && protocolVersion === FALLBACK_REVISION;
  const authorizationServer = await authorizationServerMetadata(issuer, http, legacy);
  return {
    resource: resourceMetadata?.resource ?? canonicalResource(serverUrl),
    ...(resourceMetadata !== undefined && { resourceMetadata }),
    authorizationServer,
  };
}

/** Throws unless `server` lists PKCE S256 (needed for the authorization code flow). */
export function requirePkce(server: AuthorizationServerMetadata): void {
  if (!(server.code_challenge_methods_supported ?? []).includes("S256")) {
    throw new McpAuthError(
      "discovery",
      `the authorization server ${server.issuer} does not list S256 in code_challenge_methods_supported; ` +
        "authorizing without PKCE is refused",
    );
  }
}

/**
 * The protected resource metadata of `serverUrl`: from the challenge's URL, else the two
 * well-known URLs. Undefined when the server publishes none; throws when a document is wrong.
 */
export async function protectedResourceMetadata(
  serverUrl: string,
  challenge: BearerChallenge,
  http: AuthFetch = authFetch(),
): Promise<ProtectedResourceMetadata | undefined> {
  const server = new URL(serverUrl);
  const candidates =
    challenge.resourceMetadata !== undefined
      ? [new URL(challenge.resourceMetadata, server).href]
      : wellKnownUrls(server, "oauth-protected-resource", false);
  for (const url of candidates) {
    requireSecureUrl(url, "protected resource metadata URL");
    const document = await fetchJson(url, http);
    if (document === undefined) continue;
    if (typeof document.resource !== "string")
      throw new McpAuthError("discovery", `the protected resource metadata at ${url} has no "resource"`);
    if (!coversServer(document.resource, server)) {
      throw new McpAuthError(
        "discovery",
        `the protected resource metadata at ${url} is for ${document.resource}, not for ${server.href}; refused`,
      );
    }
    const servers = document.authorization_servers;
    if (servers !== undefined && (!Array.isArray(servers) || !servers.every((s) => typeof s === "string")))
      throw new McpAuthError("discovery", `"authorization_servers" of ${url} is not a list of URLs`);
    return document as ProtectedResourceMetadata;
  }
  if (challenge.resourceMetadata !== undefined)
    throw new McpAuthError(
      "discovery",
      `the server named ${candidates[0]} as its resource metadata, but it is not there`,
    );
  return undefined;
}

/**
 * The metadata of the authorization server `issuer`, from the URLs the specification orders;
 * `fallback`: a 2025-03-26 server, whose endpoints are at the root when it publishes none.
 */
export async function authorizationServerMetadata(
  issuer: string,
  http: AuthFetch = authFetch(),
  fallback = false,
): Promise<AuthorizationServerMetadata> {
  const base = requireSecureUrl(issuer, "authorization server (issuer)");
  const hasPath = base.pathname !== "/" && base.pathname !== "";
  const candidates = [
    ...wellKnownUrls(base, "oauth-authorization-server", true),
    ...wellKnownUrls(base, "openid-configuration", true),
  ];
  if (hasPath) candidates.push(`${base.origin}${base.pathname.replace(/\/$/, "")}/.well-known/openid-configuration`);
  for (const url of candidates) {
    const document = await fetchJson(url, http);
    if (document === undefined) continue;
    if (typeof document.token_endpoint !== "string")
      throw new McpAuthError("discovery", `the authorization server metadata at ${url} has no "token_endpoint"`);
    if (typeof document.issuer !== "string" || document.issuer.replace(/\/$/, "") !== issuer.replace(/\/$/, "")) {
      throw new McpAuthError(
        "discovery",
        `the authorization server metadata at ${url} names the issuer ${JSON.stringify(document.issuer)}, not ${issuer}; ` +
          "refused: RFC 8414 §3.3 requires the issuer in the metadata to be identical to the issuer it was fetched for, " +
          "else one server could publish endpoints in another's name (fix the server's metadata or its authorization_servers)",
      );
    }
    for (const field of ["authorization_endpoint", "token_endpoint", "registration_endpoint"] as const) {
      const endpoint = document[field];
      if (endpoint === undefined) continue;
      if (typeof endpoint !== "string")
        throw new McpAuthError("discovery", `"${field}" of the authorization server metadata at ${url} is not a URL`);
      requireSecureUrl(endpoint, `${field} of ${issuer}`);
    }
    return document as AuthorizationServerMetadata;
  }
  if (fallback) {
    // the 2025-03-26 default endpoints, at the root of the server's origin (PKCE was required then too)
    const origin = base.origin;
    return {
      issuer: origin,
      authorization_endpoint: `${origin}/authorize`,
      token_endpoint: `${origin}/token`,
      registration_endpoint: `${origin}/register`,
      code_challenge_methods_supported: ["S256"],
    };
  }
  throw new McpAuthError(
    "discovery",
    `no authorization server metadata for ${issuer} (tried ${candidates.join(", ")}); ` +
      `a server of the ${FALLBACK_REVISION} revision without metadata needs "protocolVersion": "${FALLBACK_REVISION}" in its "oauth" entry`,
  );
}

/**
 * The well-known URLs of `name` for `url`: with the path inserted (when it has one), then at
 * the root. `pathOnly`: only the path-inserted one when there is a path (authorization servers).
 */
function wellKnownUrls(url: URL, name: string, pathOnly: boolean): string[] {
  const path = url.pathname.replace(/\/$/, "");
  const root = `${url.origin}/.well-known/${name}`;
  if (path === "") return [root];
  return pathOnly ? [`${root}${path}`] : [`${root}${path}`, root];
}

/** A resource `resource` covers the server: same origin, and its path is the server's or a prefix of it. */
function coversServer(resource: string, server: URL): boolean {
  let url: URL;
  try {
    url = new URL(resource);
  } catch {
    return false;
  }
  if (url.origin !== server.origin) return false;
  const prefix = url.pathname.replace(/\/$/, "");
  const path = server.pathname.replace(/\/$/, "");
  return path === prefix || path.startsWith(`${prefix}/`);
}

/**
 * GETs `url` as a JSON object; undefined for a 4xx answer (not there: try the next URL). Throws
 * `McpAuthError` when it cannot be reached, answers 5xx, or is not a JSON object.
 */
async function fetchJson(url: string, http: AuthFetch): Promise<Record<string, unknown> | undefined> {
  let response: Response;
  try {
    response = await http(
      url,
      { headers: { accept: "application/json", "mcp-protocol-version": "2025-11-25" } },
      "metadata",
      `the metadata document ${url}`,
    );
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code;
    throw new McpAuthError("discovery", `cannot reach ${url}: ${cause ?? errorText(error)}`);
  }
  if (response.status >= 400 && response.status < 500) {
    await response.body?.cancel();
    return undefined;
  }
  if (!response.ok) {
    await response.body?.cancel();
    throw new McpAuthError("discovery", `${url} answered HTTP ${response.status}`);
  }
  let text: string;
  try {
    text = await response.text();
  } catch (error) {
    throw new McpAuthError("discovery", `cannot read ${url}: ${errorText(error)}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    value = undefined;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new McpAuthError("discovery", `${url} did not answer with a JSON object`);
  return value as Record<string, unknown>;
}
