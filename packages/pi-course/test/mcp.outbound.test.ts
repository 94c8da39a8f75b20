/**
 * The one outbound policy (`models/http/outbound.ts`) and the authorization seams of issue 54,
 * against real servers on 127.0.0.1 (node:http) whose answers each test sets:
 *
 * - the attacks: a token endpoint that redirects the code, the verifier and the secret (or the
 *   refresh token) to another host; metadata redirects that leave the scheme rule; answers of
 *   gigabytes (metadata, token, a refresh during a run); a bearer token sent over plain http to
 *   an MCP server off the loopback;
 * - each caller of the policy: the OAuth client, the MCP transport, the server-models check;
 * - the seams: the typed `McpAuthError` reaching `McpClient` callers, `MemoryTokenStore`, the
 *   registered client kept and reused (registered again only when refused), the authentication
 *   method registration returned, the app's own redirect URI with `completeLogin`.
 *
 * "Another host" is `localhost` at another port (another origin, the same machine): nothing is
 * ever sent off this machine; a fetch given to the client refuses any other host outright and
 * records that it was asked.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, beforeEach, expect, it } from "vitest";
import { serverModelIds } from "../src/cli/server-models.js";
import { errorText } from "../src/base/errors.js";
import { McpAuthError } from "../src/mcp/auth/auth-error.js";
import { McpOAuth, type McpOAuthOptions } from "../src/mcp/auth/oauth.js";
import { MemoryTokenStore } from "../src/mcp/auth/token-store.js";
import { McpClient } from "../src/mcp/client.js";
import { HttpTransport } from "../src/mcp/streamable-http.js";
import { OutboundError } from "../src/models/http/outbound.js";
import { consentingBrowser } from "./support/consenting-browser.js";

type Handler = (request: IncomingMessage, response: ServerResponse, body: string) => void;

interface Host {
  server: Server;
  base: string;
  /** "METHOD /path body" of each request (the body as sent: a leak shows here). */
  seen: string[];
  routes: Map<string, Handler>;
}

let home: Host;
let elsewhere: Host;
/** URLs a test's fetch was asked for off the loopback (refused, never sent). */
let offLoopback: string[];
let tokenCount: number;
let registrations: number;
/** What registration answers (besides client_id). */
let registrationAnswer: Record<string, unknown>;

function json(response: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}): void {
  response.writeHead(status, { "content-type": "application/json", ...headers });
  response.end(JSON.stringify(value));
}

async function host(
  defaults: (host: Host, key: string, request: IncomingMessage, response: ServerResponse, body: string) => void,
  name = "127.0.0.1",
): Promise<Host> {
  const h = { seen: [], routes: new Map() } as unknown as Host;
  h.server = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk) => (body += chunk));
    request.on("end", () => {
      const key = `${request.method} ${request.url?.split("?")[0]}`;
      h.seen.push(`${key} ${request.headers.authorization ?? "-"} ${body}`);
      const route = h.routes.get(key);
      if (route !== undefined) return route(request, response, body);
      defaults(h, key, request, response, body);
    });
  });
  await new Promise<void>((resolve) => h.server.listen(0, "127.0.0.1", resolve));
  h.base = `http://${name}:${(h.server.address() as AddressInfo).port}`;
  return h;
}

/** The MCP server and its authorization server, on one origin. */
function homeRoutes(h: Host, key: string, request: IncomingMessage, response: ServerResponse, body: string): void {
  const base = h.base;
  if (key === "GET /.well-known/oauth-protected-resource/mcp")
    return json(response, 200, { resource: `${base}/mcp`, authorization_servers: [base] });
  if (key === "GET /.well-known/oauth-authorization-server")
    return json(response, 200, {
      issuer: base,
      authorization_endpoint: `${base}/authorize`,
      token_endpoint: `${base}/token`,
      registration_endpoint: `${base}/register`,
      code_challenge_methods_supported: ["S256"],
      token_endpoint_auth_methods_supported: ["client_secret_basic", "none"],
    });
  if (key === "POST /register") {
    registrations++;
    return json(response, 201, { client_id: `client-${registrations}`, ...registrationAnswer });
  }
  if (key === "GET /authorize") {
    const query = new URL(request.url!, base).searchParams;
    const back = new URL(query.get("redirect_uri")!);
    back.searchParams.set("code", "the-code");
    back.searchParams.set("state", query.get("state")!);
    response.writeHead(302, { location: back.href }).end();
    return;
  }
  if (key === "POST /token") {
    tokenCount++;
    return json(response, 200, {
      access_token: `t${tokenCount}`,
      token_type: "Bearer",
      expires_in: 3600,
      refresh_token: `r${tokenCount}`,
    });
  }
  if (key === "POST /mcp") {
    if (!(request.headers.authorization ?? "").startsWith("Bearer t"))
      return json(
        response,
        401,
        {},
        { "www-authenticate": `Bearer resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"` },
      );
    const message = JSON.parse(body) as { id?: number; method: string };
    if (message.id === undefined) return void response.writeHead(202).end();
    const result =
      message.method === "initialize"
        ? { protocolVersion: "2025-11-25", capabilities: { tools: {} }, serverInfo: { name: "s", version: "1" } }
        : { tools: [] };
    return json(response, 200, { jsonrpc: "2.0", id: message.id, result });
  }
  if (key === "DELETE /mcp") return void response.writeHead(200).end();
  json(response, 404, {});
}

