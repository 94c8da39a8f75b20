/**
 * `McpOAuth`: OAuth 2.1 for one remote MCP server, as the MCP authorization specification
 * (2025-11-25) and its extensions describe it. It is the transport's `HttpAuth` (a Bearer header
 * on each request; a 401 or 403 reported back) and the login a person (or a machine) runs.
 *
 * Grants (`grant`):
 * - `"authorization_code"` (default): asks the server without a token to learn its challenge,
 *   discovers the authorization server (`discovery.ts`), gets a client identity
 *   (`client-identity.ts`: configured, a metadata document, or a registration kept per server),
 *   sends the browser to the authorization endpoint with PKCE S256, `state` and the `resource`
 *   indicator, and exchanges the code. The redirect comes back to a loopback listener, or, with
 *   `redirectUri`, to the app itself, which hands it to `completeLogin(callbackUrl)`.
 * - `"client_credentials"`: a machine's own credentials (a secret, or `private_key_jwt` with a
 *   key), no person.
 * - `"cross_app_access"` (the enterprise-managed authorization extension): the person's ID token
 *   from the single sign-on is exchanged at the identity provider for an identity assertion
 *   (RFC 8693 token exchange, `urn:ietf:params:oauth:token-type:id-jag`), which the MCP server's
 *   authorization server takes as a JWT bearer grant (RFC 7523); no browser.
 *
 * On each request: the kept access token, refreshed first when it expires within
 * `REFRESH_MARGIN_MS`. On a 401: one refresh (or, without a person, a new token), else a login
 * when `openUrl` is given, else `McpAuthError` ("login-required") saying `loginHint`. On a 403
 * `insufficient_scope`: the same with the union of the granted scopes and the ones asked for;
 * without a person the scope wanted is kept so the next login asks.
 *
 * Scopes asked for: the configured ones and those of the challenge, else all the resource
 * metadata lists (`scopes_supported`), else none. Every request goes through the one outbound
 * policy (`auth-fetch.ts`). Tokens, secrets, keys and assertions stay in the store and in
 * requests to the token endpoints: never in a message. Every `McpAuthError` it throws names the
 * server (`serverUrl`).
 */
import { errorText } from "../../base/errors.js";
import { boundedDuration } from "../../base/timer.js";
import { McpAuthError } from "./auth-error.js";
import { AUTH_REQUEST_TIMEOUT_MS, type AuthFetch, authFetch } from "./auth-fetch.js";
import {
  type ClientSettings,
  configuredClient,
  type OAuthClient,
  obtainClient,
  sameIssuer,
} from "./client-identity.js";
import { type AuthorizationServerMetadata, type Discovered, discover, requirePkce } from "./discovery.js";
import type { HttpAuth } from "./http-auth.js";
import { startLoopback } from "./loopback.js";
import { createPkce, randomState } from "./pkce.js";
import { type Grant, JWT_BEARER_GRANT, postTokenForm, requestToken, TOKEN_EXCHANGE_GRANT } from "./token-request.js";
import type { StoredAuthorization, TokenStore } from "./token-store.js";
import { type BearerChallenge, parseBearerChallenge } from "./www-authenticate.js";

/** A token that expires within this many milliseconds is refreshed before it is used: 30 s. */
export const REFRESH_MARGIN_MS = 30_000;
/** How long `login` waits for the browser to come back: 5 minutes. */
export const DEFAULT_LOGIN_TIMEOUT_MS = 300_000;
export { AUTH_REQUEST_TIMEOUT_MS };

/** The token type an identity provider issues for cross-app access (an ID-JAG). */
export const ID_JAG_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id-jag";
/** The token type of an OpenID Connect ID token (RFC 8693 §3). */
export const ID_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id_token";

/** The identity provider of cross-app access (`grant: "cross_app_access"`). */
export interface IdentityProviderSettings {
  /** Its token endpoint, where the ID token is exchanged (https, or http on loopback). */
  tokenEndpoint: string;
  /** The client id this app has at the identity provider. */
  clientId: string;
  /** Its secret there, for a confidential client (sent in the form). */
  clientSecret?: string;
  /** The person's ID token from the single sign-on, or a function that gets a fresh one. */
  idToken: string | (() => string | Promise<string>);
}

