/**
 * Requests to a token endpoint (RFC 6749 §4.1.3, §4.4, §6; RFC 7523 §2.1; RFC 8693): the
 * authorization code with its PKCE verifier, the client credentials grant, a refresh, the JWT
 * bearer grant of an identity assertion (cross-app access), and the token exchange at an
 * identity provider. Each request to the MCP server's authorization server carries the resource
 * indicator (RFC 8707) so the token is issued for this MCP server only.
 *
 * The client authenticates as it is known there (`clientAuthMethod`): the method registration
 * returned for a registered client (a client registered public never sends a secret, whatever
 * the server handed out), the configured one, else `client_secret_post` when the server lists it
 * and HTTP Basic otherwise (RFC 6749 §2.3.1, the default of RFC 8414); `private_key_jwt` signs
 * a client assertion (`client-assertion.ts`).
 *
 * The answer is the token set with `expires_at` computed from `expires_in`. A refusal is an
 * `McpAuthError` with the server's `error` and `error_description` only: no token, code,
 * verifier, assertion or secret is ever put in a message.
 */
import { errorText } from "../../base/errors.js";
import { type AuthFetch, readAnswer } from "./auth-fetch.js";
import { McpAuthError } from "./auth-error.js";
import { chooseAlgorithm, clientAssertion, JWT_ASSERTION_TYPE, loadPrivateKey } from "./client-assertion.js";
import { type ClientAuthMethod, type OAuthClient, oauthErrorText } from "./client-identity.js";
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

/** The `grant_type` of the JWT bearer grant (RFC 7523 §2.1). */
export const JWT_BEARER_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/** The `grant_type` of token exchange (RFC 8693 §2.1). */
export const TOKEN_EXCHANGE_GRANT = "urn:ietf:params:oauth:grant-type:token-exchange";

/** The grant of one token request. */
export type Grant =
  | { grant_type: "authorization_code"; code: string; code_verifier: string; redirect_uri: string }
  | { grant_type: "refresh_token"; refresh_token: string }
  | { grant_type: "client_credentials" }
  | { grant_type: typeof JWT_BEARER_GRANT; assertion: string };

/** The method `client` authenticates with at `server` (see the file comment). */
export function clientAuthMethod(client: OAuthClient, server: AuthorizationServerMetadata): ClientAuthMethod {
  if (client.authMethod !== undefined) return client.authMethod;
  if (client.privateKey !== undefined) return "private_key_jwt";
  if (client.clientSecret === undefined) return "none";
  const methods = server.token_endpoint_auth_methods_supported ?? ["client_secret_basic"];
  return methods.includes("client_secret_post") ? "client_secret_post" : "client_secret_basic";
}

/** Adds `client`'s authentication to a token request's form and headers. */
export function authenticate(
  client: OAuthClient,
  server: AuthorizationServerMetadata,
  form: URLSearchParams,
  headers: Record<string, string>,
  now: number,
): void {
  const method = clientAuthMethod(client, server);
  form.set("client_id", client.clientId);
  if (method === "none") return;
  if (method === "private_key_jwt") {
    const key = loadPrivateKey(client.privateKey ?? {});
    const algorithm = chooseAlgorithm(
      key,
      client.privateKey?.signingAlgorithm,
      server.token_endpoint_auth_signing_alg_values_supported,
    );
    form.set("client_assertion_type", JWT_ASSERTION_TYPE);
    form.set(
      "client_assertion",
      clientAssertion(key, algorithm, client.clientId, server.issuer, client.privateKey?.keyId, now),
    );
    return;
  }
  if (client.clientSecret === undefined)
    throw new McpAuthError("refused", `the client ${client.clientId} authenticates with ${method} but has no secret`);
  if (method === "client_secret_post") form.set("client_secret", client.clientSecret);
  else {
    const pair = `${encodeURIComponent(client.clientId)}:${encodeURIComponent(client.clientSecret)}`;
    headers.authorization = `Basic ${Buffer.from(pair).toString("base64")}`;
  }
}

/**
 * POSTs `form` to `endpoint` (no redirect followed, the answer capped) and returns the answer's
 * JSON object; a refusal throws `McpAuthError` (`failure`) saying `what` was not done.
 */
export async function postTokenForm(
  endpoint: string,
  form: URLSearchParams,
  headers: Record<string, string>,
  http: AuthFetch,
  refusal: { failure: "refused" | "login-required"; who: string; what: string },
): Promise<{ answer: Record<string, unknown>; status: number }> {
  let response: Response;
  let answer: Record<string, unknown>;
  try {
    response = await http(
      endpoint,
      {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json", ...headers },
        body: form.toString(),
      },
      "endpoint",
      `the token endpoint ${endpoint}`,
    );
    answer = await readAnswer(response);
  } catch (error) {
    throw new McpAuthError(refusal.failure === "login-required" ? "login-required" : "refused", errorText(error));
  }
  if (!response.ok) {
    throw new McpAuthError(
      refusal.failure,
      `${refusal.who} did not ${refusal.what} (HTTP ${response.status}${withoutCredentials(oauthErrorText(answer), form, headers)})`,
      typeof answer.error === "string" ? { oauthError: answer.error.slice(0, 100) } : {},
    );
  }
  return { answer, status: response.status };
}

/** The fields of a token request that carry a credential (a server may echo them in its error). */
const CREDENTIAL_FIELDS = [
  "client_secret",
  "code",
  "code_verifier",
  "refresh_token",
  "assertion",
  "client_assertion",
  "subject_token",
  "actor_token",
];

/**
 * `text` (a server's error) with every credential the request sent (`form`'s credential
 * fields, HTTP Basic's secret) replaced by `[redacted]`: a server that echoes what it was sent
 * must not put a secret, a code or a token in an error (values under 4 characters are left).
 */
function withoutCredentials(text: string, form: URLSearchParams, headers: Record<string, string>): string {
  const sent = CREDENTIAL_FIELDS.flatMap((field) => form.getAll(field));
  const basic = /^Basic (.+)$/.exec(headers.authorization ?? "")?.[1];
  if (basic !== undefined) {
    sent.push(basic);
    const pair = Buffer.from(basic, "base64").toString();
    const secret = pair.slice(pair.indexOf(":") + 1);
    sent.push(secret);
    try {
      sent.push(decodeURIComponent(secret));
    } catch {}
  }
  let shown = text;
  for (const value of sent.filter((v) => v.length >= 4).sort((a, b) => b.length - a.length))
    shown = shown.split(value).join("[redacted]");
  return shown;
}

/** Asks `server`'s token endpoint for tokens; `scope`: the scopes asked for (space separated). */
export async function requestToken(
  server: AuthorizationServerMetadata,
  client: OAuthClient,
  grant: Grant,
  resource: string,
  scope: string | undefined,
  http: AuthFetch,
  now: () => number = Date.now,
): Promise<TokenSet> {
  const form = new URLSearchParams({ ...grant, resource });
  if (scope !== undefined && scope !== "" && grant.grant_type !== "authorization_code") form.set("scope", scope);
  const headers: Record<string, string> = {};
  const asked = now();
  authenticate(client, server, form, headers, asked);
  const { answer } = await postTokenForm(server.token_endpoint, form, headers, http, {
    failure: grant.grant_type === "refresh_token" ? "login-required" : "refused",
    who: `the authorization server ${server.issuer}`,
    what: grant.grant_type === "refresh_token" ? "refresh the token" : "give a token",
  });
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
