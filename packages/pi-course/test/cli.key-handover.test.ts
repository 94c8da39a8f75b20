/**
 * The key hand-over socket gives the key only to the agent the launcher started (issue 31,
 * item 11). A same-user process watches the launcher's temporary folder and connects to the
 * socket the moment it appears, before the agent can: it must receive nothing, and the real
 * agent must still get the key (the request to the server carries it).
 */
import { spawn } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createConnection } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SseServer, sseReply } from "./support/sse-server.js";
import { builtStart } from "./support/built-cli.js";

const KEY = "sk-test-handover-0123456789abcdef";

let temp = "";
let workspace = "";
let server: SseServer;
beforeEach(async () => {
  temp = await mkdtemp(path.join(tmpdir(), "pi-handover-tmp-"));
  workspace = await mkdtemp(path.join(tmpdir(), "pi-handover-work-"));
  server = await SseServer.start();
});
afterEach(async () => {
  await server.close();
  await rm(temp, { recursive: true, force: true });
  await rm(workspace, { recursive: true, force: true });
});

const answer =
  `data: ${JSON.stringify({ choices: [{ index: 0, delta: { role: "assistant", content: "done" } }] })}\n\n` +
  `data: ${JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: "stop" }] })}\n\n` +
  "data: [DONE]\n\n";

/** Connects to the first launcher socket that appears under `folder`; resolves with all it was sent. */
function thief(folder: string, until: number): Promise<{ connected: boolean; received: string }> {
  return new Promise((resolve) => {
    const poll = () => {
      if (Date.now() > until) return resolve({ connected: false, received: "" });
      const found = readdirSync(folder)
        .filter((name) => name.startsWith("pi-course-agent-"))
        .map((name) => path.join(folder, name, "s"))
        .find((socket) => existsSync(socket));
      if (found === undefined) return void setTimeout(poll, 1);
      const socket = createConnection(found);
      let received = "";
      let connected = false;
      socket.on("connect", () => {
        connected = true;
        // Whatever it was given by then is what it stole.
        setTimeout(() => socket.destroy(), 1500);
      });
      socket.on("data", (data: Buffer) => {
        received += data.toString("utf8");
      });
      socket.on("error", () => {});
      socket.on("close", () => {
        // Bound but not listening yet (ECONNREFUSED): try again.
        if (connected) resolve({ connected, received });
        else setTimeout(poll, 1);
      });
      // A thief that says nothing, then one that guesses, both get nothing.
      setTimeout(() => socket.write("token 00\n"), 200);
    };
    poll();
  });
}

describe("the key hand-over", () => {
  it("a same-user process that connects to the socket first receives nothing; the agent still gets the key", async () => {
    server.reply(sseReply(answer));
    const env: NodeJS.ProcessEnv = { ...process.env, TMPDIR: temp, OPENAI_API_KEY: KEY, INIT_CWD: workspace };
    for (const name of ["PI_COURSE_CONFIG", "PI_COURSE_BASE_URL", "PI_COURSE_MODEL", "PI_COURSE_PROVIDER"]) {
      delete env[name];
    }
    const stolen = thief(temp, Date.now() + 30_000);
    const run = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
      const child = spawn(
        process.execPath,
        [
          builtStart(),
          "--print",
          "--no-session",
          "--base-url",
          server.baseUrl,
          "--model",
          "m",
          "--cwd",
          ".",
          "say done",
        ],
        { cwd: workspace, env, stdio: ["ignore", "pipe", "pipe"] },
      );
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (d: Buffer) => (stdout += d.toString("utf8")));
      child.stderr.on("data", (d: Buffer) => (stderr += d.toString("utf8")));
      child.on("error", reject);
      child.on("close", (code) => resolve({ code, stdout, stderr }));
    });
    const { connected, received } = await stolen;
    const result = await run;
    expect(connected).toBe(true);
    expect(received).toBe("");
    expect(result).toMatchObject({ code: 0, stdout: "done\n" });
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]!.headers.authorization).toBe(`Bearer ${KEY}`);
  }, 60_000);
});