beforeEach(async () => {
  offLoopback = [];
  tokenCount = 0;
  registrations = 0;
  registrationAnswer = {};
  home = await host(homeRoutes);
  elsewhere = await host(
    (_h, _key, _request, response) => json(response, 200, { access_token: "stolen", token_type: "Bearer" }),
    "localhost",
  );
});

afterEach(async () => {
  for (const h of [home, elsewhere]) {
    h.server.closeAllConnections();
    await new Promise((resolve) => h.server.close(resolve));
  }
});

/** A fetch that sends only to this machine: any other host is recorded and refused. */
const loopbackOnly: typeof fetch = (input, init) => {
  const url = new URL(input instanceof Request ? input.url : String(input));
  if (!["127.0.0.1", "localhost"].includes(url.hostname)) {
    offLoopback.push(url.href);
    return Promise.reject(new TypeError("fetch failed (the test sends nothing off this machine)"));
  }
  return fetch(input, init);
};

function oauth(options: Partial<McpOAuthOptions<MemoryTokenStore>> = {}): McpOAuth<MemoryTokenStore> {
  return new McpOAuth({
    serverUrl: `${home.base}/mcp`,
    store: new MemoryTokenStore(),
    openUrl: consentingBrowser,
    fetch: loopbackOnly,
    ...options,
  });
}

async function failure(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected a failure");
}

/** A body that never ends: `chunk` over and over; counts the bytes the server got to write. */
function endless(chunk: string, sent: { bytes: number }): Handler {
  return (_request, response) => {
    response.writeHead(200, { "content-type": "application/json" });
    const data = Buffer.from(chunk.repeat(Math.ceil(65_536 / chunk.length)));
    const pump = () => {
      while (!response.destroyed && sent.bytes < 2 * 1024 ** 3) {
        sent.bytes += data.length;
        if (!response.write(data)) return void response.once("drain", pump);
      }
    };
    response.on("close", () => {});
    pump();
  };
}

it("attack: a token endpoint's 307 to another host is not followed: the code, the verifier and the secret stay home, and no token from there is kept", async () => {
  home.routes.set("POST /token", (_q, response) => {
    response.writeHead(307, { location: `${elsewhere.base}/token` }).end();
  });
  const auth = oauth({ clientId: "pre", clientSecret: "the-secret" });
  const error = await failure(auth.login());
  expect(error).toBeInstanceOf(McpAuthError);
  expect(errorText(error)).toContain(`a redirect to ${elsewhere.base}/token; its answers are final`);
  expect(elsewhere.seen).toEqual([]); // nothing, the code and verifier least of all, reached the other host
  expect(await auth.isLoggedIn()).toBe(false);
  expect(home.seen.filter((line) => line.startsWith("POST /token"))).toHaveLength(1);
});

it("attack: a refresh answered with a 307 to another host does not send the refresh token there", async () => {
  const auth = oauth({ clientId: "pre", clientSecret: "the-secret" });
  await auth.login();
  const kept = auth.options.store.read(`${home.base}/mcp`)!;
  auth.options.store.write({ ...kept, tokens: { ...kept.tokens, expires_at: Date.now() } });
  home.routes.set("POST /token", (_q, response) => {
    response.writeHead(307, { location: `${elsewhere.base}/token` }).end();
  });
  // the expiring token is refreshed before use; the refresh is refused, the old token goes as it is
  expect(await auth.authorization()).toBe("Bearer t1");
  expect(elsewhere.seen).toEqual([]);
  expect(home.seen.some((line) => line.startsWith("POST /token") && line.includes("refresh_token=r1"))).toBe(true);
});

it("attack: a metadata redirect must keep the scheme rule on every hop: a hop to plain http off the loopback is refused before it is asked", async () => {
  home.routes.set("GET /.well-known/oauth-authorization-server", (_q, response) => {
    response.writeHead(302, { location: "http://as.example.net/.well-known/oauth-authorization-server" }).end();
  });
  const error = await failure(oauth().login());
  expect(error).toMatchObject({ name: "McpAuthError", failure: "discovery" });
  expect(errorText(error)).toContain(
    "a redirect to http://as.example.net/.well-known/oauth-authorization-server, which is not https",
  );
  expect(offLoopback).toEqual([]);
});

