/**
 * `pi-course mcp login NAME` reaching the grants of issue 54 from an entry's `"oauth"` settings,
 * in process (`runMain`), against an authorization server, an identity provider and a protected
 * MCP server on 127.0.0.1 (node:http) that check what a real one checks:
 *
 * - `private_key_jwt` (RFC 7523): the client assertion's ES256 signature against the public key,
 *   `iss` = `sub` = the client id, `aud` the issuer, `kid` the configured one, the key read from
 *   `privateKeyFile`;
 * - cross-app access: the token exchange at the identity provider (RFC 8693, the ID token from
 *   `${VAR}`), then the JWT bearer grant of the identity assertion (RFC 7523) with HTTP Basic.
 *
 * Neither prints a key, a secret, an ID token or a token.
 */
import { generateKeyPairSync, verify } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { runMain } from "../src/cli/main.js";
import { McpTokenStore } from "../src/mcp/auth/token-store.js";

const { publicKey, privateKey } = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
const ID_TOKEN = "header.the-person-id-token.sig";
const ID_JAG = "id-jag-for-the-mcp-server";

let server: Server;
let base: string;
let dir: string;
/** What the token endpoints checked, one line each. */
let log: string[];

function decode(part: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(part, "base64url").toString("utf8"));
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "pi-mcp-grants-"));
  server = createServer((request, response) => {
    let text = "";
    request.on("data", (chunk) => (text += chunk));
    request.on("end", () => {
      const json = (status: number, value: unknown, headers: Record<string, string> = {}) => {
        response.writeHead(status, { "content-type": "application/json", ...headers });
        response.end(JSON.stringify(value));
      };
      const key = `${request.method} ${request.url}`;
      const form = new URLSearchParams(text);
      if (key === "GET /.well-known/oauth-protected-resource/mcp")
        return json(200, { resource: `${base}/mcp`, authorization_servers: [base] });
      if (key === "GET /.well-known/oauth-authorization-server")
        return json(200, {
          issuer: base,
          token_endpoint: `${base}/token`,
          grant_types_supported: ["client_credentials", "urn:ietf:params:oauth:grant-type:jwt-bearer"],
          token_endpoint_auth_methods_supported: ["private_key_jwt", "client_secret_basic"],
          token_endpoint_auth_signing_alg_values_supported: ["ES256"],
        });
      if (key === "POST /idp/token") {
        const ok =
          form.get("grant_type") === "urn:ietf:params:oauth:grant-type:token-exchange" &&
          form.get("subject_token") === ID_TOKEN &&
          form.get("subject_token_type") === "urn:ietf:params:oauth:token-type:id_token" &&
          form.get("requested_token_type") === "urn:ietf:params:oauth:token-type:id-jag" &&
          form.get("audience") === base &&
          form.get("resource") === `${base}/mcp` &&
          form.get("client_id") === "app-at-idp";
        log.push(`idp token-exchange ${ok ? "ok" : "wrong"}`);
        if (!ok) return json(400, { error: "invalid_request" });
        return json(200, {
          access_token: ID_JAG,
          issued_token_type: "urn:ietf:params:oauth:token-type:id-jag",
          token_type: "N_A",
        });
      }
      if (key === "POST /token") {
        const grant = form.get("grant_type");
        if (grant === "client_credentials") {
          const [h, c, s] = (form.get("client_assertion") ?? "..").split(".");
          const header = decode(h!);
          const claims = decode(c!);
          const signed = verify(
            "sha256",
            Buffer.from(`${h}.${c}`),
            { key: publicKey, dsaEncoding: "ieee-p1363" },
            Buffer.from(s!, "base64url"),
          );
          const ok =
            signed &&
            form.get("client_assertion_type") === "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" &&
            header.alg === "ES256" &&
            header.kid === "key-1" &&
            claims.iss === "svc" &&
            claims.sub === "svc" &&
            claims.aud === base &&
            typeof claims.jti === "string" &&
            (claims.exp as number) > Date.now() / 1000;
          log.push(`client_credentials private_key_jwt ${ok ? "ok" : "wrong"}`);
          if (!ok) return json(401, { error: "invalid_client" });
          return json(200, { access_token: "cc-token", token_type: "Bearer", expires_in: 3600 });
        }
        if (grant === "urn:ietf:params:oauth:grant-type:jwt-bearer") {
          const basic = `Basic ${Buffer.from("app:app-secret").toString("base64")}`;
          const ok = form.get("assertion") === ID_JAG && request.headers.authorization === basic;
          log.push(`jwt-bearer ${ok ? "ok" : "wrong"}`);
          if (!ok) return json(401, { error: "invalid_grant" });
          return json(200, { access_token: "xaa-token", token_type: "Bearer", expires_in: 3600 });
        }
        return json(400, { error: "unsupported_grant_type" });
      }
      if (key === "POST /mcp")
        return json(
          401,
          {},
          { "www-authenticate": `Bearer resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"` },
        );
      json(404, {});
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

async function login(name: string, oauth: Record<string, unknown>, env: Record<string, string> = {}) {
  log = [];
  const home = path.join(dir, `home-${name}`);
  mkdirSync(path.join(home, ".pi-course"), { recursive: true });
  writeFileSync(
    path.join(home, ".pi-course", "mcp.json"),
    JSON.stringify({ mcpServers: { [name]: { url: `${base}/mcp`, oauth } } }),
  );
  let stdout = "";
  let stderr = "";
  const code = await runMain(["mcp", "login", name], {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    env: { HOME: home, INIT_CWD: dir, ...env },
  });
  const kept = new McpTokenStore(path.join(home, ".pi-course", "mcp-auth")).read(`${base}/mcp`);
  return { code, stdout, stderr, kept };
}

it("mcp login with private_key_jwt: the key from privateKeyFile, its kid, ES256 from the server's metadata; the key is never printed", async () => {
  const keyFile = path.join(dir, "svc.pem");
  writeFileSync(keyFile, privateKey.export({ type: "pkcs8", format: "pem" }), { mode: 0o600 });
  const run = await login("svc", {
    grant: "client_credentials",
    clientId: "svc",
    privateKeyFile: keyFile,
    keyId: "key-1",
  });
  expect({ code: run.code, stderr: run.stderr, log }).toEqual({
    code: 0,
    stderr: "",
    log: ["client_credentials private_key_jwt ok"],
  });
  expect(run.stdout).toContain(`logged in to the MCP server svc at ${base}`);
  expect(run.kept?.tokens.access_token).toBe("cc-token");
  expect(JSON.stringify(run.kept)).not.toContain("PRIVATE KEY");
});

it("mcp login with cross-app access: the ID token from ${VAR} exchanged at the identity provider, then the JWT bearer grant; nothing secret printed", async () => {
  const run = await login(
    "xaa",
    {
      grant: "cross_app_access",
      clientId: "app",
      clientSecret: "${APP_SECRET}",
      identityProvider: { tokenEndpoint: `${base}/idp/token`, clientId: "app-at-idp", idToken: "${SSO_ID_TOKEN}" },
    },
    { APP_SECRET: "app-secret", SSO_ID_TOKEN: ID_TOKEN },
  );
  expect({ code: run.code, stderr: run.stderr, log }).toEqual({
    code: 0,
    stderr: "",
    log: ["idp token-exchange ok", "jwt-bearer ok"],
  });
  expect(run.kept?.tokens.access_token).toBe("xaa-token");
  for (const secret of ["app-secret", ID_TOKEN, ID_JAG, "xaa-token"]) expect(run.stdout).not.toContain(secret);
  expect(JSON.stringify(run.kept)).not.toContain(ID_TOKEN);
});

it("the identity provider's refusal says what to do and names no token", async () => {
  const run = await login(
    "xaa-bad",
    {
      grant: "cross_app_access",
      clientId: "app",
      clientSecret: "app-secret",
      identityProvider: { tokenEndpoint: `${base}/idp/token`, clientId: "app-at-idp", idToken: "${SSO_ID_TOKEN}" },
    },
    { SSO_ID_TOKEN: "an-expired-id-token" },
  );
  expect(run.code).toBe(1);
  expect(run.stderr).toContain(
    "did not exchange the ID token for an identity assertion (sign in again if it expired) (HTTP 400: invalid_request)",
  );
  expect(run.stderr).not.toContain("an-expired-id-token");
});
