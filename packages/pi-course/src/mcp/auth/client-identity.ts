/**
 * Who the client is at an authorization server, chosen in the specification's order:
 *
 * 1. a client id registered beforehand, given in the server's configuration (`oauth.clientId`,
 *    with `oauth.clientSecret` for a confidential client);
 * 2. a Client ID Metadata Document: a URL (`oauth.clientMetadataUrl`) that serves the client's
 *    metadata and is itself the `client_id`, when the authorization server says it accepts
 *    them (`client_id_metadata_document_supported`);
 * 3. dynamic client registration (RFC 7591) at its `registration_endpoint`, as a public client
 *    (`token_endpoint_auth_method: "none"`) with the redirect URI. A registered client is kept
 *    per server (`TokenStore.writeClient`) and used again by later logins, step-ups included, as
 *    long as its authorization server is the same, its secret has not expired and its redirect
 *    URI matches (a loopback one at any port: RFC 8252 §7.3); it is registered again only when
 *    the authorization server refuses it (`invalid_client`).
 *
 * Else there is no way to be a client there, and the error says to configure a client id. The
 * authentication method a client uses is kept with it: what registration returned (a public
 * registration stays public even if the server hands out a secret), or what is configured.
 */
import { errorText } from "../../base/errors.js";
import { type AuthFetch, readAnswer } from "./auth-fetch.js";
import { McpAuthError } from "./auth-error.js";
import type { PrivateKeyJwtSettings } from "./client-assertion.js";
import type { AuthorizationServerMetadata } from "./discovery.js";

/** How a client authenticates at a token endpoint. */
export type ClientAuthMethod = "none" | "client_secret_basic" | "client_secret_post" | "private_key_jwt";

/** A client of one authorization server. */
export interface OAuthClient {
  clientId: string;
  /** Only for confidential clients (configured, or given by registration). */
  clientSecret?: string;
  /** How it was obtained. */
  via: "configured" | "metadata-document" | "registered";
  /** The redirect URIs it was registered with (dynamic registration). */
  redirectUris?: string[];
  /** How it authenticates at the token endpoint (registration's answer, or the configuration). */
  authMethod?: ClientAuthMethod;
  /** Milliseconds since the epoch when a registered client's secret expires (absent: never). */
  secretExpiresAt?: number;
  /** The key of `private_key_jwt` (a configured client; never stored). */
  privateKey?: PrivateKeyJwtSettings;
}

/** What the configuration says of the client. */
export interface ClientSettings extends PrivateKeyJwtSettings {
  clientId?: string;
  clientSecret?: string;
  /**
   * How the configured client authenticates (default: `private_key_jwt` with a key, else
   * `client_secret_post` when the server lists it and a secret is given, else HTTP Basic).
   */
  tokenEndpointAuthMethod?: ClientAuthMethod;
  /** The URL of a Client ID Metadata Document (https, with a path). */
  clientMetadataUrl?: string;
  /** The name shown on the consent page when registering (default "pi-course"). */
  clientName?: string;
  /**
   * The issuer of the authorization server the configured client belongs to. Its secret or key
   * is sent to that one only, whatever authorization server the MCP server names. Without it,
   * they go only to the first one they were used with (kept with the client, `TokenStore.writeClient`).
   */
  issuer?: string;
}

/** The configured client of `settings`, if one is configured. */
export function configuredClient(settings: ClientSettings): OAuthClient | undefined {
  if (settings.clientId === undefined) return undefined;
  const { privateKey, privateKeyFile, keyId, signingAlgorithm } = settings;
  const keyed = privateKey !== undefined || privateKeyFile !== undefined;
  return {
    clientId: settings.clientId,
    ...(settings.clientSecret !== undefined && { clientSecret: settings.clientSecret }),
    via: "configured",
    ...(settings.tokenEndpointAuthMethod !== undefined && { authMethod: settings.tokenEndpointAuthMethod }),
    ...(keyed && {
      privateKey: {
        ...(privateKey !== undefined && { privateKey }),
        ...(privateKeyFile !== undefined && { privateKeyFile }),
        ...(keyId !== undefined && { keyId }),
        ...(signingAlgorithm !== undefined && { signingAlgorithm }),
      },
    }),
  };
}

/**
 * A registered client kept for a server, with the authorization server that registered it; or,
 * for a configured client with a secret or key (`via: "configured"`, its id only), the
 * authorization server they were first used with, the only one they go to after.
 */
export interface KeptClient {
  issuer: string;
  client: OAuthClient;
}

/**
 * Whether `kept` may be used again at `server` with `redirectUri`: same issuer, secret not
 * expired, and registered with that redirect URI (a loopback one matches at any port).
 */