it("metadata follows at most a few same-origin hops, never another origin", async () => {
  home.routes.set("GET /.well-known/oauth-protected-resource/mcp", (_q, response) => {
    response.writeHead(302, { location: "/prm-moved" }).end();
  });
  home.routes.set("GET /prm-moved", (_q, response) =>
    json(response, 200, { resource: `${home.base}/mcp`, authorization_servers: [home.base] }),
  );
  await oauth().login(); // one same-origin hop is fine
  home.routes.set("GET /prm-moved", (_q, response) => {
    response.writeHead(302, { location: `${elsewhere.base}/prm` }).end();
  });
  const error = await failure(oauth().login());
  expect(errorText(error)).toContain(`a redirect to ${elsewhere.base}/prm, another origin; not followed`);
  expect(elsewhere.seen).toEqual([]);
});

it("attack: a metadata answer of gigabytes stops at the cap: the login fails saying so, and memory does not follow", async () => {
  const sent = { bytes: 0 };
  home.routes.set("GET /.well-known/oauth-authorization-server", endless('{"issuer":"', sent));
  const before = process.memoryUsage().rss;
  const error = await failure(oauth().login());
  expect(errorText(error)).toContain("passed maxResponseBytes (1048576 bytes");
  expect(process.memoryUsage().rss - before).toBeLessThan(200 * 1024 * 1024);
  expect(sent.bytes).toBeLessThan(64 * 1024 * 1024); // the connection was closed long before the end
});

it("attack: a token answer of gigabytes stops at the cap, at login and at a refresh during a run", async () => {
  const sent = { bytes: 0 };
  home.routes.set("POST /token", endless(" ", sent));
  const auth = oauth({ clientId: "pre", clientSecret: "the-secret" });
  const error = await failure(auth.login());
  expect(error).toMatchObject({ name: "McpAuthError", failure: "refused" });
  expect(errorText(error)).toContain("passed maxResponseBytes (1048576 bytes");
  // a refresh during a run: the kept token is about to expire, the refresh answer never ends
  home.routes.delete("POST /token");
  await auth.login();
  const kept = auth.options.store.read(`${home.base}/mcp`)!;
  auth.options.store.write({ ...kept, tokens: { ...kept.tokens, expires_at: Date.now() } });
  home.routes.set("POST /token", endless(" ", sent));
  sent.bytes = 0;
  expect(await auth.authorization()).toBe(`Bearer ${kept.tokens.access_token}`); // the failed refresh left the old one
  expect(sent.bytes).toBeLessThan(64 * 1024 * 1024);
});

it("attack: a bearer token is never sent over plain http to an MCP server off the loopback (the OAuth token or a configured header)", async () => {
  const auth = oauth({ clientId: "pre", clientSecret: "the-secret" });
  await auth.login();
  // the server's name is not a loopback one; a fetch that would take it to 127.0.0.1 anyway
  const port = new URL(home.base).port;
  const reaching: typeof fetch = (input, init) => {
    const url = new URL(String(input));
    if (url.hostname === "mcp.example.net") url.hostname = "127.0.0.1";
    return fetch(url, init);
  };
  const before = home.seen.length;
  const url = `http://mcp.example.net:${port}/mcp`;
  const client = new McpClient(new HttpTransport({ url, auth, fetch: reaching }));
  const error = await failure(client.connect());
  expect(error).toBeInstanceOf(OutboundError);
  expect(errorText(error)).toContain(`the MCP server ${url} is not https (http only on 127.0.0.1, ::1 or localhost)`);
  const keyed = new McpClient(
    new HttpTransport({ url, headers: { Authorization: "Bearer configured-key" }, fetch: reaching }),
  );
  expect(await failure(keyed.connect())).toBeInstanceOf(OutboundError);
  expect(home.seen.slice(before)).toEqual([]); // neither request left
});

