/**
 * The loopback redirect of a native client (RFC 8252 §7.3): a one-shot HTTP server on
 * `127.0.0.1` (a free port, or the one configured) that waits for the browser to come back to
 * `/callback` with the authorization code. The `state` must be the one sent, else the answer is
 * refused (it did not come from this login); an `error` from the authorization server ends the
 * wait with it. The page the browser shows says what happened and never shows the code.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { McpAuthError } from "./auth-error.js";

/** A loopback listener waiting for one redirect. */
export interface Loopback {
  /** `http://127.0.0.1:PORT/callback`. */
  redirectUri: string;
  /**
   * Resolves with the code once the browser comes back with `state`; rejects (`McpAuthError`,
   * "login-failed") on an error answer or after `timeoutMs`, when `signal` aborts, or at `close`.
   */
  code(state: string, timeoutMs: number, signal?: AbortSignal): Promise<string>;
  close(): Promise<void>;
}

/** Starts listening on `127.0.0.1:port` (0: any free port). */
export async function startLoopback(port = 0): Promise<Loopback> {
  /** Takes the browser's answer: "code", "error" (the server said no), or false (not this login's). */
  let deliver: ((query: URLSearchParams) => "code" | "error" | false) | undefined;
  /** Ends the wait in progress (at close). */
  let cancel: (() => void) | undefined;
  const server: Server = createServer((request, response) => {
    const url = new URL(request.url ?? "/", "http://127.0.0.1");
    if (url.pathname !== "/callback") {
      response.writeHead(404).end();
      return;
    }
    const taken = deliver?.(url.searchParams) ?? false;
    const page = {
      code: "Authorization received. You can close this tab.",
      error: "Authorization was not given; the terminal says why. You can close this tab.",
      false: "This answer does not belong to a login in progress.",
    }[String(taken) as "code" | "error" | "false"];
    response.writeHead(taken === false ? 400 : 200, { "content-type": "text/html; charset=utf-8" });
    response.end(`<!doctype html><title>pi-course</title><p>${page}</p>`);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", (error) =>
      reject(new McpAuthError("login-failed", `cannot listen on 127.0.0.1:${port} for the redirect: ${error.message}`)),
    );
    server.listen(port, "127.0.0.1", resolve);
  });
  const address = server.address() as AddressInfo;
  return {
    redirectUri: `http://127.0.0.1:${address.port}/callback`,
    code(state, timeoutMs, signal) {
      return new Promise<string>((resolve, reject) => {
        const finish = (error: Error | undefined, code?: string) => {
          clearTimeout(timer);
          signal?.removeEventListener("abort", onAbort);
          deliver = undefined;
          cancel = undefined;
          if (error !== undefined) reject(error);
          else resolve(code!);
        };
        const timer = setTimeout(() => {
          const within = timeoutMs >= 1000 ? `${Math.round(timeoutMs / 1000)} s` : `${timeoutMs} ms`;
          finish(new McpAuthError("login-failed", `no answer from the browser within ${within}; try the login again`));
        }, timeoutMs);
        const onAbort = () => finish(new McpAuthError("login-failed", "the login was cancelled"));
        signal?.addEventListener("abort", onAbort, { once: true });
        cancel = () => finish(new McpAuthError("login-failed", "the login ended before the browser came back"));
        deliver = (query) => {
          if (query.get("state") !== state) return false;
          const error = query.get("error");
          if (error !== null) {
            const description = query.get("error_description");
            finish(
              new McpAuthError(
                "login-failed",
                `the authorization server answered ${error.slice(0, 100)}${description !== null ? ` (${description.slice(0, 300)})` : ""}`,
              ),
            );
            return "error";
          }
          const code = query.get("code");
          if (code === null || code === "") return false;
          finish(undefined, code);
          return "code";
        };
      });
    },
    async close() {
      cancel?.();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
