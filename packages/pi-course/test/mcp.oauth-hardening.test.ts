/**
 * The MCP OAuth client against servers that misbehave (review findings): endpoints that are not
 * https, a token endpoint that never answers, an auth that always says "try again", a 403 with
 * no body, a refresh that must keep the scope a 403 asked for, concurrent 401s under the client
 * credentials grant, a token file that cannot be renamed into place. One small MCP server and
 * authorization server on 127.0.0.1 (node:http) whose answers each test sets.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { errorText } from "../src/base/errors.js";
import { MAX_TIMER_MS } from "../src/base/timer.js";
import type { HttpAuth } from "../src/mcp/auth/http-auth.js";
import { McpOAuth, type McpOAuthOptions } from "../src/mcp/auth/oauth.js";
import { McpTokenStore, type StoredAuthorization } from "../src/mcp/auth/token-store.js";
import type { JsonRpcMessage } from "../src/mcp/json-rpc.js";
import { HttpTransport } from "../src/mcp/streamable-http.js";

type Handler = (request: IncomingMessage, response: ServerResponse, body: string) => void;

let dir: string;
let server: Server;
let base: string;
/** Requests seen, as "METHOD /path authorization". */
let seen: string[];
/** Overrides of the default routes, by "METHOD /path". */
let routes: Map<string, Handler>;
/** Authorization server metadata fields that replace the defaults. */
let metadata: Record<string, unknown>;
let tokenCount: number;

const INITIALIZE: JsonRpcMessage = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } },
};

function json(response: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}): void {
  response.writeHead(status, { "content-type": "application/json", ...headers });
  response.end(JSON.stringify(value));
}

