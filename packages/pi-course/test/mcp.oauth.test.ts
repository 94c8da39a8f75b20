/**
 * Authorization of remote MCP servers (the 2025-11-25 specification's OAuth profile), end to end
 * on 127.0.0.1 against a real authorization server and a protected MCP server built with the
 * official SDK's server-side auth (support/oauth-servers.ts). The consent page is submitted by
 * headless Chromium, as a person would; the library's client is `McpOAuth` on `HttpTransport`.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from "vitest";
import { errorText } from "../src/base/errors.js";
import { authorizationServerMetadata } from "../src/mcp/auth/discovery.js";
import { McpOAuth, type McpOAuthOptions } from "../src/mcp/auth/oauth.js";
import { McpTokenStore } from "../src/mcp/auth/token-store.js";
import { parseBearerChallenge } from "../src/mcp/auth/www-authenticate.js";
import { oauthForServer } from "../src/mcp/auth/server-auth.js";
import { McpClient } from "../src/mcp/client.js";
import { parseMcpConfig } from "../src/mcp/config.js";
import { McpServers } from "../src/mcp/servers.js";
import { HttpTransport } from "../src/mcp/streamable-http.js";
import { launchBrowser, type TestBrowser } from "./support/browser.js";
import { ADMIN_SCOPE, type OAuthServers, startOAuthServers, TOOLS_SCOPE } from "./support/oauth-servers.js";

let browser: TestBrowser;
let dir: string;
let servers: OAuthServers;
const closers: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  browser = await launchBrowser();
}, 60_000);
afterAll(async () => {
  await browser?.close();
});
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), "pi-mcp-oauth-"));
});
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => {});
  await servers?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Opens `url` in Chromium and presses the consent page's button; resolves with the page the browser ends on. */
async function consent(url: string, button: "#allow" | "#deny" = "#allow"): Promise<string> {
  const { page } = await browser.page();
  try {
    await page.goto(url, { waitUntil: "load" });
    await Promise.all([page.waitForNavigation({ waitUntil: "load" }), page.click(button)]);
    return String(await page.evaluate("document.body.innerText"));
  } finally {
    await page.close();
  }
}

function oauth(options: Partial<McpOAuthOptions<McpTokenStore>> = {}): McpOAuth<McpTokenStore> {
  return new McpOAuth({ serverUrl: servers.mcpUrl, store: new McpTokenStore(path.join(dir, "mcp-auth")), ...options });
}

async function connected(auth: McpOAuth<McpTokenStore>): Promise<McpClient> {
  const client = new McpClient(new HttpTransport({ url: servers.mcpUrl, auth }));
  closers.push(() => client.close());
  await client.connect({ timeoutMs: 10_000 });
  return client;
}

async function callText(client: McpClient, tool: string): Promise<string> {
  const result = await client.callTool(tool, {}, { timeoutMs: 10_000 });
  return (result.content[0] as { text: string }).text;
}

/** The error `promise` rejects with (fails the test when it resolves). */
async function failure(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return errorText(error);
  }
  throw new Error("expected a failure");
}

it("dynamic registration, the code flow with PKCE S256 and the resource indicator, consent in Chromium; then tools/call works; tokens 0600, never in an error", async () => {
  servers = await startOAuthServers();
  const auth = oauth();
  // before a login the server's 401 is said as what to do, not as an HTTP status
  const before = await failure(connected(auth));
  expect(before).toContain(`the MCP server ${servers.mcpUrl} needs authorization: log in first (McpOAuth.login)`);
  let asked: URL | undefined;
  let page = "";
  const result = await auth.login({
    openUrl: async (url) => {
      asked = new URL(url);
      // an answer with another state is not this login's: refused, the login goes on waiting
      const redirect = new URL(asked.searchParams.get("redirect_uri")!);
      const forged = await fetch(`${redirect.href}?code=forged&state=not-the-one`);
      expect(forged.status).toBe(400);
      page = await consent(url);
    },
  });
  expect(page).toContain("Authorization received");
  expect(result).toEqual({ client: "registered", issuer: servers.issuer, scope: TOOLS_SCOPE });
  expect(asked!.origin + asked!.pathname).toBe(`${servers.issuer}authorize`);
  expect(asked!.searchParams.get("code_challenge_method")).toBe("S256");
  expect(asked!.searchParams.get("code_challenge")).toMatch(/^[A-Za-z0-9_-]{43}$/);
  expect(asked!.searchParams.get("state")).toMatch(/^[A-Za-z0-9_-]{22}$/);
  expect(asked!.searchParams.get("resource")).toBe(servers.mcpUrl);
  expect(asked!.searchParams.get("redirect_uri")).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback$/);
  expect(servers.log).toEqual([
    "registered pi-course (none)",
    `authorize scope=${TOOLS_SCOPE} resource=${servers.mcpUrl} pkce=S256`,
    `token authorization_code resource=${servers.mcpUrl}`,
  ]);
  const client = await connected(auth);
  expect(await callText(client, "whoami")).toBe(`hello from the protected server (scopes: ${TOOLS_SCOPE})`);
  // the store: 0600 files in a 0700 folder, the token and the registered client (kept for the next login)
  const store = auth.options.store;
  const file = store.fileOf(servers.mcpUrl);
  const clientFile = store.clientFileOf(servers.mcpUrl);
  expect(readdirSync(store.folder).sort()).toEqual([path.basename(clientFile), path.basename(file)].sort());
  expect(statSync(file).mode & 0o777).toBe(0o600);
  expect(statSync(clientFile).mode & 0o777).toBe(0o600);
  expect(statSync(store.folder).mode & 0o777).toBe(0o700);
  const token = store.read(servers.mcpUrl)!.tokens.access_token;
  expect(readFileSync(file, "utf8")).toContain(token);
  // a token the server no longer knows, and no refresh: the error says to log in and holds no token
  servers.provider.access.clear();
  servers.provider.refresh.clear();
  const refused = await failure(connected(auth).then((client) => callText(client, "whoami")));
  expect(refused).toContain("needs authorization (the kept token was refused and could not be refreshed)");
  expect(refused).not.toContain(token);
  expect(refused).not.toContain(store.read(servers.mcpUrl)!.tokens.refresh_token!);
}, 60_000);

