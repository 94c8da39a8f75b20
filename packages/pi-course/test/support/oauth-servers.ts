/**
 * A real OAuth 2.1 authorization server and an MCP server it protects, both on 127.0.0.1, built
 * with the official SDK's server-side auth (1.32.2): `mcpAuthRouter` serves the authorization
 * server's metadata, `/authorize` (PKCE S256 checked), `/token` (code and refresh grants) and
 * `/register` (RFC 7591); `mcpAuthMetadataRouter` and `requireBearerAuth` make the MCP server a
 * resource server with RFC 9728 metadata that checks each token's audience (RFC 8707).
 *
 * What this test server adds, as an authorization server's own code would: the provider (clients,
 * codes and tokens in memory), a consent page a browser must submit (`#allow` / `#deny`), the
 * client credentials grant (the SDK's token handler leaves it to the server), Client ID Metadata
 * Documents (a URL `client_id` is fetched), and a 403 `insufficient_scope` for the `admin` tool
 * when the token lacks `mcp:admin`. `log` records what the client asked for, without tokens.
 */
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { createMcpExpressApp } from "@modelcontextprotocol/sdk/server/express.js";
import {
  createOAuthMetadata,
  mcpAuthMetadataRouter,
  mcpAuthRouter,
} from "@modelcontextprotocol/sdk/server/auth/router.js";
import { requireBearerAuth } from "@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js";
import { InvalidTokenError } from "@modelcontextprotocol/sdk/server/auth/errors.js";
import { authenticateClient } from "@modelcontextprotocol/sdk/server/auth/middleware/clientAuth.js";
import type { AuthorizationParams, OAuthServerProvider } from "@modelcontextprotocol/sdk/server/auth/provider.js";
import type { AuthInfo } from "@modelcontextprotocol/sdk/server/auth/types.js";
import type { OAuthClientInformationFull, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";

/** The scope every MCP request needs; the `admin` tool needs `mcp:admin` too. */
export const TOOLS_SCOPE = "mcp:tools";
export const ADMIN_SCOPE = "mcp:admin";

interface Issued {
  clientId: string;
  scopes: string[];
  resource?: URL;
  expiresAt: number;
}

/** The provider: what an authorization server keeps, in memory. */
class Provider implements OAuthServerProvider {
  readonly clients = new Map<string, OAuthClientInformationFull>();
  readonly consents = new Map<string, { client: OAuthClientInformationFull; params: AuthorizationParams }>();
  readonly codes = new Map<string, { client: OAuthClientInformationFull; params: AuthorizationParams }>();
  readonly access = new Map<string, Issued>();
  readonly refresh = new Map<string, Omit<Issued, "expiresAt">>();
  /** Seconds an access token lives. */
  accessSeconds = 3600;

  constructor(private readonly log: string[]) {}

  readonly clientsStore = {
    getClient: async (id: string): Promise<OAuthClientInformationFull | undefined> => {
      if (this.clients.has(id)) return this.clients.get(id);
      if (!/^https?:\/\//.test(id)) return undefined;
      // a Client ID Metadata Document: the client id is the URL of its metadata
      const response = await fetch(id).catch(() => undefined);
      if (response === undefined || !response.ok) return undefined;
      const document = (await response.json()) as OAuthClientInformationFull;
      if (document.client_id !== id) return undefined;
      this.log.push(`fetched the client metadata document ${id}`);
      return document;
    },
    registerClient: async (client: OAuthClientInformationFull) => {
      this.log.push(`registered ${client.client_name} (${client.token_endpoint_auth_method})`);
      this.clients.set(client.client_id, client);
      return client;
    },
  };

  async authorize(client: OAuthClientInformationFull, params: AuthorizationParams, res: any): Promise<void> {
    this.log.push(
      `authorize ${client.client_id.startsWith("http") ? "(metadata document client)" : ""} scope=${params.scopes?.join(" ") ?? ""} resource=${params.resource?.href ?? "none"} pkce=${params.codeChallenge !== "" ? "S256" : "none"}`.replace(
        "  ",
        " ",
      ),
    );
    const id = randomUUID();
    this.consents.set(id, { client, params });
    res
      .type("html")
      .send(
        `<!doctype html><title>Consent</title><h1>Allow ${escape(client.client_name ?? client.client_id)}?</h1>` +
          `<p id="scopes">${escape(params.scopes?.join(" ") ?? "")}</p>` +
          `<form method="post" action="/consent"><input type="hidden" name="request" value="${id}">` +
          `<button id="allow" name="decision" value="allow">Allow</button>` +
          `<button id="deny" name="decision" value="deny">Deny</button></form>`,
      );
  }

  /** The consent form's answer: a code (or access_denied) sent back to the client's redirect URI. */
  consent(request: string, decision: string): string {
    const pending = this.consents.get(request);
    if (pending === undefined) throw new Error("no such consent request");
    this.consents.delete(request);
    const target = new URL(pending.params.redirectUri);
    if (pending.params.state !== undefined) target.searchParams.set("state", pending.params.state);
    if (decision !== "allow") {
      target.searchParams.set("error", "access_denied");
      return target.href;
    }
    const code = randomUUID();
    this.codes.set(code, pending);
    target.searchParams.set("code", code);
    return target.href;
  }

  async challengeForAuthorizationCode(_client: OAuthClientInformationFull, code: string): Promise<string> {
    const found = this.codes.get(code);
    if (found === undefined) throw new Error("unknown code");
    return found.params.codeChallenge;
  }

  async exchangeAuthorizationCode(
    client: OAuthClientInformationFull,
    code: string,
    _verifier?: string,
    _redirectUri?: string,
    resource?: URL,
  ): Promise<OAuthTokens> {
    const found = this.codes.get(code);
    if (found === undefined || found.client.client_id !== client.client_id) throw new Error("bad code");
    this.codes.delete(code);
    this.log.push(`token authorization_code resource=${resource?.href ?? "none"}`);
    return this.issue(client.client_id, found.params.scopes ?? [], resource ?? found.params.resource, true);
  }

  async exchangeRefreshToken(
    client: OAuthClientInformationFull,
    refreshToken: string,
    _scopes?: string[],
    resource?: URL,
  ): Promise<OAuthTokens> {
    const found = this.refresh.get(refreshToken);
    if (found === undefined || found.clientId !== client.client_id) throw new Error("bad refresh token");
    this.refresh.delete(refreshToken); // rotated, as OAuth 2.1 asks of public clients
    this.log.push(`token refresh_token resource=${resource?.href ?? "none"}`);
    return this.issue(client.client_id, found.scopes, resource ?? found.resource, true);
  }

  issue(clientId: string, scopes: string[], resource: URL | undefined, withRefresh: boolean): OAuthTokens {
    const token = `at-${randomUUID()}`;
    this.access.set(token, {
      clientId,
      scopes,
      ...(resource !== undefined && { resource }),
      expiresAt: Date.now() + this.accessSeconds * 1000,
    });
    const tokens: OAuthTokens = {
      access_token: token,
      token_type: "bearer",
      expires_in: this.accessSeconds,
      scope: scopes.join(" "),
    };
    if (withRefresh) {
      const refresh = `rt-${randomUUID()}`;
      this.refresh.set(refresh, { clientId, scopes, ...(resource !== undefined && { resource }) });
      tokens.refresh_token = refresh;
    }
    return tokens;
  }

  async verifyAccessToken(token: string): Promise<AuthInfo> {
    const found = this.access.get(token);
    if (found === undefined || found.expiresAt < Date.now()) throw new InvalidTokenError("unknown or expired token");
    return {
      token,
      clientId: found.clientId,
      scopes: found.scopes,
      expiresAt: Math.floor(found.expiresAt / 1000),
      ...(found.resource !== undefined && { resource: found.resource }),
    };
  }
}

function escape(text: string): string {
  return text.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** The whole urlencoded body of `req` (read here, so express's parsers see it as read). */
async function formOf(req: IncomingMessage): Promise<Record<string, string>> {
  let text = "";
  for await (const chunk of req) text += chunk;
  return Object.fromEntries(new URLSearchParams(text));
}

export interface OAuthServers {
  /** The protected MCP endpoint. */
  mcpUrl: string;
  /** The authorization server's issuer. */
  issuer: string;
  provider: Provider;
  /** What the client asked the authorization server for, in order (no tokens). */
  log: string[];
  /** Registers a confidential client (a pre-registered id, or a machine for client credentials). */
  addClient(clientId: string, clientSecret: string | undefined, redirectUris?: string[]): void;
  /** Every access token is forgotten (a server restart): the next request gets a 401. */
  revokeAccessTokens(): void;
  /** Serves a Client ID Metadata Document on the MCP server's host; its URL is the client id. */
  clientMetadataUrl: string;
  close(): Promise<void>;
}

/** Starts both servers. `cimd`: the authorization server says it accepts client metadata documents. */
export async function startOAuthServers(options: { cimd?: boolean } = {}): Promise<OAuthServers> {
  const log: string[] = [];
  const provider = new Provider(log);
  const asHttp: Server = createServer();
  const mcpHttp: Server = createServer();
  await Promise.all(
    [asHttp, mcpHttp].map((server) => new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))),
  );
  const issuer = `http://127.0.0.1:${(asHttp.address() as AddressInfo).port}/`;
  const mcpOrigin = `http://127.0.0.1:${(mcpHttp.address() as AddressInfo).port}`;
  const mcpUrl = `${mcpOrigin}/mcp`;
  const clientMetadataUrl = `${mcpOrigin}/client/pi-course.json`;

  // the authorization server
  const as = createMcpExpressApp({ host: "127.0.0.1" });
  const metadata = {
    ...createOAuthMetadata({ provider, issuerUrl: new URL(issuer), scopesSupported: [TOOLS_SCOPE, ADMIN_SCOPE] }),
    grant_types_supported: ["authorization_code", "refresh_token", "client_credentials"],
    ...(options.cimd === true && { client_id_metadata_document_supported: true }),
  };
  as.get("/.well-known/oauth-authorization-server", (_req: any, res: any) => res.json(metadata));
  as.post("/consent", async (req: IncomingMessage, res: any) => {
    const form = await formOf(req);
    try {
      res.redirect(provider.consent(form.request ?? "", form.decision ?? ""));
    } catch (error) {
      res.status(400).send(String(error));
    }
  });
  // the client credentials grant, which the SDK's token handler leaves to the server
  as.post("/token", async (req: any, res: any, next: (error?: unknown) => void) => {
    req.body = await formOf(req); // read here: the SDK's parser sees a read body and keeps this one
    if (req.body.grant_type !== "client_credentials") return next();
    authenticateClient({ clientsStore: provider.clientsStore })(req, res, () => {
      const scopes = typeof req.body.scope === "string" ? req.body.scope.split(" ") : [TOOLS_SCOPE];
      const resource = typeof req.body.resource === "string" ? new URL(req.body.resource) : undefined;
      log.push(`token client_credentials resource=${resource?.href ?? "none"}`);
      res.set("cache-control", "no-store").json(provider.issue(req.client.client_id, scopes, resource, false));
    });
  });
  as.use(
    mcpAuthRouter({
      provider,
      issuerUrl: new URL(issuer),
      scopesSupported: [TOOLS_SCOPE, ADMIN_SCOPE],
      authorizationOptions: { rateLimit: false },
      tokenOptions: { rateLimit: false },
      clientRegistrationOptions: { rateLimit: false },
    }),
  );
  asHttp.on("request", as);

  // the protected MCP server
  const mcp = createMcpExpressApp({ host: "127.0.0.1" });
  mcp.use(
    mcpAuthMetadataRouter({
      oauthMetadata: metadata,
      resourceServerUrl: new URL(mcpUrl),
      scopesSupported: [TOOLS_SCOPE, ADMIN_SCOPE],
    }),
  );
  const resourceMetadataUrl = `${mcpOrigin}/.well-known/oauth-protected-resource/mcp`;
  mcp.get("/client/pi-course.json", (_req: any, res: any) =>
    res.json({
      client_id: clientMetadataUrl,
      client_name: "pi-course (metadata document)",
      redirect_uris: ["http://127.0.0.1/callback"],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    }),
  );
  mcp.all(
    "/mcp",
    requireBearerAuth({
      verifier: provider,
      requiredScopes: [TOOLS_SCOPE],
      resourceMetadataUrl,
      expectedResource: new URL(mcpUrl),
    }),
    async (req: any, res: any) => {
      const body = req.body;
      if (body?.method === "tools/call" && body.params?.name === "admin" && !req.auth.scopes.includes(ADMIN_SCOPE)) {
        res
          .status(403)
          .set(
            "www-authenticate",
            `Bearer error="insufficient_scope", scope="${TOOLS_SCOPE} ${ADMIN_SCOPE}", resource_metadata="${resourceMetadataUrl}", error_description="the admin tool needs ${ADMIN_SCOPE}"`,
          )
          .json({ error: "insufficient_scope", error_description: `the admin tool needs ${ADMIN_SCOPE}` });
        return;
      }
      if (req.method !== "POST") {
        res.status(405).set("allow", "POST").end();
        return;
      }
      const server = new McpServer({ name: "protected", version: "1.0.0" });
      const scopes = (req.auth.scopes as string[]).join(" ");
      server.registerTool("whoami", { description: "Says who called." }, async () => ({
        content: [{ type: "text", text: `hello from the protected server (scopes: ${scopes})` }],
      }));
      server.registerTool("admin", { description: "Needs mcp:admin." }, async () => ({
        content: [{ type: "text", text: "admin work done" }],
      }));
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      res.on("close", () => void transport.close().then(() => server.close()));
      await server.connect(transport);
      await transport.handleRequest(req, res, body);
    },
  );
  mcpHttp.on("request", mcp);

  return {
    mcpUrl,
    issuer,
    provider,
    log,
    clientMetadataUrl,
    addClient(clientId, clientSecret, redirectUris = ["http://127.0.0.1/callback"]) {
      provider.clients.set(clientId, {
        client_id: clientId,
        ...(clientSecret !== undefined && { client_secret: clientSecret }),
        client_name: clientId,
        redirect_uris: redirectUris,
        token_endpoint_auth_method: clientSecret !== undefined ? "client_secret_post" : "none",
      });
    },
    revokeAccessTokens() {
      provider.access.clear();
    },
    async close() {
      for (const server of [asHttp, mcpHttp]) {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      }
    },
  };
}
