/**
 * The official MCP conformance suite (`@modelcontextprotocol/conformance` 0.1.16) against the
 * library's client through its public door (`test/conformance/client.ts`): the scenarios issue
 * 54 named (private_key_jwt, cross-app access, the 2025-03-26 endpoint fallback, and the
 * metadata back-compat scenario that must stay refused with RFC 8414 §3.3's reason), plus a
 * pre-registered client and a step-up. The whole table: `npm run conformance`.
 */
import { expect, it } from "vitest";
import { runScenario } from "./conformance/conformance.js";

const MUST_PASS = [
  "auth/client-credentials-jwt",
  "auth/cross-app-access-complete-flow",
  "auth/2025-03-26-oauth-endpoint-fallback",
  "auth/client-credentials-basic",
  "auth/pre-registration",
  "auth/scope-step-up",
];

it.each(MUST_PASS)("conformance: %s passes", { timeout: 120_000 }, async (scenario) => {
  const result = await runScenario(scenario);
  expect({ scenario, failures: result.failures, clientError: result.clientError }).toEqual({
    scenario,
    failures: [],
    clientError: "",
  });
  expect(result.passed).toBe(true);
});

it("conformance: auth/2025-03-26-oauth-metadata-backcompat stays refused, with RFC 8414 §3.3's reason", {
  timeout: 120_000,
}, async () => {
  const result = await runScenario("auth/2025-03-26-oauth-metadata-backcompat");
  expect(result.passed).toBe(false);
  expect(result.clientError).toContain("refused: RFC 8414 §3.3 requires the issuer in the metadata to be identical");
});