it("a token about to expire is refreshed before it is used, and a refused one is refreshed on its 401 (once), with the resource indicator", async () => {
  servers = await startOAuthServers();
  servers.provider.accessSeconds = 20; // within REFRESH_MARGIN_MS: refreshed before the next request
  const auth = oauth();
  await auth.login({ openUrl: (url) => consent(url).then(() => {}) });
  const first = auth.options.store.read(servers.mcpUrl)!.tokens;
  servers.provider.accessSeconds = 3600;
  const client = await connected(auth);
  expect(await callText(client, "whoami")).toContain("hello");
  const second = auth.options.store.read(servers.mcpUrl)!.tokens;
  expect(second.access_token).not.toBe(first.access_token);
  expect(second.refresh_token).not.toBe(first.refresh_token); // rotated by the server, kept by the client
  expect(servers.log.filter((line) => line.startsWith("token refresh_token"))).toEqual([
    `token refresh_token resource=${servers.mcpUrl}`,
  ]);
  // the server forgets the access token: the call's 401 brings one refresh and the call goes through
  servers.revokeAccessTokens();
  expect(await callText(client, "whoami")).toContain("hello");
  expect(servers.log.filter((line) => line.startsWith("token refresh_token"))).toHaveLength(2);
}, 60_000);

it("403 insufficient_scope: without a person it fails saying which scope and to log in (the next login asks for it); with one it re-authorizes with the wider scope and the call goes through", async () => {
  servers = await startOAuthServers();
  const auth = oauth({ loginHint: 'run "pi-course mcp login web"' });
  await auth.login({ openUrl: (url) => consent(url).then(() => {}) });
  const client = await connected(auth);
  const refused = await failure(client.callTool("admin", {}, { timeoutMs: 10_000 }));
  expect(refused).toContain(
    `needs the scope "${TOOLS_SCOPE} ${ADMIN_SCOPE}", which this login was not given: run "pi-course mcp login web" (the next login asks for it)`,
  );
  expect(auth.options.store.read(servers.mcpUrl)!.wantedScope).toBe(`${TOOLS_SCOPE} ${ADMIN_SCOPE}`);
  const lastAuthorize = () => servers.log.filter((line) => line.startsWith("authorize")).at(-1);
  // the next login (what `pi-course mcp login` runs) asks for it, and the same client's call goes through
  await auth.login({ openUrl: (url) => consent(url).then(() => {}) });
  expect(lastAuthorize()).toBe(`authorize scope=${TOOLS_SCOPE} ${ADMIN_SCOPE} resource=${servers.mcpUrl} pkce=S256`);
  expect(await callText(client, "admin")).toBe("admin work done");
  expect(auth.options.store.read(servers.mcpUrl)!.wantedScope).toBeUndefined();

  // a person is there (openUrl): the first 401 sends them to consent, then the 403 to consent to the
  // wider scope, and each time the request is sent again
  const interactive = oauth({
    openUrl: (url) => consent(url).then(() => {}),
    store: new McpTokenStore(path.join(dir, "interactive")),
  });
  const client2 = await connected(interactive);
  expect(lastAuthorize()).toBe(`authorize scope=${TOOLS_SCOPE} resource=${servers.mcpUrl} pkce=S256`);
  expect(await callText(client2, "admin")).toBe("admin work done");
  expect(lastAuthorize()).toBe(`authorize scope=${TOOLS_SCOPE} ${ADMIN_SCOPE} resource=${servers.mcpUrl} pkce=S256`);
  expect(interactive.options.store.read(servers.mcpUrl)!.tokens.scope).toBe(`${TOOLS_SCOPE} ${ADMIN_SCOPE}`);
}, 60_000);

