/**
 * Where the tokens of remote MCP servers are kept: one file per server URL,
 * `FOLDER/<first 24 hex of SHA-256 of the URL>.json` (the CLI's folder is
 * `~/.pi-course/mcp-auth/`). The folder is made 0700 and each file 0600, since they hold
 * bearer tokens and client secrets; a file is written whole (a new file renamed into place),
 * so a crash leaves the old one or the new one, never half of either. Nothing else of the
 * library writes tokens anywhere: not in a session, a log, `/mcp` output or an error. Only a
 * regular file is read (`readTextFile`: opened without waiting, then checked): a token file
 * replaced by a FIFO, a device or a folder reads as no tokens, at once.
 */
import { createHash } from "node:crypto";
import { chmodSync, mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { readTextFile } from "../../base/read-json.js";
import type { OAuthClient } from "./client-identity.js";
import type { AuthorizationServerMetadata } from "./discovery.js";
import type { TokenSet } from "./token-request.js";

/** What is kept for one server. */
export interface StoredAuthorization {
  /** The MCP server's URL (the file's key). */
  serverUrl: string;
  /** The resource indicator the tokens were issued for. */
  resource: string;
  /** The authorization server that issued them (a client id is valid only there); its public metadata. */
  authorizationServer: AuthorizationServerMetadata;
  client: OAuthClient;
  tokens: TokenSet;
  /** Scopes the server asked for that the last login did not get (the next login asks for them). */
  wantedScope?: string;
}

/** The token files of one folder. */
export class McpTokenStore {
  constructor(readonly folder: string) {}

  /** The file of `serverUrl`. */
  fileOf(serverUrl: string): string {
    const hash = createHash("sha256").update(serverUrl).digest("hex").slice(0, 24);
    return path.join(this.folder, `${hash}.json`);
  }

  /** What is kept for `serverUrl`; undefined when nothing is (or the file cannot be read as such). */
  read(serverUrl: string): StoredAuthorization | undefined {
    let text: string | undefined;
    try {
      // a regular file only: a FIFO would block a plain read for ever, a device could be endless
      text = readTextFile(this.fileOf(serverUrl), { ifMissing: () => undefined });
    } catch {
      return undefined;
    }
    if (text === undefined) return undefined;
    try {
      const value = JSON.parse(text) as StoredAuthorization;
      if (value.serverUrl !== serverUrl || typeof value.tokens?.access_token !== "string") return undefined;
      return value;
    } catch {
      return undefined; // a damaged file is as good as none: the next login writes it anew
    }
  }

  /** Keeps `value` (0600 in a 0700 folder, written whole). */
  write(value: StoredAuthorization): void {
    mkdirSync(this.folder, { recursive: true, mode: 0o700 });
    chmodSync(this.folder, 0o700);
    const file = this.fileOf(value.serverUrl);
    const fresh = `${file}.${process.pid}.${Date.now()}.tmp`;
    try {
      writeFileSync(fresh, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o600 });
      renameSync(fresh, file);
    } catch (error) {
      rmSync(fresh, { force: true }); // no token left behind in a stray file
      throw error;
    }
  }

  /** Forgets `serverUrl`'s tokens; true when there were some. */
  remove(serverUrl: string): boolean {
    const file = this.fileOf(serverUrl);
    const had = this.read(serverUrl) !== undefined;
    rmSync(file, { force: true });
    return had;
  }
}