beforeEach(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "pi-mcp-oauth-hard-"));
  seen = [];
  routes = new Map();
  metadata = {};
  tokenCount = 0;
  server = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk) => (body += chunk));
    request.on("end", () => {
      const key = `${request.method} ${request.url?.split("?")[0]}`;
      seen.push(`${key} ${request.headers.authorization ?? "-"}`);
      const route = routes.get(key);
      if (route !== undefined) return route(request, response, body);
      if (key === "GET /.well-known/oauth-protected-resource/mcp")
        return json(response, 200, { resource: `${base}/mcp`, authorization_servers: [base] });
      if (key === "GET /.well-known/oauth-authorization-server")
        return json(response, 200, {
          issuer: base,
          token_endpoint: `${base}/token`,
          code_challenge_methods_supported: ["S256"],
          ...metadata,
        });
      if (key === "POST /token") {
        tokenCount++;
        return json(response, 200, { access_token: `t${tokenCount}`, token_type: "Bearer", expires_in: 3600 });
      }
      if (key === "POST /mcp") {
        if (request.headers.authorization === undefined)
          return json(
            response,
            401,
            {},
            {
              "www-authenticate": `Bearer resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`,
            },
          );
        const message = JSON.parse(body) as { id?: number };
        if (message.id === undefined) return response.writeHead(202).end();
        return json(
          response,
          200,
          {
            jsonrpc: "2.0",
            id: message.id,
            result: { protocolVersion: "2025-11-25", capabilities: {}, serverInfo: { name: "s", version: "1" } },
          },
          { "mcp-session-id": "session-1" },
        );
      }
      if (key === "DELETE /mcp") return response.writeHead(200).end();
      json(response, 404, {});
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterEach(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

function store(): McpTokenStore {
  return new McpTokenStore(path.join(dir, "mcp-auth"));
}

function machine(options: Partial<McpOAuthOptions> = {}): McpOAuth {
  return new McpOAuth({
    serverUrl: `${base}/mcp`,
    store: store(),
    grant: "client_credentials",
    clientId: "machine",
    clientSecret: "machine-secret",
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

function transport(auth: HttpAuth, fetcher?: typeof fetch): HttpTransport {
  const t = new HttpTransport({ url: `${base}/mcp`, auth, ...(fetcher !== undefined && { fetch: fetcher }) });
  void t.start({ onMessage: () => {}, onClose: () => {} });
  return t;
}

it("an issuer, endpoint or resource metadata URL that is not https (nor http on loopback) is refused, naming its origin only", async () => {
  metadata = { token_endpoint: "http://as.example.com/token?secret=x" };
  let error = await failure(machine().login());
  expect(error).toMatchObject({ name: "McpAuthError", failure: "discovery" });
  expect(errorText(error)).toContain("token_endpoint");
  expect(errorText(error)).toContain("http://as.example.com is not https");
  expect(errorText(error)).not.toContain("secret=x");

  metadata = {};
  routes.set("GET /.well-known/oauth-protected-resource/mcp", (_q, response) =>
    json(response, 200, { resource: `${base}/mcp`, authorization_servers: ["http://issuer.example"] }),
  );
  error = await failure(machine().login());
  expect(errorText(error)).toContain("issuer) http://issuer.example is not https");

  routes.set("POST /mcp", (_q, response) =>
    json(response, 401, {}, { "www-authenticate": 'Bearer resource_metadata="ftp://elsewhere.example/prm"' }),
  );
  error = await failure(machine().login());
  expect(errorText(error)).toContain("protected resource metadata URL ftp://elsewhere.example is not https");
  expect(seen.filter((line) => line.startsWith("POST /token"))).toEqual([]); // no secret went anywhere
});

it("a token endpoint that never answers fails the request within the request timeout, saying so", async () => {
  routes.set("POST /token", () => {}); // never answers
  const started = Date.now();
  const error = await failure(machine({ requestTimeoutMs: 1_000 }).login());
  expect(Date.now() - started).toBeLessThan(5_000);
  expect(errorText(error)).toMatch(/the token endpoint .*\/token did not answer within 1000 ms \(headers and body\)/);
});

it("close() does not wait for a refresh in progress: it DELETEs the session with the last Authorization sent", async () => {
  const auth = machine({ requestTimeoutMs: 20_000 });
  await auth.login();
  const t = transport(auth);
  await t.send(INITIALIZE);
  // the token is now about to expire and the token endpoint hangs: the next request's refresh hangs
  const kept = store().read(`${base}/mcp`)!;
  store().write({ ...kept, tokens: { ...kept.tokens, expires_at: Date.now(), refresh_token: "r1" } });
  let refreshing!: () => void;
  const asked = new Promise<void>((resolve) => (refreshing = resolve));
  routes.set("POST /token", () => refreshing());
  const pending = t.send({ jsonrpc: "2.0", method: "notifications/initialized" });
  pending.catch(() => {});
  await asked;
  const started = Date.now();
  await t.close();
  // waiting on the hung refresh would take its whole timeout (30 s)
  expect(Date.now() - started).toBeLessThan(5_000);
  expect(seen).toContain("DELETE /mcp Bearer t1");
});

it("the 401 and 403 retries are bounded by the transport itself: one each, even with an auth that always says to try again", async () => {
  let unauthorized = 0;
  const always: HttpAuth = {
    authorization: async () => "Bearer nope",
    unauthorized: async () => {
      unauthorized++;
    },
    forbidden: async () => true,
  };
  let posts = 0;
  routes.set("POST /mcp", (_q, response) => {
    posts++;
    // answers at last, so that an unbounded loop ends and the test fails instead of hanging
    if (posts > 10) return json(response, 200, { jsonrpc: "2.0", id: 1, result: {} });
    json(response, 401, { error: { message: "no entry" } }, { "www-authenticate": "Bearer" });
  });
  expect(errorText(await failure(transport(always).send(INITIALIZE)))).toContain("HTTP 401: no entry");
  expect(posts).toBe(2);
  expect(unauthorized).toBe(2); // the second time with retried: true, which this auth shrugs off

  posts = 0;
  routes.set("POST /mcp", (_q, response) => {
    posts++;
    if (posts > 10) return json(response, 200, { jsonrpc: "2.0", id: 1, result: {} });
    // a 403, then a 401, then a 403 again: each status is retried once
    if (posts === 2) return json(response, 401, {}, { "www-authenticate": "Bearer" });
    json(response, 403, {}, { "www-authenticate": 'Bearer error="insufficient_scope", scope="a"' });
  });
  unauthorized = 0;
  expect(errorText(await failure(transport(always).send(INITIALIZE)))).toContain("HTTP 403");
  expect(posts).toBe(3);
});

it("a 403 with no body: the error forbidden() throws is the request's error, not swallowed", async () => {
  const auth: HttpAuth = {
    authorization: async () => "Bearer t",
    unauthorized: async () => {},
    forbidden: async () => {
      throw new Error('log in again for the scope "admin"');
    },
  };
  const noBody: typeof fetch = async () =>
    new Response(null, { status: 403, headers: { "www-authenticate": 'Bearer error="insufficient_scope"' } });
  expect(errorText(await failure(transport(auth, noBody).send(INITIALIZE)))).toBe('log in again for the scope "admin"');
});

it("a refresh keeps the scope a 403 asked for; concurrent 401s under client credentials share one token request", async () => {
  const serverUrl = `${base}/mcp`;
  const stored: StoredAuthorization = {
    serverUrl,
    resource: serverUrl,
    authorizationServer: { issuer: base, token_endpoint: `${base}/token` },
    client: { clientId: "c", via: "registered" },
    tokens: { access_token: "old", token_type: "Bearer", refresh_token: "r", expires_at: Date.now(), scope: "a" },
    wantedScope: "a admin",
  };
  store().write(stored);
  const auth = new McpOAuth({ serverUrl, store: store() });
  expect(await auth.authorization()).toBe("Bearer t1");
  expect(store().read(serverUrl)).toMatchObject({ tokens: { access_token: "t1" }, wantedScope: "a admin" });

  store().remove(serverUrl);
  tokenCount = 0;
  const m = machine();
  await Promise.all([
    m.unauthorized("Bearer", false),
    m.unauthorized("Bearer", false),
    m.unauthorized("Bearer", false),
  ]);
  expect(tokenCount).toBe(1);
  expect(await m.authorization()).toBe("Bearer t1");
});

it("a token file that cannot be renamed into place leaves no temporary file behind", () => {
  const s = store();
  const serverUrl = `${base}/mcp`;
  mkdirSync(s.fileOf(serverUrl), { recursive: true }); // a folder where the file goes: the rename fails
  writeFileSync(path.join(s.fileOf(serverUrl), "x"), "");
  expect(() =>
    s.write({
      serverUrl,
      resource: serverUrl,
      authorizationServer: { issuer: base, token_endpoint: `${base}/token` },
      client: { clientId: "c", via: "registered" },
      tokens: { access_token: "secret-token", token_type: "Bearer" },
    }),
  ).toThrow();
  expect(readdirSync(s.folder).filter((name) => name.endsWith(".tmp"))).toEqual([]);
});

it("attack: a login's timeoutMs or loginTimeoutMs past a timer's reach, under 1 ms or no number is refused before any request (no timer that fires at once); the longest a timer holds waits", async () => {
  const serverUrl = `${base}/mcp`;
  const tooLong = 99_999_999_999_000; // `mcp login --timeout 99999999999`, in ms: a Node timer would fire after 1 ms
  const most =
    "must be at most 2147483647 milliseconds (about 24.8 days, the longest a timer holds), got 99999999999000";
  expect(() => new McpOAuth({ serverUrl, store: store(), loginTimeoutMs: tooLong })).toThrow(
    new RangeError(`loginTimeoutMs ${most}`),
  );
  const opened: string[] = [];
  const auth = new McpOAuth({ serverUrl, store: store(), openUrl: (url) => void opened.push(url) });
  const refused = await failure(auth.login({ timeoutMs: tooLong }));
  expect(refused).toEqual(new RangeError(`the login's timeoutMs ${most}`));
  // no time at all (0, or less than a timer's 1 ms): the login would open the browser and fail at once
  const least = "must be at least 1 millisecond (a wait of less ends before anyone can answer), got";
  for (const none of [0, 0.5]) {
    expect(() => new McpOAuth({ serverUrl, store: store(), loginTimeoutMs: none })).toThrow(
      new RangeError(`loginTimeoutMs ${least} ${none}`),
    );
    expect(await failure(auth.login({ timeoutMs: none }))).toEqual(
      new RangeError(`the login's timeoutMs ${least} ${none}`),
    );
  }
  for (const wrong of [Number.NaN, -1, Number.POSITIVE_INFINITY])
    expect(await failure(auth.login({ timeoutMs: wrong }))).toEqual(
      new RangeError(`the login's timeoutMs must be a finite number of milliseconds ≥ 0, got ${wrong}`),
    );
  expect([seen, opened]).toEqual([[], []]);

  // the longest a timer holds: the login waits for the browser until it is cancelled
  metadata = { authorization_endpoint: `${base}/authorize`, registration_endpoint: `${base}/register` };
  routes.set("POST /register", (_request, response) =>
    json(response, 201, { client_id: "registered", token_endpoint_auth_method: "none" }),
  );
  const controller = new AbortController();
  const waiting = failure(auth.login({ timeoutMs: MAX_TIMER_MS, signal: controller.signal }));
  for (let i = 0; i < 1000 && opened.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  expect(opened).toHaveLength(1);
  await new Promise((resolve) => setTimeout(resolve, 100));
  controller.abort();
  expect(errorText(await waiting)).toBe("the login was cancelled");
}, 30_000);
