/**
 * `McpOAuth`: OAuth 2.1 for one remote MCP server, as the MCP authorization specification
 * (2025-11-25) describes it. It is the transport's `HttpAuth` (a Bearer header on each request;
 * a 401 or 403 reported back) and the login a person runs.
 *
 * - `login()`: asks the server without a token to learn its challenge, discovers the
 *   authorization server (`discovery.ts`), gets a client identity (`client-identity.ts`),
 *   listens on a loopback redirect, sends the browser to the authorization endpoint with PKCE
 *   S256, `state` and the `resource` indicator, exchanges the code (with the verifier and the
 *   resource) and keeps the tokens (`token-store.ts`). With `grant: "client_credentials"` (a
 *   machine, no person) it asks the token endpoint directly instead.
 * - On each request: the kept access token, refreshed first when it expires within
 *   `REFRESH_MARGIN_MS`. On a 401: one refresh (or, for client credentials, a new token), else
 *   a login when `openUrl` is given, else `McpAuthError` ("login-required") saying
 *   `loginHint`. On a 403 `insufficient_scope`: the same with the union of the granted scopes
 *   and the ones asked for; without a person the scope wanted is kept so the next login asks.
 *
 * Scopes asked for: the configured ones and those of the challenge, else all the resource
 * metadata lists (`scopes_supported`), else none. Tokens and secrets stay in the store and in
 * requests to the token endpoint: never in a message.
 */
import { McpAuthError } from "./auth-error.js";
import { type ClientSettings, obtainClient } from "./client-identity.js";
import { type Discovered, discover } from "./discovery.js";
import type { HttpAuth } from "./http-auth.js";
import { startLoopback } from "./loopback.js";
import { createPkce, randomState } from "./pkce.js";
import { type Grant, requestToken } from "./token-request.js";
import type { McpTokenStore, StoredAuthorization } from "./token-store.js";
import { type BearerChallenge, parseBearerChallenge } from "./www-authenticate.js";

/** A token that expires within this many milliseconds is refreshed before it is used: 30 s. */
export const REFRESH_MARGIN_MS = 30_000;
/** How long `login` waits for the browser to come back: 5 minutes. */
export const DEFAULT_LOGIN_TIMEOUT_MS = 300_000;
/**
 * How long one request of authorization (the probe, a metadata document, registration, a token
 * request) may take before it fails: 30 s. A server that never answers must not hang a call.
 */
export const AUTH_REQUEST_TIMEOUT_MS = 30_000;

/** How one server is authorized (the `"oauth"` object of its configuration entry, and more). */
export interface McpOAuthOptions extends ClientSettings {
  /** The MCP endpoint. */
  serverUrl: string;
  store: McpTokenStore;
  /** Scopes to ask for besides those the server's challenge names. */
  scopes?: string[];
  /** `"client_credentials"`: a machine's own credentials (needs `clientId` and `clientSecret`); default the authorization code flow. */
  grant?: "authorization_code" | "client_credentials";
  /** The loopback port of the redirect (default: any free one). Some servers want a fixed one. */
  redirectPort?: number;
  /** What a person is told to do when a login is needed (default: call `McpOAuth.login`). */
  loginHint?: string;
  /**
   * Given: a person is there, and a 401 without a usable token or a 403 `insufficient_scope`
   * runs the login at once, sending them to this URL. Absent: those fail with what to do.
   */
  openUrl?: (url: string) => void | Promise<void>;
  /** How long a login waits for the browser (default `DEFAULT_LOGIN_TIMEOUT_MS`). */
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

/** OAuth for one remote MCP server; pass it as `HttpServerParameters.auth`. */
export class McpOAuth implements HttpAuth {
  private pending: Promise<void> | undefined;

  constructor(readonly options: McpOAuthOptions) {}

  /** Whether tokens are kept for this server. */
  get loggedIn(): boolean {
    return this.options.store.read(this.options.serverUrl) !== undefined;
  }

  async authorization(): Promise<string | undefined> {
    await this.pending?.catch(() => {});
    let stored = this.stored();
    if (stored === undefined) return undefined;
    const expires = stored.tokens.expires_at;
    if (
      expires !== undefined &&
      expires - REFRESH_MARGIN_MS <= this.now() &&
      stored.tokens.refresh_token !== undefined
    ) {
      // refreshed before it is used; if that fails the request goes without, and its 401 says what to do
      await this.single(() => this.refresh(stored!)).catch(() => {});
      stored = this.stored();
      if (stored === undefined) return undefined;
    }
    return `Bearer ${stored.tokens.access_token}`;
  }