/** How one server is authorized (the `"oauth"` object of its configuration entry, and more). */
export interface McpOAuthOptions<Store extends TokenStore = TokenStore> extends ClientSettings {
  /** The MCP endpoint. */
  serverUrl: string;
  /** Where tokens and the registered client are kept (`McpTokenStore`, `MemoryTokenStore`, or your own). */
  store: Store;
  /** Scopes to ask for besides those the server's challenge names. */
  scopes?: string[];
  /** The grant (see the file comment); default `"authorization_code"`. */
  grant?: "authorization_code" | "client_credentials" | "cross_app_access";
  /** The loopback port of the redirect (default: any free one). Some servers want a fixed one. */
  redirectPort?: number;
  /**
   * The app's own redirect URI (a web app's callback): no loopback listener is started; the app
   * receives the redirect and passes its URL to `completeLogin`.
   */
  redirectUri?: string;
  /** The identity provider of `grant: "cross_app_access"`. */
  identityProvider?: IdentityProviderSettings;
  /**
   * The protocol revision the server speaks, when known. `"2025-03-26"` allows that revision's
   * fallback for a server without metadata (`/authorize`, `/token`, `/register` at its root).
   */
  protocolVersion?: string;
  /** What a person is told to do when a login is needed (default: call `McpOAuth.login`). */
  loginHint?: string;
  /**
   * Given: a person is there, and a 401 without a usable token or a 403 `insufficient_scope`
   * runs the login at once, sending them to this URL. Absent: those fail with what to do.
   */
  openUrl?: (url: string) => void | Promise<void>;
  /**
   * How long a login waits for the browser (default `DEFAULT_LOGIN_TIMEOUT_MS`); at most
   * `MAX_TIMER_MS` (about 24.8 days), else the constructor throws a RangeError.
   */
  loginTimeoutMs?: number;
  fetch?: typeof fetch;
  /** How long one request to the servers may take (default `AUTH_REQUEST_TIMEOUT_MS`). */
  requestTimeoutMs?: number;
  /** The clock (tests). */
  now?: () => number;
}

/** Options of one `login`. */
export interface LoginOptions {
  /** Where the person is sent (default: the `openUrl` of the options; one of the two is needed for the code flow). */
  openUrl?: (url: string) => void | Promise<void>;
  /** Scopes to ask for besides the usual ones (a step-up). */
  scopes?: string[];
  /**
   * How long the login waits for the browser (default: the options' `loginTimeoutMs`). At most
   * `MAX_TIMER_MS` (about 24.8 days): a longer one is refused with a RangeError.
   */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** What a login got. */
export interface LoginResult {
  /** The scopes granted (as the server said them). */
  scope?: string;
  /** How the client is known there. */
  client: "configured" | "metadata-document" | "registered";
  /** The authorization server. */
  issuer: string;
}

/** A code flow sent to the browser and waiting for its redirect. */
interface PendingLogin {
  state: string;
  verifier: string;
  redirectUri: string;
  found: Discovered;
  client: OAuthClient;
  scope: string | undefined;
  /** Settles `login()`'s wait when the app completes it (`completeLogin`). */
  settle: (result: Promise<StoredAuthorization>) => void;
  done: Promise<StoredAuthorization>;
}

/** OAuth for one remote MCP server; pass it as `HttpServerParameters.auth`. */
export class McpOAuth<Store extends TokenStore = TokenStore> implements HttpAuth {
  private pending: Promise<void> | undefined;
  /** Code flows waiting for their redirect, by `state`. */
  private readonly logins = new Map<string, PendingLogin>();

  /** Throws a RangeError when `loginTimeoutMs` is no duration or past a timer's reach (`boundedDuration`). */
  constructor(readonly options: McpOAuthOptions<Store>) {
    if (options.loginTimeoutMs !== undefined) boundedDuration(options.loginTimeoutMs, "loginTimeoutMs");
  }

