/**
 * Who the client is at an authorization server, chosen in the specification's order:
 *
 * 1. a client id registered beforehand, given in the server's configuration (`oauth.clientId`,
 *    with `oauth.clientSecret` for a confidential client);
 * 2. a Client ID Metadata Document: a URL (`oauth.clientMetadataUrl`) that serves the client's
 *    metadata and is itself the `client_id`, when the authorization server says it accepts
 *    them (`client_id_metadata_document_supported`);
 * 3. dynamic client registration (RFC 7591) at its `registration_endpoint`, as a public client
 *    (`token_endpoint_auth_method: "none"`) with the loopback redirect URI.
 *
 * Else there is no way to be a client there, and the error says to configure a client id.
 */
import { McpAuthError } from "./auth-error.js";
import type { AuthorizationServerMetadata } from "./discovery.js";

/** A client of one authorization server. */
export interface OAuthClient {
  clientId: string;
  /** Only for confidential clients (configured, or given by registration). */
  clientSecret?: string;
  /** How it was obtained. */
  via: "configured" | "metadata-document" | "registered";
  /** The redirect URIs it was registered with (dynamic registration). */
  redirectUris?: string[];
}

/** What the configuration says of the client. */
export interface ClientSettings {
  clientId?: string;
  clientSecret?: string;
  /** The URL of a Client ID Metadata Document (https, with a path). */
  clientMetadataUrl?: string;
  /** The name shown on the consent page when registering (default "pi-course"). */
  clientName?: string;
}

/**
 * The client to use at `server`. `redirectUri`: where the browser comes back (for registration);
 * `grantTypes`: what the client will ask for. Throws `McpAuthError` when none can be had.
 */
export async function obtainClient(
  server: AuthorizationServerMetadata,
  settings: ClientSettings,
  redirectUri: string | undefined,
  grantTypes: string[],
  fetcher: typeof fetch = fetch,
): Promise<OAuthClient> {
  if (settings.clientId !== undefined) {
    return {
      clientId: settings.clientId,
      ...(settings.clientSecret !== undefined && { clientSecret: settings.clientSecret }),
      via: "configured",
    };
  }
  if (settings.clientMetadataUrl !== undefined && server.client_id_metadata_document_supported === true)
    return { clientId: settings.clientMetadataUrl, via: "metadata-document" };
  if (server.registration_endpoint === undefined) {
    throw new McpAuthError(
      "refused",
      `the authorization server ${server.issuer} offers no dynamic client registration` +
        (settings.clientMetadataUrl !== undefined ? " and does not accept client metadata documents" : "") +
        '; register a client there and put its id in the server\'s entry ("oauth": {"clientId": "…"})',
    );
  }
  return register(server.registration_endpoint, settings, redirectUri, grantTypes, fetcher);
}

/** Dynamic client registration (RFC 7591 §3): a public client with the loopback redirect URI. */
async function register(
  endpoint: string,
  settings: ClientSettings,
  redirectUri: string | undefined,
  grantTypes: string[],
  fetcher: typeof fetch,
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
  try {
    response = await fetcher(endpoint, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify(body),
    });
  } catch (error) {
    throw new McpAuthError(
      "refused",
      `cannot reach the registration endpoint ${endpoint}: ${(error as Error).message}`,
    );
  }
  const answer = (await response.json().catch(() => ({}))) as Record<string, unknown>;
  if (!response.ok || typeof answer.client_id !== "string") {
    throw new McpAuthError(
      "refused",
      `the authorization server refused to register this client (HTTP ${response.status}${oauthErrorText(answer)})`,
    );
  }
  return {
    clientId: answer.client_id,
    ...(typeof answer.client_secret === "string" && { clientSecret: answer.client_secret }),
    via: "registered",
    redirectUris,
  };
}

/** `: error (description)` of an OAuth error answer, or "" (never any other field of it). */
export function oauthErrorText(answer: Record<string, unknown>): string {
  const error = typeof answer.error === "string" ? answer.error.slice(0, 100) : undefined;
  const description = typeof answer.error_description === "string" ? answer.error_description.slice(0, 300) : undefined;
  if (error === undefined) return "";
  return `: ${error}${description !== undefined ? ` (${description})` : ""}`;
}