  async unauthorized(challenge: string | null, retried: boolean): Promise<void> {
    const parsed = parseBearerChallenge(challenge);
    const stored = this.stored();
    if (this.options.grant === "client_credentials") {
      if (!retried) {
        // requests that met the same 401 while a token was asked for find the new one kept
        const refused = this.stored()?.tokens.access_token;
        return this.single(async () => {
          const now = this.stored()?.tokens.access_token;
          if (now !== undefined && now !== refused) return;
          await this.clientCredentials(parsed, []);
        });
      }
      throw new McpAuthError(
        "refused",
        `the MCP server ${this.options.serverUrl} refused the token the client credentials grant gave (check the client's grants there)`,
      );
    }
    if (!retried && stored?.tokens.refresh_token !== undefined) {
      try {
        // a request that met the same 401 while another refreshed finds the new token kept
        return await this.single(async () => {
          const now = this.stored();
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
    );
  }

  async forbidden(challenge: string | null): Promise<boolean> {
    const parsed = parseBearerChallenge(challenge);
    if (parsed.error !== "insufficient_scope") return false;
    const stored = this.stored();
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
    if (this.options.grant === "client_credentials") {
      await this.single(() => this.clientCredentials(parsed, wider).then(() => {}));
      return true;
    }
    if (this.options.openUrl !== undefined) {
      await this.single(() => this.codeFlow(parsed, wider, {}).then(() => {}));
      return true;
    }
    if (stored !== undefined) this.options.store.write({ ...stored, wantedScope: wider.join(" ") });
    throw new McpAuthError(
      "insufficient-scope",
      `the MCP server ${this.options.serverUrl} needs the scope "${needed.join(" ")}", which this login was not given: ${this.hint()} (the next login asks for it)`,
    );
  }

  /**
   * Authorizes: the code flow (the person is sent to the URL `openUrl` gets), or with
   * `grant: "client_credentials"` the machine's own credentials. Keeps the tokens.
   */
  async login(options: LoginOptions = {}): Promise<LoginResult> {
    const { challenge, asked } = await this.probe();
    const stored = this.stored();
    const scopes = union(options.scopes ?? [], stored?.wantedScope?.split(" ").filter((s) => s !== "") ?? []);
    let result: StoredAuthorization;
    const run = () =>
      this.options.grant === "client_credentials"
        ? this.clientCredentials(challenge, scopes)
        : this.codeFlow(challenge, scopes, options);
    await this.single(async () => {
      result = await run().catch((error: unknown) => {
        // a server that answered without asking may need no authorization at all
        if (!asked && error instanceof McpAuthError && error.failure === "discovery")
          error.message += " (the server answered without asking for authorization: it may need none)";
        throw error;
      });
    });
    return {
      ...(result!.tokens.scope !== undefined && { scope: result!.tokens.scope }),
      client: result!.client.via,
      issuer: result!.authorizationServer.issuer,
    };
  }

  /** Forgets the kept tokens; true when there were some. */
  logout(): boolean {
    return this.options.store.remove(this.options.serverUrl);
  }

  /**
   * The server's challenge to a request without a token (an `initialize` POST, as a client's
   * first request); `asked`: it answered 401 or 403.
   */
  private async probe(): Promise<{ challenge: BearerChallenge; asked: boolean }> {
    const fetcher = this.fetcher;
    let response: Response;
    try {
      response = await fetcher(this.options.serverUrl, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: "pi-course-auth-probe",
          method: "initialize",
          params: {
            protocolVersion: "2025-11-25",
            capabilities: {},
            clientInfo: { name: "pi-course", version: "0.1.0" },
          },
        }),
      });
    } catch (error) {
      const cause = (error as { cause?: { code?: string } }).cause?.code;
      throw new McpAuthError(
        "discovery",
        `cannot reach the MCP server at ${this.options.serverUrl}: ${cause ?? (error as Error).message}`,
      );
    }
    await response.body?.cancel();
    if (response.status !== 401 && response.status !== 403) {
      if (response.ok) {
        const session = response.headers.get("mcp-session-id");
        if (session !== null)
          await fetcher(this.options.serverUrl, { method: "DELETE", headers: { "mcp-session-id": session } })
            .then((r) => r.body?.cancel())
            .catch(() => {});
      }
      // no challenge: discovery goes by the well-known URLs
      return { challenge: {}, asked: false };
    }
    return { challenge: parseBearerChallenge(response.headers.get("www-authenticate")), asked: true };
  }

