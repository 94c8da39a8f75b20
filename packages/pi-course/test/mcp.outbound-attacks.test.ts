/**
 * An attacker's pass over the one outbound policy and the authorization store of issue 54, with
 * real servers on 127.0.0.1 (node:http): a gzip bomb and a slow drip against the caps, host
 * spellings against the loopback rule, an authorization server that echoes the client secret in
 * its error, and a token file replaced by a FIFO. Each test holds what a hostile peer must not
 * get: memory, time, a credential in the clear, a secret in an error, a hung store.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { gzipSync } from "node:zlib";
import { afterEach, expect, it } from "vitest";
import { errorText } from "../src/base/errors.js";
import { authFetch } from "../src/mcp/auth/auth-fetch.js";
import { McpAuthError } from "../src/mcp/auth/auth-error.js";
import type { AuthorizationServerMetadata } from "../src/mcp/auth/discovery.js";
import { requestToken } from "../src/mcp/auth/token-request.js";
import { McpClient } from "../src/mcp/client.js";
import { HttpTransport } from "../src/mcp/streamable-http.js";
import { McpTokenStore } from "../src/mcp/auth/token-store.js";
import { isSecureUrl, OutboundError, outboundFetch } from "../src/models/http/outbound.js";
import { ResponseTooLargeError } from "../src/models/http/response-limits.js";

let servers: Server[] = [];
let folders: string[] = [];

afterEach(async () => {
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
  servers = [];
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
  folders = [];
});

async function serve(handler: Parameters<typeof createServer>[1]): Promise<string> {
  const server = createServer(handler);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

it("a gzip bomb (64 KiB that inflates to 64 MiB) stops at the byte cap, counted after decompression", async () => {
  const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024));
  const base = await serve((_request, response) => {
    response.writeHead(200, { "content-type": "application/json", "content-encoding": "gzip" });
    response.end(bomb);
  });
  const response = await outboundFetch(
    `${base}/.well-known/oauth-authorization-server`,
    {},
    {
      what: "the metadata",
      secure: true,
      maxRedirects: 0,
      maxBytes: 1024 * 1024,
      timeoutMs: 30_000,
    },
  );
  await expect(response.text()).rejects.toBeInstanceOf(ResponseTooLargeError);
});

it("a body that drips one byte at a time never ends a request past its time limit", async () => {
  const base = await serve((_request, response) => {
    response.writeHead(200, { "content-type": "application/json" });
    response.write("{");
    const timer = setInterval(() => response.write(" "), 20);
    response.on("close", () => clearInterval(timer));
  });
  const http = authFetch(500);
  const response = await http(`${base}/token`, { method: "POST", body: "x" }, "endpoint", "the token endpoint");
  const error = await response.text().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(OutboundError);
  expect((error as OutboundError).reason).toBe("timeout");
});

it("host spellings that only look like this machine do not pass the loopback rule", () => {
  for (const url of [
    "http://127.0.0.1.evil.test/",
    "http://localhost.evil.test/",
    "http://localhost./",
    "http://127.0.0.1@evil.test/",
    "http://evil.test#@127.0.0.1/",
    "http://[::ffff:7f00:1]/",
    "http://0.0.0.0/",
    "http://xn--localhost-/",
    "ftp://127.0.0.1/",
    "ws://127.0.0.1/",
  ])
    expect([url, isSecureUrl(new URL(url))]).toEqual([url, false]);
  // spellings the URL parser turns into 127.0.0.1 or ::1 really are this machine
  for (const url of ["http://2130706433/", "http://0x7f.1/", "http://LOCALHOST/", "http://[0:0:0:0:0:0:0:1]/"])
    expect([url, isSecureUrl(new URL(url))]).toEqual([url, true]);
});

it("a token endpoint that echoes the client secret (or the code) in error_description does not put it in the error", async () => {
  const secret = "s3cr3t-client-secret-XYZ";
  const base = await serve((request, response) => {
    let body = "";
    request.on("data", (chunk: Buffer) => {
      body += chunk.toString();
    });
    request.on("end", () => {
      const form = new URLSearchParams(body);
      response.writeHead(400, { "content-type": "application/json" });
      response.end(
        JSON.stringify({
          error: "invalid_client",
          error_description:
            `bad secret ${form.get("client_secret")} for code ${form.get("code")} / ${form.get("code_verifier")} ` +
            `/ ${form.get("refresh_token")} / ${request.headers.authorization} = ` +
            Buffer.from((request.headers.authorization ?? "Basic ").slice(6), "base64").toString(),
        }),
      );
    });
  });
  const server: AuthorizationServerMetadata = {
    issuer: base,
    authorization_endpoint: `${base}/authorize`,
    token_endpoint: `${base}/token`,
    token_endpoint_auth_methods_supported: ["client_secret_post"],
  };
  const refusal = (methods: string[], grant: Parameters<typeof requestToken>[2]) =>
    requestToken(
      { ...server, token_endpoint_auth_methods_supported: methods },
      { clientId: "app", clientSecret: secret, via: "configured" },
      grant,
      `${base}/mcp`,
      undefined,
      authFetch(5_000),
    ).then(
      () => undefined,
      (e: unknown) => e,
    );
  const error = await refusal(["client_secret_post"], {
    grant_type: "authorization_code",
    code: "the-code-1234",
    code_verifier: "verifier-5678",
    redirect_uri: "x",
  });
  expect(error).toBeInstanceOf(McpAuthError);
  const text = errorText(error);
  expect(text).toContain("invalid_client");
  expect(text).not.toContain(secret);
  expect(text).not.toContain("the-code-1234");
  expect(text).not.toContain("verifier-5678");
  // HTTP Basic (the header echoed, and decoded) and a refresh token
  const basic = await refusal(["client_secret_basic"], {
    grant_type: "refresh_token",
    refresh_token: "refresh-token-9012",
  });
  expect(basic).toBeInstanceOf(McpAuthError);
  const basicText = errorText(basic);
  expect(basicText).toContain("invalid_client");
  expect(basicText).toContain("Basic [redacted] = app:[redacted]");
  for (const credential of [secret, "refresh-token-9012", Buffer.from(`app:${secret}`).toString("base64")])
    expect(basicText).not.toContain(credential);
});

it("a token file replaced by a FIFO (or a link to one) reads as nothing instead of blocking the store", () => {
  const folder = mkdtempSync(path.join(tmpdir(), "pi-attack-store-"));
  folders.push(folder);
  const store = new McpTokenStore(folder);
  const url = "https://mcp.example/mcp";
  execFileSync("mkfifo", [store.fileOf(url)]);
  execFileSync("mkfifo", [path.join(folder, "fifo")]);
  execFileSync("ln", ["-s", path.join(folder, "fifo"), store.clientFileOf(url)]);
  // a regular file beside them still reads (the child below really reads the store)
  const other = "https://other.example/mcp";
  store.write({
    serverUrl: other,
    resource: other,
    authorizationServer: { issuer: "https://as.example", authorization_endpoint: "x", token_endpoint: "y" },
    client: { clientId: "app", via: "configured" },
    tokens: { access_token: "kept", token_type: "Bearer" },
  });
  // in a child: a store that blocks would hang this worker for ever; the child is killed instead
  const script = [
    `import { McpTokenStore } from ${JSON.stringify(path.resolve(__dirname, "../src/mcp/auth/token-store.ts"))};`,
    `const store = new McpTokenStore(${JSON.stringify(folder)});`,
    `const read = (u) => [store.read(u)?.tokens.access_token ?? null, store.readClient(u) ?? null];`,
    `console.log(JSON.stringify([read(${JSON.stringify(url)}), read(${JSON.stringify(other)})]));`,
  ].join("\n");
  const tsx = path.resolve(__dirname, "../../../node_modules/.bin/tsx");
  const out = execFileSync(tsx, ["--eval", script], { timeout: 40_000, encoding: "utf8" });
  expect(JSON.parse(out)).toEqual([
    [null, null],
    ["kept", null],
  ]);
}, 60_000);

it("an API key in a configured header other than Authorization (X-API-Key, Cookie) is not sent over plain http off the loopback", async () => {
  let reached = 0;
  const base = await serve((_request, response) => {
    reached++;
    response.writeHead(500).end();
  });
  const port = new URL(base).port;
  // the server's name is not a loopback one; a fetch that would take it to 127.0.0.1 anyway
  const reaching: typeof fetch = (input, init) => {
    const url = new URL(String(input));
    if (url.hostname === "mcp.example.net") url.hostname = "127.0.0.1";
    return fetch(url, init);
  };
  const url = `http://mcp.example.net:${port}/mcp`;
  const configured: Record<string, string>[] = [{ "X-API-Key": "sk-configured-key" }, { Cookie: "session=configured" }];
  for (const headers of configured) {
    const client = new McpClient(new HttpTransport({ url, headers, fetch: reaching }));
    const error = await client.connect().then(
      () => undefined,
      (e: unknown) => e,
    );
    await client.close().catch(() => {});
    expect(error).toBeInstanceOf(OutboundError);
    expect((error as OutboundError).reason).toBe("insecure");
  }
  expect(reached).toBe(0);
});

it("metadata redirects: a loop stops after 3 hops; userinfo, another port or another spelling of the host are not followed", async () => {
  const seen: string[] = [];
  let port = "";
  const base = await serve((request, response) => {
    seen.push(request.url ?? "");
    const n = Number(request.url?.split("/").at(-1) ?? 0);
    const location: Record<string, string> = {
      "/loop": `/loop/${n + 1}`,
      "/userinfo": `http://user:pw@127.0.0.1:${port}/landed`,
      "/port": `http://127.0.0.1:${Number(port) + 1}/landed`,
      "/spelling": `http://localhost:${port}/landed`,
    };
    const key = Object.keys(location).find((k) => request.url?.startsWith(k));
    if (key === undefined) return response.writeHead(200, { "content-type": "application/json" }).end("{}");
    response.writeHead(302, { location: location[key]! }).end();
  });
  port = new URL(base).port;
  const http = authFetch(5_000);
  const refused = async (route: string) =>
    http(`${base}${route}`, {}, "metadata", "the metadata").then(
      () => undefined,
      (e: unknown) => e,
    );
  expect(await refused("/loop/0")).toBeInstanceOf(OutboundError);
  expect(seen).toEqual(["/loop/0", "/loop/1", "/loop/2", "/loop/3"]);
  for (const route of ["/userinfo", "/port", "/spelling"])
    expect([route, await refused(route)]).not.toEqual([route, undefined]);
  expect(seen.filter((url) => url === "/landed")).toEqual([]);
});
