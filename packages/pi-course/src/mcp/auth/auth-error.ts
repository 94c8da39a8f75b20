/**
 * The one error of MCP authorization. Its message says what happened and what to do (log in,
 * ask for a wider scope, fix the configuration); it never holds a token, a client secret, an
 * authorization code or a request body: only what the authorization server said in its
 * `error` and `error_description`, and names and URLs. Those words are the authorization
 * server's own, raw: a program that shows the message at a terminal passes it through a guard
 * first, as the CLI does (`untrustedText` of cli/terminal-text.ts).
 *
 * It reaches every caller as it is: `McpOAuth`'s methods, the transport's `send`, and the
 * requests of `McpClient` (`connect`, `callTool`, …) reject with this class, so a program reads
 * `failure` (`"login-required"`, `"insufficient-scope"`, …), `serverUrl` and `action` instead of
 * matching message texts.
 */
import { PiCourseError } from "../../base/errors.js";

/** Why authorizing failed, for a program to tell the cases apart. */
export type McpAuthFailure =
  /** No usable token: a person must log in (`pi-course mcp login NAME`, or `McpOAuth.login`). */
  | "login-required"
  /** The server asks for a scope the token lacks and nobody is there to grant it. */
  | "insufficient-scope"
  /** Discovery failed: the metadata of the server or of its authorization server is missing or wrong. */
  | "discovery"
  /** The authorization server refused a request (registration, token, refresh). */
  | "refused"
  /** The person did not complete the login in time, or the browser came back with an error. */
  | "login-failed"
  /**
   * The MCP server named an authorization server that the configured client's secret or key does
   * not belong to (`oauth.issuer`, or the first one they were used with): nothing was sent to it.
   */
  | "wrong-issuer";

/** Authorizing against a remote MCP server failed; `failure` says how. */
export class McpAuthError extends PiCourseError {
  override readonly name = "McpAuthError";
  /** Stable: `"MCP_AUTH"`. */
  override readonly code = "MCP_AUTH";
  /** The MCP server it was for (set once known; absent for a request made outside one server's login). */
  serverUrl: string | undefined;
  /** What a person or program should do next (e.g. the login hint), when there is one thing to do. */
  readonly action: string | undefined;
  /** The OAuth `error` code an authorization server answered with (`invalid_client`, `invalid_grant`, …). */
  readonly oauthError: string | undefined;
  constructor(
    readonly failure: McpAuthFailure,
    message: string,
    details: { serverUrl?: string; action?: string; oauthError?: string } = {},
  ) {
    super(message);
    this.serverUrl = details.serverUrl;
    this.action = details.action;
    this.oauthError = details.oauthError;
  }
}