it("client credentials: a machine with a configured id and secret gets its token on the first 401, no browser; a wrong secret is refused without the secret in the error", async () => {
  servers = await startOAuthServers();
  servers.addClient("machine", "machine-secret-123");
  const auth = oauth({ grant: "client_credentials", clientId: "machine", clientSecret: "machine-secret-123" });
  const client = await connected(auth);
  expect(await callText(client, "whoami")).toBe(`hello from the protected server (scopes: ${TOOLS_SCOPE})`);
  expect(servers.log).toEqual([`token client_credentials resource=${servers.mcpUrl}`]);
  await auth.logout();
  const wrong = oauth({ grant: "client_credentials", clientId: "machine", clientSecret: "not-the-secret-456" });
  const message = await failure(connected(wrong));
  expect(message).toContain("did not give a token (HTTP 400: invalid_client (Invalid client_secret))");
  expect(message).not.toContain("not-the-secret-456");
}, 30_000);

it("a pre-registered client id is used as it is (no registration); a Client ID Metadata Document URL is the client id where the server accepts them", async () => {
  servers = await startOAuthServers();
  servers.addClient("registered-before", "before-secret-321"); // a confidential client
  const pre = oauth({ clientId: "registered-before", clientSecret: "before-secret-321" });
  expect(await pre.login({ openUrl: (url) => consent(url).then(() => {}) })).toMatchObject({ client: "configured" });
  const preClient = await connected(pre);
  expect(await callText(preClient, "whoami")).toContain("hello");
  expect(servers.log.some((line) => line.startsWith("registered"))).toBe(false);
  // its refresh authenticates with the configured secret, which the token file does not hold
  servers.revokeAccessTokens();
  expect(await callText(preClient, "whoami")).toContain("hello");
  expect(servers.log.at(-1)).toBe(`token refresh_token resource=${servers.mcpUrl}`);
  expect(readFileSync(pre.options.store.fileOf(servers.mcpUrl), "utf8")).not.toContain("before-secret-321");
  await servers.close();

  servers = await startOAuthServers({ cimd: true });
  const cimd = new McpOAuth({
    serverUrl: servers.mcpUrl,
    store: new McpTokenStore(path.join(dir, "cimd")),
    clientMetadataUrl: servers.clientMetadataUrl,
  });
  let clientId: string | null = null;
  const result = await cimd.login({
    openUrl: (url) => {
      clientId = new URL(url).searchParams.get("client_id");
      return consent(url).then(() => {});
    },
  });
  expect(result.client).toBe("metadata-document");
  expect(clientId).toBe(servers.clientMetadataUrl);
  expect(servers.log[0]).toBe(`fetched the client metadata document ${servers.clientMetadataUrl}`);
  expect(servers.log.some((line) => line.startsWith("registered"))).toBe(false);
  expect(await callText(await connected(cimd), "whoami")).toContain("hello");
}, 60_000);

it("McpServers: a remote server that needs a login fails saying what to run (in /mcp); once logged in its tools join; no token in /mcp", async () => {
  servers = await startOAuthServers();
  const [config] = parseMcpConfig(JSON.stringify({ mcpServers: { web: { url: servers.mcpUrl } } }), "t", {});
  const store = new McpTokenStore(path.join(dir, "mcp-auth"));
  const shared = { store, loginHint: (name: string) => `run "pi-course mcp login ${name}"` };
  const before = McpServers.start([config!], { auth: (c) => oauthForServer(c, shared) });
  await before.ready();
  expect(before.describe()).toContain("web: failed:");
  expect(before.describe()).toContain('needs authorization: run "pi-course mcp login web"');
  await before.close();
  await oauthForServer(config!, shared)!.login({ openUrl: (url) => consent(url).then(() => {}) });
  const after = McpServers.start([config!], { auth: (c) => oauthForServer(c, shared) });
  closers.push(() => after.close());
  await after.ready();
  expect(after.describe()).toBe("web: ready with 2 tools");
  const tool = after.tools.find((t) => t.name === "mcp__web__whoami")!;
  const result = await tool.execute("c1", {}, new AbortController().signal);
  expect(JSON.stringify(result)).toContain("hello from the protected server");
  expect(after.describe()).not.toContain(store.read(servers.mcpUrl)!.tokens.access_token);
  // an entry with its own Authorization header, or "oauth": false, gets no OAuth
  const [own] = parseMcpConfig(
    JSON.stringify({ mcpServers: { a: { url: servers.mcpUrl, headers: { Authorization: "Bearer x" } } } }),
    "t",
    {},
  );
  const [off] = parseMcpConfig(JSON.stringify({ mcpServers: { b: { url: servers.mcpUrl, oauth: false } } }), "t", {});
  expect(oauthForServer(own!, shared)).toBeUndefined();
  expect(oauthForServer(off!, shared)).toBeUndefined();
}, 60_000);