  /** Whether tokens are kept for this server (a store that answers at once; else `isLoggedIn`). */
  get loggedIn(): boolean {
    const kept = this.options.store.read(this.options.serverUrl);
    if (kept instanceof Promise) throw new TypeError("this store answers later: use `await isLoggedIn()`");
    return kept !== undefined;
  }

  /** Whether tokens are kept for this server. */
  async isLoggedIn(): Promise<boolean> {
    return (await this.stored()) !== undefined;
  }

  async authorization(): Promise<string | undefined> {
    await this.pending?.catch(() => {});
    let stored = await this.stored();
    if (stored === undefined) return undefined;
    const expires = stored.tokens.expires_at;
    if (
      expires !== undefined &&
      expires - REFRESH_MARGIN_MS <= this.now() &&
      stored.tokens.refresh_token !== undefined
    ) {
      // refreshed before it is used; if that fails the request goes without, and its 401 says what to do
      await this.single(() => this.refresh(stored!)).catch(() => {});
      stored = await this.stored();
      if (stored === undefined) return undefined;
    }
    return `Bearer ${stored.tokens.access_token}`;
  }

  async unauthorized(challenge: string | null, retried: boolean): Promise<void> {
    return this.named(async () => {
      const parsed = parseBearerChallenge(challenge);
      const stored = await this.stored();
      if (this.machine) {
        if (!retried) {
          // requests that met the same 401 while a token was asked for find the new one kept
          const refused = stored?.tokens.access_token;
          return this.single(async () => {
            const now = (await this.stored())?.tokens.access_token;
            if (now !== undefined && now !== refused) return;
            await this.machineGrant(parsed, []);
          });
        }
        throw new McpAuthError(
          "refused",
          `the MCP server ${this.options.serverUrl} refused the token the ${this.grant} grant gave (check the client's grants there)`,
        );
      }
      if (!retried && stored?.tokens.refresh_token !== undefined) {
        try {
          // a request that met the same 401 while another refreshed finds the new token kept
          return await this.single(async () => {
            const now = await this.stored();
            if (now !== undefined && now.tokens.access_token !== stored.tokens.access_token) return;
            await this.refresh(now ?? stored);
          });
        } catch {
          // the refresh token is no good either: a login is needed
        }
      }
      if (!retried && this.options.openUrl !== undefined)
        return this.single(() => this.codeFlow(parsed, [], {}).then(() => {}));
      throw new McpAuthError(
        "login-required",
        `the MCP server ${this.options.serverUrl} needs authorization${stored !== undefined ? " (the kept token was refused and could not be refreshed)" : ""}: ${this.hint()}`,
        { action: this.hint() },
      );
    });
  }

  async forbidden(challenge: string | null): Promise<boolean> {
    return this.named(async () => {
      const parsed = parseBearerChallenge(challenge);
      if (parsed.error !== "insufficient_scope") return false;
      const stored = await this.stored();
      const granted = stored?.tokens.scope?.split(" ").filter((s) => s !== "") ?? [];
      const needed = parsed.scope ?? [];
      const wider = union(granted, needed);
      if (needed.every((scope) => granted.includes(scope)) && needed.length > 0) {
        // asked before and still refused: another request would be refused again
        throw new McpAuthError(
          "insufficient-scope",
          `the MCP server ${this.options.serverUrl} refused the request although the token has the scope it named (${needed.join(" ")})`,
        );
      }
      if (this.machine) {
        await this.single(() => this.machineGrant(parsed, wider).then(() => {}));
        return true;
      }
      if (this.options.openUrl !== undefined) {
        await this.single(() => this.codeFlow(parsed, wider, {}).then(() => {}));
        return true;
      }
      if (stored !== undefined) await this.options.store.write({ ...stored, wantedScope: wider.join(" ") });
      throw new McpAuthError(
        "insufficient-scope",
        `the MCP server ${this.options.serverUrl} needs the scope "${needed.join(" ")}", which this login was not given: ${this.hint()} (the next login asks for it)`,
        { action: this.hint() },
      );
    });
  }

