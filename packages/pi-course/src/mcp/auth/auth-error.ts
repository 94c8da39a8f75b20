/**
 * The one error of MCP authorization. Its message says what happened and what to do (log in,
 * ask for a wider scope, fix the configuration); it never holds a token, a client secret, an
 * authorization code or a request body: only what the authorization server said in its
 * `error` and `error_description`, and names and URLs.
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
  | "login-failed";

/** Authorizing against a remote MCP server failed; `failure` says how. */
export class McpAuthError extends PiCourseError {
  override readonly name = "McpAuthError";
  /** Stable: `"MCP_AUTH"`. */
  override readonly code = "MCP_AUTH";
  constructor(
    readonly failure: McpAuthFailure,
    message: string,
  ) {
    super(message);
  }
}