it("the MCP transport goes through the policy: its answers are capped, its redirects same-origin only", async () => {
  const sent = { bytes: 0 };
  const auth = oauth({ clientId: "pre", clientSecret: "the-secret" });
  await auth.login();
  home.routes.set("POST /mcp", endless(" ", sent));
  const transport = new HttpTransport({ url: `${home.base}/mcp`, auth, maxResponseBytes: 4096 });
  const client = new McpClient(transport);
  expect(errorText(await failure(client.connect()))).toMatch(/maxResponseBytes \(4096 bytes/);
  expect(sent.bytes).toBeLessThan(64 * 1024 * 1024);
});

it("the server-models check goes through the policy: the key never follows a redirect to another origin, and a list of gigabytes is not read", async () => {
  const models = (baseUrl: string) =>
    serverModelIds({ server: { provider: "openai", baseUrl, apiKey: "sk-key" } } as Parameters<
      typeof serverModelIds
    >[0]);
  home.routes.set("GET /v1/models", (_q, response) => {
    response.writeHead(307, { location: `${elsewhere.base}/v1/models` }).end();
  });
  expect(await models(`${home.base}/v1`)).toBeUndefined();
  expect(elsewhere.seen).toEqual([]);
  const sent = { bytes: 0 };
  home.routes.set("GET /v1/models", endless('{"data":[', sent));
  expect(await models(`${home.base}/v1`)).toBeUndefined();
  expect(sent.bytes).toBeLessThan(64 * 1024 * 1024);
  home.routes.set("GET /v1/models", (_q, response) => json(response, 200, { data: [{ id: "m1" }] }));
  expect(await models(`${home.base}/v1`)).toEqual(["m1"]);
});

it("an authorization failure reaches McpClient callers typed: failure, server and what to do", async () => {
  const auth = oauth({ openUrl: undefined, loginHint: 'run "pi-course mcp login web"' });
  const client = new McpClient(new HttpTransport({ url: `${home.base}/mcp`, auth }));
  const error = await failure(client.connect());
  expect(error).toBeInstanceOf(McpAuthError);
  expect(error).toMatchObject({
    failure: "login-required",
    serverUrl: `${home.base}/mcp`,
    action: 'run "pi-course mcp login web"',
  });
});

it("a registered client is kept per server and used again (step-up included); a public registration never gets HTTP Basic; refused, it is registered again", async () => {
  registrationAnswer = { client_secret: "handed-out-anyway", token_endpoint_auth_method: "none" };
  const store = new MemoryTokenStore();
  const first = oauth({ store });
  await first.login();
  await first.login({ scopes: ["more"] }); // a step-up, on another loopback port
  await oauth({ store }).login(); // another instance, the same store
  expect(registrations).toBe(1);
  const tokenRequests = home.seen.filter((line) => line.startsWith("POST /token"));
  expect(tokenRequests).toHaveLength(3);
  for (const line of tokenRequests) {
    expect(line).toContain(" - "); // no Authorization header
    expect(line).not.toContain("handed-out-anyway");
    expect(line).toContain("client_id=client-1");
  }
  // the authorization server forgets the client: the login registers again, once
  let refusals = 0;
  home.routes.set("POST /token", (request, response, body) => {
    if (body.includes("client_id=client-1")) {
      refusals++;
      return json(response, 401, { error: "invalid_client" });
    }
    home.routes.delete("POST /token");
    homeRoutes(home, "POST /token", request, response, body);
  });
  await oauth({ store }).login();
  expect(refusals).toBe(1);
  expect(registrations).toBe(2);
  expect(store.readClient(`${home.base}/mcp`)?.client.clientId).toBe("client-2");
});

it("a confidential registration authenticates as registration said (client_secret_basic)", async () => {
  registrationAnswer = { client_secret: "registered-secret", token_endpoint_auth_method: "client_secret_basic" };
  await oauth().login();
  const line = home.seen.find((l) => l.startsWith("POST /token"))!;
  expect(line).toContain(`Basic ${Buffer.from("client-1:registered-secret").toString("base64")}`);
});

it("an app's own redirect URI: beginLogin gives the URL, completeLogin(callbackUrl) finishes; login() waits for it", async () => {
  const redirectUri = "https://app.example/oauth/callback";
  const auth = oauth({ redirectUri, openUrl: undefined });
  const { url } = await auth.beginLogin();
  expect(new URL(url).searchParams.get("redirect_uri")).toBe(redirectUri);
  const back = await fetch(url, { redirect: "manual" });
  const callback = back.headers.get("location")!;
  expect(callback.startsWith(`${redirectUri}?`)).toBe(true);
  expect(await auth.completeLogin(callback)).toMatchObject({ client: "registered", issuer: home.base });
  expect(await auth.isLoggedIn()).toBe(true);
  // login() with the app's redirect resolves when the app completes it
  let handed: string | undefined;
  const waiting = auth.login({
    openUrl: async (to) => {
      handed = (await fetch(to, { redirect: "manual" })).headers.get("location")!;
    },
  });
  await new Promise((resolve) => setTimeout(resolve, 50));
  while (handed === undefined) await new Promise((resolve) => setTimeout(resolve, 10));
  await auth.completeLogin(handed);
  expect(await waiting).toMatchObject({ issuer: home.base });
  // a callback of no login in progress is refused, saying so
  const error = await failure(auth.completeLogin(`${redirectUri}?code=x&state=forged`));
  expect(error).toMatchObject({ failure: "login-failed" });
  expect(errorText(error)).toContain("belongs to no login in progress");
});