  /**
   * Authorizes: the code flow (the person is sent to the URL `openUrl` gets; with `redirectUri`
   * it resolves once the app passes the redirect to `completeLogin`), or without a person the
   * client credentials or cross-app access grant. Keeps the tokens.
   */
  async login(options: LoginOptions = {}): Promise<LoginResult> {
    return this.named(async () => {
      // a wait that cannot be timed is refused before anything is asked of anyone
      if (options.timeoutMs !== undefined) boundedDuration(options.timeoutMs, "the login's timeoutMs");
      const { challenge, asked } = await this.probe();
      const stored = await this.stored();
      const scopes = union(options.scopes ?? [], stored?.wantedScope?.split(" ").filter((s) => s !== "") ?? []);
      let result: StoredAuthorization;
      const run = () =>
        this.machine ? this.machineGrant(challenge, scopes) : this.codeFlow(challenge, scopes, options);
      await this.single(async () => {
        result = await run().catch((error: unknown) => {
          // a server that answered without asking may need no authorization at all
          if (!asked && error instanceof McpAuthError && error.failure === "discovery")
            error.message += " (the server answered without asking for authorization: it may need none)";
          throw error;
        });
      });
      return resultOf(result!);
    });
  }

  /**
   * The first half of a code flow for an app that receives the redirect itself (`redirectUri`):
   * the URL to send the person to. The login completes when the app passes the URL the browser
   * came back to to `completeLogin`.
   */
  async beginLogin(options: { scopes?: string[] } = {}): Promise<{ url: string }> {
    return this.named(async () => {
      const redirectUri = this.options.redirectUri;
      if (redirectUri === undefined)
        throw new TypeError("beginLogin needs the redirectUri option (the app's own callback URL)");
      const { challenge } = await this.probe();
      const stored = await this.stored();
      const scopes = union(options.scopes ?? [], stored?.wantedScope?.split(" ").filter((s) => s !== "") ?? []);
      const { url, pending } = await this.prepareCodeFlow(challenge, scopes, redirectUri);
      pending.done.catch(() => {}); // awaited by login(), or only by completeLogin
      return { url };
    });
  }

  /**
   * Completes a code flow from the URL the browser came back to (the app's `redirectUri` with
   * `code` and `state`, or `error`): exchanges the code and keeps the tokens. Throws
   * `McpAuthError` ("login-failed") for a URL of no login in progress or an error answer.
   */
  async completeLogin(callbackUrl: string | URL): Promise<LoginResult> {
    return this.named(async () => {
      const url = new URL(callbackUrl);
      const state = url.searchParams.get("state");
      const pending = state === null ? undefined : this.logins.get(state);
      if (pending === undefined)
        throw new McpAuthError(
          "login-failed",
          "this callback belongs to no login in progress (unknown state); start the login again",
        );
      this.logins.delete(pending.state);
      const error = url.searchParams.get("error");
      const code = url.searchParams.get("code");
      const outcome =
        error !== null || code === null || code === ""
          ? Promise.reject(
              new McpAuthError(
                "login-failed",
                `the authorization server answered ${(error ?? "without a code").slice(0, 100)}` +
                  `${url.searchParams.get("error_description") !== null ? ` (${url.searchParams.get("error_description")!.slice(0, 300)})` : ""}`,
              ),
            )
          : this.finishCodeFlow(pending, code);
      pending.settle(outcome);
      return resultOf(await outcome);
    });
  }

  /**
   * Forgets the kept tokens; resolves with true when there were some. A promise, since a store
   * may answer later (a keychain, a database): await it before relying on the tokens being gone.
   * The registered client stays, for the next login, and so does the issuer a configured
   * client's secret is pinned to.
   */
  async logout(): Promise<boolean> {
    return this.options.store.remove(this.options.serverUrl);
  }

  /** Without a person: the client credentials or the cross-app access grant. */
  private get machine(): boolean {
    return this.grant !== "authorization_code";
  }

  private get grant(): "authorization_code" | "client_credentials" | "cross_app_access" {
    return this.options.grant ?? "authorization_code";
  }

