/**
 * Where the tokens of remote MCP servers are kept: the `TokenStore` seam (a keychain, a web
 * app's database, …), and the two stores that ship:
 *
 * - `McpTokenStore` (the default, and the CLI's): one file per server URL,
 *   `FOLDER/<first 24 hex of SHA-256 of the URL>.json` (the CLI's folder is
 *   `~/.pi-course/mcp-auth/`), and the client registered for it beside it (`….client.json`).
 *   The folder is made 0700 and each file 0600, since they hold bearer tokens and client
 *   secrets; a file is written whole (a new file renamed into place), so a crash leaves the old
 *   one or the new one, never half of either.
 * - `MemoryTokenStore`: kept in the process only (tests, a program that logs in each run).
 *
 * Nothing else of the library writes tokens anywhere: not in a session, a log, `/mcp` output or
 * an error. `McpTokenStore` reads regular files only: a file replaced by a FIFO, a device or a
 * folder reads as none, at once.
 */
import { createHash } from "node:crypto";
import { chmodSync, mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { readTextFile } from "../../base/read-json.js";
import type { KeptClient, OAuthClient } from "./client-identity.js";
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

/**
 * Where `McpOAuth` keeps what it gets for each server. Every method may answer at once or with
 * a promise (a keychain, a database). Contract: `read` after `write` gives the value written (or
 * undefined if it was lost); `remove` forgets the tokens of a server but not its registered
 * client (a later login uses it again); nothing kept is ever shown.
 */
export interface TokenStore {
  /** What is kept for `serverUrl`, or undefined. */
  read(serverUrl: string): StoredAuthorization | undefined | Promise<StoredAuthorization | undefined>;
  /** Keeps `value` for `value.serverUrl`, replacing what was there. */
  write(value: StoredAuthorization): void | Promise<void>;
  /** Forgets `serverUrl`'s tokens; true when there were some. */
  remove(serverUrl: string): boolean | Promise<boolean>;
  /**
   * The client registered for `serverUrl` (dynamic registration), or the issuer a configured
   * client's secret or key is pinned to (`via: "configured"`, its id only), or undefined.
   */
  readClient(serverUrl: string): KeptClient | undefined | Promise<KeptClient | undefined>;
  /** Keeps the client of `serverUrl` (as `readClient` gives it); undefined forgets it (the server refused it). */
  writeClient(serverUrl: string, client: KeptClient | undefined): void | Promise<void>;
}

/** A `TokenStore` in this process's memory only. */
export class MemoryTokenStore implements TokenStore {
  private readonly tokens = new Map<string, StoredAuthorization>();
  private readonly clients = new Map<string, KeptClient>();

  read(serverUrl: string): StoredAuthorization | undefined {
    const value = this.tokens.get(serverUrl);
    return value === undefined ? undefined : structuredClone(value);
  }

  write(value: StoredAuthorization): void {
    this.tokens.set(value.serverUrl, structuredClone(value));
  }

  remove(serverUrl: string): boolean {
    return this.tokens.delete(serverUrl);
  }

  readClient(serverUrl: string): KeptClient | undefined {
    const value = this.clients.get(serverUrl);
    return value === undefined ? undefined : structuredClone(value);
  }

  writeClient(serverUrl: string, client: KeptClient | undefined): void {
    if (client === undefined) this.clients.delete(serverUrl);
    else this.clients.set(serverUrl, structuredClone(client));
  }
}

/** The token files of one folder (the default `TokenStore`). */
export class McpTokenStore implements TokenStore {
  constructor(readonly folder: string) {}

  /** The file of `serverUrl`. */
  fileOf(serverUrl: string): string {
    const hash = createHash("sha256").update(serverUrl).digest("hex").slice(0, 24);
    return path.join(this.folder, `${hash}.json`);
  }

  /** The file of the client registered for `serverUrl`. */
  clientFileOf(serverUrl: string): string {
    return this.fileOf(serverUrl).replace(/\.json$/, ".client.json");
  }

  /** What is kept for `serverUrl`; undefined when nothing is (or the file cannot be read as such). */
  read(serverUrl: string): StoredAuthorization | undefined {
    const value = this.readJson(this.fileOf(serverUrl)) as StoredAuthorization | undefined;
    if (value?.serverUrl !== serverUrl || typeof value.tokens?.access_token !== "string") return undefined;
    return value;
  }

  /** Keeps `value` (0600 in a 0700 folder, written whole). */
  write(value: StoredAuthorization): void {
    this.writeJson(this.fileOf(value.serverUrl), value);
  }

  /** Forgets `serverUrl`'s tokens; true when there were some. */
  remove(serverUrl: string): boolean {
    const had = this.read(serverUrl) !== undefined;
    rmSync(this.fileOf(serverUrl), { force: true });
    return had;
  }

  readClient(serverUrl: string): KeptClient | undefined {
    const value = this.readJson(this.clientFileOf(serverUrl)) as (KeptClient & { serverUrl?: string }) | undefined;
    if (value?.serverUrl !== serverUrl || typeof value.client?.clientId !== "string") return undefined;
    return { issuer: value.issuer, client: value.client };
  }

  writeClient(serverUrl: string, client: KeptClient | undefined): void {
    if (client === undefined) rmSync(this.clientFileOf(serverUrl), { force: true });
    else this.writeJson(this.clientFileOf(serverUrl), { serverUrl, ...client });
  }

  private readJson(file: string): unknown {
    let text: string | undefined;
    try {
      // a regular file only (opened without waiting, then checked): a FIFO in its place would
      // block a plain read for ever, a device could be endless; either reads as no file, at once
      text = readTextFile(file, { ifMissing: () => undefined });
    } catch {
      return undefined;
    }
    if (text === undefined) return undefined;
    try {
      return JSON.parse(text);
    } catch {
      return undefined; // a damaged file is as good as none: the next login writes it anew
    }
  }

  private writeJson(file: string, value: unknown): void {
    mkdirSync(this.folder, { recursive: true, mode: 0o700 });
    chmodSync(this.folder, 0o700);
    const fresh = `${file}.${process.pid}.${Date.now()}.tmp`;
    try {
      writeFileSync(fresh, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o600 });
      renameSync(fresh, file);
    } catch (error) {
      rmSync(fresh, { force: true }); // no token left behind in a stray file
      throw error;
    }
  }
}