  /** The authorization code flow with PKCE and a loopback redirect; keeps and returns the result. */
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
      );
    const fetcher = this.fetcher;
    const found = await discover(this.options.serverUrl, challenge, fetcher);
    const server = found.authorizationServer;
    if (server.authorization_endpoint === undefined)
      throw new McpAuthError("discovery", `the authorization server ${server.issuer} has no authorization_endpoint`);
    const loopback = await startLoopback(this.options.redirectPort);
    try {
      const client = await obtainClient(
        server,
        this.options,
        loopback.redirectUri,
        ["authorization_code", "refresh_token"],
        fetcher,
      );
      const pkce = createPkce();
      const state = randomState();
      const scope = this.scopeFor(found, challenge, extraScopes);
      const url = new URL(server.authorization_endpoint);
      url.searchParams.set("response_type", "code");
      url.searchParams.set("client_id", client.clientId);
      url.searchParams.set("redirect_uri", loopback.redirectUri);
      url.searchParams.set("code_challenge", pkce.challenge);
      url.searchParams.set("code_challenge_method", pkce.method);
      url.searchParams.set("state", state);
      url.searchParams.set("resource", found.resource);
      if (scope !== undefined) url.searchParams.set("scope", scope);
      const waiting = loopback.code(
        state,
        options.timeoutMs ?? this.options.loginTimeoutMs ?? DEFAULT_LOGIN_TIMEOUT_MS,
        options.signal,
      );
      waiting.catch(() => {}); // it may fail while openUrl still runs: awaited below
      await openUrl(url.href);
      const code = await waiting;
      const grant: Grant = {
        grant_type: "authorization_code",
        code,
        code_verifier: pkce.verifier,
        redirect_uri: loopback.redirectUri,
      };
      const tokens = await requestToken(server, client, grant, found.resource, scope, fetcher, this.now);
      return this.keep({ resource: found.resource, authorizationServer: server, client, tokens });
    } finally {
      await loopback.close();
    }
  }

  /** The client credentials grant (a configured confidential client); keeps and returns the result. */
  private async clientCredentials(challenge: BearerChallenge, extraScopes: string[]): Promise<StoredAuthorization> {
    const { clientId, clientSecret } = this.options;
    if (clientId === undefined || clientSecret === undefined) {
      throw new McpAuthError(
        "refused",
        `"grant": "client_credentials" needs "clientId" and "clientSecret" in the server's "oauth" entry (${this.options.serverUrl})`,
      );
    }
    const fetcher = this.fetcher;
    const found = await discover(this.options.serverUrl, challenge, fetcher);
    const client = { clientId, clientSecret, via: "configured" as const };
    const scope = this.scopeFor(found, challenge, extraScopes);
    const tokens = await requestToken(
      found.authorizationServer,
      client,
      { grant_type: "client_credentials" },
      found.resource,
      scope,
      fetcher,
      this.now,
    );
    return this.keep({ resource: found.resource, authorizationServer: found.authorizationServer, client, tokens });
  }

  /** A refresh with the kept refresh token (for the same resource and client). */
  private async refresh(stored: StoredAuthorization): Promise<void> {
    const refreshToken = stored.tokens.refresh_token;
    if (refreshToken === undefined) throw new McpAuthError("login-required", "no refresh token is kept");
    // a configured client's secret is not kept with the tokens: it comes from the configuration
    const secret = stored.client.via === "configured" ? this.options.clientSecret : undefined;
    const client = secret !== undefined ? { ...stored.client, clientSecret: secret } : stored.client;
    const tokens = await requestToken(
      stored.authorizationServer,
      client,
      { grant_type: "refresh_token", refresh_token: refreshToken },
      stored.resource,
      undefined,
      this.fetcher,
      this.now,
    );
    if (tokens.scope === undefined && stored.tokens.scope !== undefined) tokens.scope = stored.tokens.scope;
    // a scope a 403 asked for is still wanted after a refresh: the next login asks for it
    this.keep({ ...stored, tokens }, stored.wantedScope);
  }

  /** Keeps `value` (a login's or a refresh's); `wantedScope`: still wanted (a refresh keeps it). */
  private keep(value: Omit<StoredAuthorization, "serverUrl">, wantedScope?: string): StoredAuthorization {
    const { wantedScope: _, ...rest } = value as StoredAuthorization;
    const stored: StoredAuthorization = {
      ...rest,
      serverUrl: this.options.serverUrl,
      ...(wantedScope !== undefined && { wantedScope }),
    };
    if (stored.client.via === "configured") {
      // the configuration holds its secret (as ${VAR}); the token file holds only what the server gave
      const { clientSecret: __, ...client } = stored.client;
      stored.client = client;
    }
    this.options.store.write(stored);
    return stored;
  }

  /** The scopes to ask for (space separated), or undefined for none. */
  private scopeFor(found: Discovered, challenge: BearerChallenge, extra: string[]): string | undefined {
    let scopes = union(this.options.scopes ?? [], union(challenge.scope ?? [], extra));
    if (scopes.length === 0) scopes = found.resourceMetadata?.scopes_supported ?? [];
    return scopes.length === 0 ? undefined : scopes.join(" ");
  }

  private stored(): StoredAuthorization | undefined {
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

  private hint(): string {
    return this.options.loginHint ?? "log in first (McpOAuth.login)";
  }

  private now = (): number => (this.options.now ?? Date.now)();

  /** The fetch of every request of authorization: each fails after `requestTimeoutMs`. */
  private fetcher: typeof fetch = (input, init) => {
    const ms = this.options.requestTimeoutMs ?? AUTH_REQUEST_TIMEOUT_MS;
    const timeout = AbortSignal.timeout(ms);
    const signal = init?.signal ? AbortSignal.any([init.signal, timeout]) : timeout;
    return (this.options.fetch ?? fetch)(input, { ...init, signal }).catch((error: unknown) => {
      throw timeout.aborted ? new Error(`no answer within ${ms} ms`) : error;
    });
  };
}

function union(a: readonly string[], b: readonly string[]): string[] {
  return [...new Set([...a, ...b])];
}