  /**
   * The server's challenge to a request without a token (an `initialize` POST, as a client's
   * first request); `asked`: it answered 401 or 403.
   */
  private async probe(): Promise<{ challenge: BearerChallenge; asked: boolean }> {
    const what = `the MCP server ${this.options.serverUrl}`;
    let response: Response;
    try {
      response = await this.http(
        this.options.serverUrl,
        {
          method: "POST",
          headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
          body: JSON.stringify({
            jsonrpc: "2.0",
            id: "pi-course-auth-probe",
            method: "initialize",
            params: {
              protocolVersion: this.options.protocolVersion ?? "2025-11-25",
              capabilities: {},
              clientInfo: { name: "pi-course", version: "0.1.0" },
            },
          }),
        },
        "probe",
        what,
      );
    } catch (error) {
      const cause = (error as { cause?: { code?: string } }).cause?.code;
      throw new McpAuthError("discovery", `cannot reach ${what}: ${cause ?? errorText(error)}`);
    }
    await response.body?.cancel();
    if (response.status !== 401 && response.status !== 403) {
      if (response.ok) {
        const session = response.headers.get("mcp-session-id");
        if (session !== null)
          await this.http(
            this.options.serverUrl,
            { method: "DELETE", headers: { "mcp-session-id": session } },
            "probe",
            what,
          )
            .then((r) => r.body?.cancel())
            .catch(() => {});
      }
      // no challenge: discovery goes by the well-known URLs
      return { challenge: {}, asked: false };
    }
    return { challenge: parseBearerChallenge(response.headers.get("www-authenticate")), asked: true };
  }