it("a login the person denies, or never completes, fails saying so; nothing is kept and the loopback port is closed", async () => {
  servers = await startOAuthServers();
  const auth = oauth();
  let redirect = "";
  const denied = await failure(
    auth.login({
      openUrl: async (url) => {
        redirect = new URL(url).searchParams.get("redirect_uri")!;
        expect(await consent(url, "#deny")).toContain("Authorization was not given");
      },
    }),
  );
  expect(denied).toBe("the authorization server answered access_denied");
  expect(auth.loggedIn).toBe(false);
  await expect(fetch(redirect)).rejects.toThrow(); // nothing listens there any more
  const late = await failure(auth.login({ openUrl: () => {}, timeoutMs: 300 }));
  expect(late).toBe("no answer from the browser within 300 ms; try the login again");
  expect(auth.loggedIn).toBe(false);
}, 30_000);

it("WWW-Authenticate: the Bearer challenge's parameters, quoted or not, among other schemes", () => {
  expect(
    parseBearerChallenge(
      'Basic realm="x", Bearer error="insufficient_scope", scope="a b", resource_metadata="https://s/.well-known/oauth-protected-resource/mcp", error_description="needs \\"b\\""',
    ),
  ).toEqual({
    error: "insufficient_scope",
    scope: ["a", "b"],
    resourceMetadata: "https://s/.well-known/oauth-protected-resource/mcp",
    errorDescription: 'needs "b"',
  });
  expect(parseBearerChallenge("Bearer error=invalid_token")).toEqual({ error: "invalid_token" });
  expect(parseBearerChallenge(null)).toEqual({});
});

it("authorization server metadata of an issuer with a path: RFC 8414 inserted, OpenID inserted, then OpenID appended, in that order", async () => {
  const asked: string[] = [];
  const http = createServer((request, response) => {
    asked.push(request.url!);
    if (request.url === "/tenant/.well-known/openid-configuration") {
      response.setHeader("content-type", "application/json");
      response.end(JSON.stringify({ issuer: `${origin}/tenant`, token_endpoint: `${origin}/tenant/token` }));
    } else response.writeHead(404).end();
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const origin = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  try {
    const metadata = await authorizationServerMetadata(`${origin}/tenant`);
    expect(metadata.token_endpoint).toBe(`${origin}/tenant/token`);
    expect(asked).toEqual([
      "/.well-known/oauth-authorization-server/tenant",
      "/.well-known/openid-configuration/tenant",
      "/tenant/.well-known/openid-configuration",
    ]);
  } finally {
    http.closeAllConnections();
    await new Promise((resolve) => http.close(resolve));
  }
});

it('an entry\'s "oauth" is checked as it is read: each wrong field is named', () => {
  const problem = (oauth: unknown) =>
    parseMcpConfig(JSON.stringify({ mcpServers: { web: { url: "https://example.com/mcp", oauth } } }), "t", {})[0]!
      .problem;
  expect(problem({ clientId: "a", scopes: ["x"], redirectPort: 8765 })).toBeUndefined();
  expect(problem({ clientMetadataUrl: "http://example.com/client.json" })).toBe(
    'server "web" in t: "oauth.clientMetadataUrl" must be an https URL (authorization servers fetch it)',
  );
  expect(problem({ grant: "client_credentials", clientId: "a" })).toBe(
    'server "web" in t: "oauth.grant": "client_credentials" needs "clientId" and "clientSecret" (or "privateKeyFile")',
  );
  expect(problem({ scopes: "a b" })).toBe(
    'server "web" in t: "oauth.scopes" must be a list of scope names (no spaces)',
  );
  expect(problem({ clientID: "a" })).toBe(
    'server "web" in t: "oauth.clientID" is not a field of "oauth" (clientId, clientSecret, clientMetadataUrl, scopes, grant, redirectPort, privateKey, privateKeyFile, keyId, signingAlgorithm, tokenEndpointAuthMethod, identityProvider, protocolVersion, issuer)',
  );
  const stdio = parseMcpConfig(JSON.stringify({ mcpServers: { s: { command: "x", oauth: {} } } }), "t", {})[0]!;
  expect(stdio.problem).toBe('server "s" in t: "oauth" goes with "url" (a stdio server takes its keys in "env")');
});
