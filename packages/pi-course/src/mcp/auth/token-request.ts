/**
 * Requests to the token endpoint (RFC 6749 §4.1.3, §4.4, §6): the authorization code with its
 * PKCE verifier, the client credentials grant, and a refresh. Each carries the resource
 * indicator (RFC 8707) so the token is issued for this MCP server only. A confidential client
 * authenticates as the server says it can: `client_secret_post` when listed, else HTTP Basic
 * (RFC 6749 §2.3.1, the default of RFC 8414).
 *
 * The answer is the token set with `expires_at` computed from `expires_in`. A refusal is an
 * `McpAuthError` with the server's `error` and `error_description` only: no token, code,
 * verifier or secret is ever put in a message.
 */
import { McpAuthError } from "./auth-error.js";
import { type OAuthClient, oauthErrorText } from "./client-identity.js";
import type { AuthorizationServerMetadata } from "./discovery.js";

/** What the token endpoint gave, as it is stored. */
export interface TokenSet {
  access_token: string;
  token_type: string;
  refresh_token?: string;
  /** Milliseconds since the epoch when the access token stops working (absent: not said). */
  expires_at?: number;
  /** The scopes granted, as the server said them (or as asked, when it did not say). */
  scope?: string;
}

/** The grant of one token request. */
export type Grant =
  | { grant_type: "authorization_code"; code: string; code_verifier: string; redirect_uri: string }
  | { grant_type: "refresh_token"; refresh_token: string }
  | { grant_type: "client_credentials" };

/** Asks `server`'s token endpoint for tokens; `scope`: the scopes asked for (space separated). */
export async function requestToken(
  server: AuthorizationServerMetadata,
  client: OAuthClient,
  grant: Grant,
  resource: string,
  scope: string | undefined,
  fetcher: typeof fetch = fetch,
  now: () => number = Date.now,
): Promise<TokenSet> {
  const form = new URLSearchParams({ ...grant, resource });
  if (scope !== undefined && scope !== "" && grant.grant_type !== "authorization_code") form.set("scope", scope);
  const headers: Record<string, string> = {
    "content-type": "application/x-www-form-urlencoded",
    accept: "application/json",
  };
  form.set("client_id", client.clientId);
  if (client.clientSecret !== undefined) {
    const methods = server.token_endpoint_auth_methods_supported ?? ["client_secret_basic"];
    if (methods.includes("client_secret_post")) form.set("client_secret", client.clientSecret);
    else {
      const pair = `${encodeURIComponent(client.clientId)}:${encodeURIComponent(client.clientSecret)}`;
      headers.authorization = `Basic ${Buffer.from(pair).toString("base64")}`;
    }
  }
  const what = grant.grant_type === "refresh_token" ? "refresh the token" : "give a token";
  let response: Response;
  const asked = now();
  try {
    response = await fetcher(server.token_endpoint, { method: "POST", headers, body: form.toString() });
  } catch (error) {
    throw new McpAuthError(
      "refused",
      `cannot reach the token endpoint ${server.token_endpoint}: ${(error as Error).message}`,
    );
  }
  const answer = (await response.json().catch(() => ({}))) as Record<string, unknown>;
  if (!response.ok) {
    throw new McpAuthError(
      grant.grant_type === "refresh_token" ? "login-required" : "refused",
      `the authorization server ${server.issuer} did not ${what} (HTTP ${response.status}${oauthErrorText(answer)})`,
    );
  }
  if (typeof answer.access_token !== "string" || typeof answer.token_type !== "string")
    throw new McpAuthError("refused", `the token endpoint ${server.token_endpoint} answered without an access token`);
  if (answer.token_type.toLowerCase() !== "bearer")
    throw new McpAuthError(
      "refused",
      `the token endpoint gave a token of type ${answer.token_type.slice(0, 40)}, not Bearer`,
    );
  const tokens: TokenSet = { access_token: answer.access_token, token_type: "Bearer" };
  if (typeof answer.refresh_token === "string") tokens.refresh_token = answer.refresh_token;
  else if (grant.grant_type === "refresh_token") tokens.refresh_token = grant.refresh_token; // kept: not rotated
  if (typeof answer.expires_in === "number" && answer.expires_in >= 0)
    tokens.expires_at = asked + answer.expires_in * 1000;
  const granted = typeof answer.scope === "string" ? answer.scope : scope;
  if (granted !== undefined && granted !== "") tokens.scope = granted;
  return tokens;
}