  /**
   * The authorization code flow with PKCE: to a loopback redirect (the login waits for it), or
   * to the app's `redirectUri` (the login waits for `completeLogin`). A registered client the
   * authorization server no longer knows (`invalid_client`) is forgotten and registered anew,
   * once. Keeps and returns the result.
   */
  private async codeFlow(
    challenge: BearerChallenge,
    extraScopes: string[],
    options: LoginOptions,
  ): Promise<StoredAuthorization> {
    const openUrl = options.openUrl ?? this.options.openUrl;
    if (openUrl === undefined)
      throw new McpAuthError(
        "login-required",
        `the MCP server ${this.options.serverUrl} needs a login: ${this.hint()}`,
        {
          action: this.hint(),
        },
      );
    const timeoutMs = boundedDuration(
      options.timeoutMs ?? this.options.loginTimeoutMs ?? DEFAULT_LOGIN_TIMEOUT_MS,
      "the login's timeoutMs",
    );
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.oneCodeFlow(challenge, extraScopes, openUrl, timeoutMs, options.signal);
      } catch (error) {
        const forgotten = error instanceof McpAuthError && error.oauthError === "invalid_client";
        if (!forgotten || attempt === 2) throw error;
        const kept = await this.options.store.readClient(this.options.serverUrl);
        // not a kept registration (none, or a configured client's issuer): registering anew would not help
        if (kept?.client.via !== "registered") throw error;
        await this.options.store.writeClient(this.options.serverUrl, undefined);
      }
    }
  }

  private async oneCodeFlow(
    challenge: BearerChallenge,
    extraScopes: string[],
    openUrl: (url: string) => void | Promise<void>,
    timeoutMs: number,
    signal: AbortSignal | undefined,
  ): Promise<StoredAuthorization> {
    if (this.options.redirectUri !== undefined) {
      const { url, pending } = await this.prepareCodeFlow(challenge, extraScopes, this.options.redirectUri);
      await openUrl(url);
      return withTimeout(pending.done, timeoutMs, signal, () => this.logins.delete(pending.state));
    }
    const loopback = await startLoopback(this.options.redirectPort);
    try {
      const { url, pending } = await this.prepareCodeFlow(challenge, extraScopes, loopback.redirectUri);
      this.logins.delete(pending.state); // the loopback listener receives this one
      const waiting = loopback.code(pending.state, timeoutMs, signal);
      waiting.catch(() => {}); // it may fail while openUrl still runs: awaited below
      await openUrl(url);
      return await this.finishCodeFlow(pending, await waiting);
    } finally {
      await loopback.close();
    }
  }

  /** Discovery, the client, PKCE and `state`: the authorization URL and the login waiting for its redirect. */
  private async prepareCodeFlow(
    challenge: BearerChallenge,
    extraScopes: string[],
    redirectUri: string,
  ): Promise<{ url: string; pending: PendingLogin }> {
    const found = await discover(this.options.serverUrl, challenge, this.http, this.options.protocolVersion);
    const server = found.authorizationServer;
    requirePkce(server);
    if (server.authorization_endpoint === undefined)
      throw new McpAuthError("discovery", `the authorization server ${server.issuer} has no authorization_endpoint`);
    const kept = await this.options.store.readClient(this.options.serverUrl);
    const client = await obtainClient(
      server,
      this.options,
      redirectUri,
      ["authorization_code", "refresh_token"],
      this.http,
      kept,
      this.now(),
    );
    if (client.via === "registered" && client !== kept?.client)
      await this.options.store.writeClient(this.options.serverUrl, { issuer: server.issuer, client });
    await this.credentialsMayGo(client, server);
    const pkce = createPkce();
    const state = randomState();
    const scope = this.scopeFor(found, challenge, extraScopes);
    const url = new URL(server.authorization_endpoint);
    url.searchParams.set("response_type", "code");
    url.searchParams.set("client_id", client.clientId);
    url.searchParams.set("redirect_uri", redirectUri);
    url.searchParams.set("code_challenge", pkce.challenge);
    url.searchParams.set("code_challenge_method", pkce.method);
    url.searchParams.set("state", state);
    url.searchParams.set("resource", found.resource);
    if (scope !== undefined) url.searchParams.set("scope", scope);
    let settle!: PendingLogin["settle"];
    const done = new Promise<StoredAuthorization>((resolve) => {
      settle = (result) => resolve(result);
    });
    const pending: PendingLogin = { state, verifier: pkce.verifier, redirectUri, found, client, scope, settle, done };
    this.logins.set(state, pending);
    return { url: url.href, pending };
  }

  /** Exchanges the code of `pending` (with its verifier and resource); keeps and returns the result. */
  private async finishCodeFlow(pending: PendingLogin, code: string): Promise<StoredAuthorization> {
    const { found, client } = pending;
    const grant: Grant = {
      grant_type: "authorization_code",
      code,
      code_verifier: pending.verifier,
      redirect_uri: pending.redirectUri,
    };
    const tokens = await requestToken(
      found.authorizationServer,
      client,
      grant,
      found.resource,
      pending.scope,
      this.http,
      this.now,
    );
    return this.keep({ resource: found.resource, authorizationServer: found.authorizationServer, client, tokens });
  }

  /** The grant without a person (`client_credentials` or `cross_app_access`); keeps and returns the result. */
  private async machineGrant(challenge: BearerChallenge, extraScopes: string[]): Promise<StoredAuthorization> {
    const client = configuredClient(this.options);
    const grant = this.grant;
    if (
      client === undefined ||
      (client.clientSecret === undefined && client.privateKey === undefined && grant === "client_credentials")
    ) {
      throw new McpAuthError(
        "refused",
        `"grant": "${grant}" needs "clientId" and a "clientSecret" or a private key in the server's "oauth" entry (${this.options.serverUrl})`,
      );
    }
    const found = await discover(this.options.serverUrl, challenge, this.http, this.options.protocolVersion);
    await this.credentialsMayGo(client, found.authorizationServer);
    const scope = this.scopeFor(found, challenge, extraScopes);
    const grantOf: Grant =
      grant === "cross_app_access"
        ? { grant_type: JWT_BEARER_GRANT, assertion: await this.identityAssertion(found, scope) }
        : { grant_type: "client_credentials" };
    const tokens = await requestToken(
      found.authorizationServer,
      client,
      grantOf,
      found.resource,
      scope,
      this.http,
      this.now,
    );
    return this.keep({ resource: found.resource, authorizationServer: found.authorizationServer, client, tokens });
  }

  /**
   * Cross-app access, first step: the person's ID token exchanged at the identity provider
   * (RFC 8693) for an identity assertion (ID-JAG) for the MCP server's authorization server.
   */
  private async identityAssertion(found: Discovered, scope: string | undefined): Promise<string> {
    const idp = this.options.identityProvider;
    if (idp === undefined)
      throw new McpAuthError(
        "refused",
        `"grant": "cross_app_access" needs "identityProvider" (its tokenEndpoint, clientId and the person's idToken) for ${this.options.serverUrl}`,
      );
    let idToken: string;
    try {
      idToken = typeof idp.idToken === "function" ? await idp.idToken() : idp.idToken;
    } catch (error) {
      throw new McpAuthError("login-required", `cannot get the ID token of the single sign-on: ${errorText(error)}`);
    }
    const form = new URLSearchParams({
      grant_type: TOKEN_EXCHANGE_GRANT,
      requested_token_type: ID_JAG_TOKEN_TYPE,
      audience: found.authorizationServer.issuer,
      resource: found.resource,
      subject_token: idToken,
      subject_token_type: ID_TOKEN_TYPE,
      client_id: idp.clientId,
    });
    if (scope !== undefined) form.set("scope", scope);
    if (idp.clientSecret !== undefined) form.set("client_secret", idp.clientSecret);
    const { answer } = await postTokenForm(idp.tokenEndpoint, form, {}, this.http, {
      failure: "login-required",
      who: `the identity provider's token endpoint ${new URL(idp.tokenEndpoint).origin}`,
      what: "exchange the ID token for an identity assertion (sign in again if it expired)",
    });
    if (typeof answer.access_token !== "string" || answer.issued_token_type !== ID_JAG_TOKEN_TYPE)
      throw new McpAuthError(
        "refused",
        `the identity provider answered the token exchange without an identity assertion (issued_token_type ${JSON.stringify(answer.issued_token_type ?? null).slice(0, 80)})`,
      );
    return answer.access_token;
  }

  /** A refresh with the kept refresh token (for the same resource and client). */
  private async refresh(stored: StoredAuthorization): Promise<void> {
    const refreshToken = stored.tokens.refresh_token;
    if (refreshToken === undefined) throw new McpAuthError("login-required", "no refresh token is kept");
    // a configured client's secret and key are not kept with the tokens: they come from the configuration
    const client =
      stored.client.via === "configured" ? (configuredClient(this.options) ?? stored.client) : stored.client;
    await this.credentialsMayGo(client, stored.authorizationServer);
    const tokens = await requestToken(
      stored.authorizationServer,
      client,
      { grant_type: "refresh_token", refresh_token: refreshToken },
      stored.resource,
      undefined,
      this.http,
      this.now,
    );
    if (tokens.scope === undefined && stored.tokens.scope !== undefined) tokens.scope = stored.tokens.scope;
    // a scope a 403 asked for is still wanted after a refresh: the next login asks for it
    await this.keep({ ...stored, tokens }, stored.wantedScope);
  }

  /** Keeps `value` (a login's or a refresh's); `wantedScope`: still wanted (a refresh keeps it). */
  private async keep(
    value: Omit<StoredAuthorization, "serverUrl">,
    wantedScope?: string,
  ): Promise<StoredAuthorization> {
    const { wantedScope: _, ...rest } = value as StoredAuthorization;
    const stored: StoredAuthorization = {
      ...rest,
      serverUrl: this.options.serverUrl,
      ...(wantedScope !== undefined && { wantedScope }),
    };
    if (stored.client.via === "configured") {
      // the configuration holds its secret (as ${VAR}) and key; the token file holds only what the server gave
      const { clientSecret: __, privateKey: ___, ...client } = stored.client;
      stored.client = client;
    }
    await this.options.store.write(stored);
    return stored;
  }

  /**
   * The issuer pin: a configured client's secret or key goes only to the authorization server
   * it belongs to, `issuer` of the settings, else the first one it was used with (recorded then,
   * with the client's id, in the store's client slot). Another one named by the MCP server is
   * refused before anything is sent to it, the person's browser included. A client without a
   * secret or key (registered, a metadata document, a public id) goes to any.
   */
  private async credentialsMayGo(client: OAuthClient, server: AuthorizationServerMetadata): Promise<void> {
    if (client.via !== "configured" || (client.clientSecret === undefined && client.privateKey === undefined)) return;
    const serverUrl = this.options.serverUrl;
    const configured = this.options.issuer;
    let expected = configured;
    if (expected === undefined) {
      const kept = await this.options.store.readClient(serverUrl);
      if (kept?.client.via === "configured" && kept.client.clientId === client.clientId) expected = kept.issuer;
      else {
        await this.options.store.writeClient(serverUrl, {
          issuer: server.issuer,
          client: { clientId: client.clientId, via: "configured" },
        });
        return;
      }
    }
    if (sameIssuer(expected, server.issuer)) return;
    const credential = client.privateKey !== undefined ? "private key" : "secret";
    const action = `if the client "${client.clientId}" really belongs to ${server.issuer} now, set "oauth.issuer" (McpOAuthOptions.issuer) to it`;
    throw new McpAuthError(
      "wrong-issuer",
      `the MCP server ${serverUrl} sent this client to the authorization server ${server.issuer}, but the ` +
        `client "${client.clientId}" and its ${credential} belong to ${expected} ` +
        `(${configured !== undefined ? '"oauth.issuer"' : "where they were first used"}); nothing was sent to ${server.issuer}. ` +
        `${action[0]!.toUpperCase()}${action.slice(1)}.`,
      { action },
    );
  }

  /** The scopes to ask for (space separated), or undefined for none. */
  private scopeFor(found: Discovered, challenge: BearerChallenge, extra: string[]): string | undefined {
    let scopes = union(this.options.scopes ?? [], union(challenge.scope ?? [], extra));
    if (scopes.length === 0) scopes = found.resourceMetadata?.scopes_supported ?? [];
    return scopes.length === 0 ? undefined : scopes.join(" ");
  }

  private async stored(): Promise<StoredAuthorization | undefined> {
    return this.options.store.read(this.options.serverUrl);
  }

  /** One token operation at a time: a request that comes while one runs waits for it. */
  private async single(operation: () => Promise<void>): Promise<void> {
    while (this.pending !== undefined) await this.pending.catch(() => {});
    const running = operation();
    this.pending = running;
    try {
      await running;
    } finally {
      if (this.pending === running) this.pending = undefined;
    }
  }

  /** Runs `operation`; an `McpAuthError` it throws names this server. */
  private async named<T>(operation: () => Promise<T>): Promise<T> {
    try {
      return await operation();
    } catch (error) {
      if (error instanceof McpAuthError && error.serverUrl === undefined) error.serverUrl = this.options.serverUrl;
      throw error;
    }
  }

  private hint(): string {
    return this.options.loginHint ?? "log in first (McpOAuth.login)";
  }

  private now = (): number => (this.options.now ?? Date.now)();

  /** Every request of authorization, through the one outbound policy. */
  private get http(): AuthFetch {
    return authFetch(this.options.requestTimeoutMs ?? AUTH_REQUEST_TIMEOUT_MS, this.options.fetch);
  }
}

