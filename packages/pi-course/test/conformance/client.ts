/**
 * The client the official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned)
 * runs: `client.ts SERVER_URL`, with the scenario's name in `MCP_CONFORMANCE_SCENARIO` and its
 * context (client ids, secrets, keys, the identity provider) in `MCP_CONFORMANCE_CONTEXT`. It
 * uses the library as a user would, through its door (`src/index.ts`) only: `McpOAuth` with a
 * `MemoryTokenStore` on an `HttpTransport`, `McpClient` on top; the "browser" follows the
 * authorization server's redirect to the loopback listener by hand; a form the server asks for is
 * accepted as offered. It connects, lists the tools, calls each one, and exits 0, or prints the
 * error and exits 1.
 *
 * How each setting is reached is what a user would configure: a pre-registered client from the
 * context, `grant: "client_credentials"` (a secret, or `private_key_jwt` with the context's
 * PEM), `grant: "cross_app_access"` with the identity provider, and `protocolVersion:
 * "2025-03-26"` for the scenarios of that revision. Run by `conformance.ts`.
 */
import {
  HttpTransport,
  McpClient,
  McpOAuth,
  type McpOAuthOptions,
  MemoryTokenStore,
  errorText,
} from "../../src/index.js";
import { consentingBrowser } from "../support/consenting-browser.js";

const serverUrl = process.argv[2];
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? "";
const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? "{}") as Record<string, string | undefined>;

function options(): McpOAuthOptions<MemoryTokenStore> {
  const base: McpOAuthOptions<MemoryTokenStore> = {
    serverUrl: serverUrl!,
    store: new MemoryTokenStore(),
    openUrl: consentingBrowser,
    clientMetadataUrl: "https://conformance-test.local/client-metadata.json",
  };
  if (scenario.startsWith("auth/2025-03-26-")) base.protocolVersion = "2025-03-26";
  if (context.client_id !== undefined) base.clientId = context.client_id;
  if (context.client_secret !== undefined) base.clientSecret = context.client_secret;
  if (scenario.startsWith("auth/client-credentials-")) {
    base.grant = "client_credentials";
    if (context.private_key_pem !== undefined) {
      base.privateKey = context.private_key_pem;
      if (context.signing_algorithm !== undefined) base.signingAlgorithm = context.signing_algorithm;
    }
  }
  if (
    context.idp_token_endpoint !== undefined &&
    context.idp_client_id !== undefined &&
    context.idp_id_token !== undefined
  ) {
    base.grant = "cross_app_access";
    base.identityProvider = {
      tokenEndpoint: context.idp_token_endpoint,
      clientId: context.idp_client_id,
      idToken: context.idp_id_token,
    };
  }
  return base;
}

async function main(): Promise<void> {
  if (serverUrl === undefined) throw new Error("usage: client.ts SERVER_URL");
  const auth = new McpOAuth(options());
  const client = new McpClient(new HttpTransport({ url: serverUrl, auth }), {
    requestTimeoutMs: 20_000,
    // a person who accepts every form as it is offered: the client fills in the defaults
    onElicitation: async () => ({ action: "accept", content: {} }),
  });
  await client.connect();
  try {
    for (const tool of await client.listTools()) await client.callTool(tool.name, {});
  } finally {
    await client.close();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`conformance client: ${errorText(error)}\n`);
    process.exit(1);
  },
);