export function reusable(
  kept: KeptClient | undefined,
  server: AuthorizationServerMetadata,
  redirectUri: string | undefined,
  now: number,
): boolean {
  if (kept === undefined || kept.client.via !== "registered") return false;
  if (kept.issuer !== server.issuer) return false;
  if (kept.client.secretExpiresAt !== undefined && kept.client.secretExpiresAt <= now) return false;
  if (redirectUri === undefined) return true;
  return (kept.client.redirectUris ?? []).some((uri) => sameRedirect(uri, redirectUri));
}

/**
 * Whether two issuer identifiers name the same authorization server: equal as URLs (so
 * `https://as.example` and `https://as.example/` are one), otherwise compared as text.
 */
export function sameIssuer(a: string, b: string): boolean {
  if (a === b) return true;
  try {
    return new URL(a).href === new URL(b).href;
  } catch {
    return false;
  }
}

/** Redirect URIs that match: equal, or loopback URIs that differ only in their port (RFC 8252 §7.3). */
export function sameRedirect(a: string, b: string): boolean {
  if (a === b) return true;
  let x: URL;
  let y: URL;
  try {
    x = new URL(a);
    y = new URL(b);
  } catch {
    return false;
  }
  const loopback = (u: URL) => u.protocol === "http:" && ["127.0.0.1", "[::1]", "localhost"].includes(u.hostname);
  if (!loopback(x) || !loopback(y)) return false;
  x.port = "";
  y.port = "";
  return x.href === y.href;
}

/**
 * The client to use at `server`. `redirectUri`: where the browser comes back (for registration);
 * `grantTypes`: what the client will ask for; `kept`: a client registered before for this
 * server. Throws `McpAuthError` when none can be had.
 */
export async function obtainClient(
  server: AuthorizationServerMetadata,
  settings: ClientSettings,
  redirectUri: string | undefined,
  grantTypes: string[],
  http: AuthFetch,
  kept?: KeptClient,
  now: number = Date.now(),
): Promise<OAuthClient> {
  const configured = configuredClient(settings);
  if (configured !== undefined) return configured;
  if (settings.clientMetadataUrl !== undefined && server.client_id_metadata_document_supported === true)
    return { clientId: settings.clientMetadataUrl, via: "metadata-document", authMethod: "none" };
  if (reusable(kept, server, redirectUri, now)) return kept!.client;
  if (server.registration_endpoint === undefined) {
    throw new McpAuthError(
      "refused",
      `the authorization server ${server.issuer} offers no dynamic client registration` +
        (settings.clientMetadataUrl !== undefined ? " and does not accept client metadata documents" : "") +
        '; register a client there and put its id in the server\'s entry ("oauth": {"clientId": "…"})',
    );
  }
  return register(server.registration_endpoint, settings, redirectUri, grantTypes, http);
}

/** Dynamic client registration (RFC 7591 §3): a public client with the redirect URI. */
async function register(
  endpoint: string,
  settings: ClientSettings,
  redirectUri: string | undefined,
  grantTypes: string[],
  http: AuthFetch,
): Promise<OAuthClient> {
  const redirectUris = redirectUri === undefined ? [] : [redirectUri];
  const body = {
    client_name: settings.clientName ?? "pi-course",
    redirect_uris: redirectUris,
    grant_types: grantTypes,
    response_types: ["code"],
    token_endpoint_auth_method: "none",
  };
  let response: Response;
  let answer: Record<string, unknown>;
  try {
    response = await http(
      endpoint,
      {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json" },
        body: JSON.stringify(body),
      },
      "endpoint",
      `the registration endpoint ${endpoint}`,
    );
    answer = await readAnswer(response);
  } catch (error) {
    throw new McpAuthError("refused", `cannot register at ${endpoint}: ${errorText(error)}`);
  }
  if (!response.ok || typeof answer.client_id !== "string") {
    throw new McpAuthError(
      "refused",
      `the authorization server refused to register this client (HTTP ${response.status}${oauthErrorText(answer)})`,
    );
  }
  const method = answer.token_endpoint_auth_method;
  // what registration returned decides; an answer that says nothing keeps what was asked (public)
  const authMethod: ClientAuthMethod =
    method === "client_secret_basic" || method === "client_secret_post" ? method : "none";
  const expires = answer.client_secret_expires_at;
  return {
    clientId: answer.client_id,
    ...(authMethod !== "none" && typeof answer.client_secret === "string" && { clientSecret: answer.client_secret }),
    via: "registered",
    redirectUris,
    authMethod,
    ...(typeof expires === "number" && expires > 0 && { secretExpiresAt: expires * 1000 }),
  };
}

/** `: error (description)` of an OAuth error answer, or "" (never any other field of it). */
export function oauthErrorText(answer: Record<string, unknown>): string {
  const error = typeof answer.error === "string" ? answer.error.slice(0, 100) : undefined;
  const description = typeof answer.error_description === "string" ? answer.error_description.slice(0, 300) : undefined;
  if (error === undefined) return "";
  return `: ${error}${description !== undefined ? ` (${description})` : ""}`;
}