/** What a login tells its caller. */
function resultOf(stored: StoredAuthorization): LoginResult {
  return {
    ...(stored.tokens.scope !== undefined && { scope: stored.tokens.scope }),
    client: stored.client.via,
    issuer: stored.authorizationServer.issuer,
  };
}

/** `promise`, or a "login-failed" error after `timeoutMs` or when `signal` aborts (`onGiveUp` runs then). */
function withTimeout<T>(
  promise: Promise<T>,
  timeoutMs: number,
  signal: AbortSignal | undefined,
  onGiveUp: () => void,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const finish = (error: Error | undefined, value?: T) => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      if (error !== undefined) {
        onGiveUp();
        reject(error);
      } else resolve(value as T);
    };
    const timer = setTimeout(() => {
      const within = timeoutMs >= 1000 ? `${Math.round(timeoutMs / 1000)} s` : `${timeoutMs} ms`;
      finish(new McpAuthError("login-failed", `the login was not completed within ${within}; try it again`));
    }, timeoutMs);
    const onAbort = () => finish(new McpAuthError("login-failed", "the login was cancelled"));
    if (signal?.aborted) return onAbort();
    signal?.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => finish(undefined, value),
      (error: Error) => finish(error),
    );
  });
}

function union(a: readonly string[], b: readonly string[]): string[] {
  return [...new Set([...a, ...b])];
}
