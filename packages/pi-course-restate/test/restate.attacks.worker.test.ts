/**
 * Attacks on a worker's own surroundings: the TMPDIR it is told to use (`--tmpdir`), planted by
 * another local user (`runuser -u nobody`) or open to them, the credential it is handed in its
 * environment, which every process it starts (a tool, a case's check) would inherit, and
 * connections that each send one request that proves nothing, then stay.
 *
 * Needs root (to act as another user) and `runuser`; it fails, saying so, without them.
 */
import http2 from "node:http2";
import net from "node:net";
import { readdirSync, statSync } from "node:fs";
import { chmod, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, it } from "vitest";
import { newWorkerSecret, readWorkerCredential } from "../src/identity.js";
import { runDurably } from "../src/submit.js";
import { startWorker } from "../src/worker.js";
import { spawnWorker } from "../src/worker-process.js";
import { CHALLENGE_HEADER, endpoint, newChallenge, proofHolds, VERSION_PATH } from "../src/worker-proof.js";
import { asNobody, requireAnotherUser } from "./support/another-user.js";
import { type EngineAndWorker, engineAndWorker, testBundle } from "./support/fleet.js";
import { someCredential } from "./support/keys.js";

const here = path.dirname(fileURLToPath(import.meta.url));
let root: string;
let bundle: Awaited<ReturnType<typeof testBundle>> | undefined;
let started: EngineAndWorker | undefined;

beforeAll(async () => {
  requireAnotherUser("restate.attacks.worker.test.ts plants a worker's TMPDIR");
  root = await mkdtemp(path.join(tmpdir(), "pi-restate-worker-attacks-"));
  await chmod(root, 0o1777); // like /tmp: anyone may make a folder here
  bundle = await testBundle();
}, 120_000);

afterAll(async () => {
  await started?.stop();
  await bundle?.remove();
  if (root !== undefined) await rm(root, { recursive: true, force: true });
});

/** What a worker started with `--tmpdir dir` says when it does not start. */
async function refusal(dir: string): Promise<string> {
  const error = await spawnWorker({ bundle: bundle!.file, port: 0, tmpdir: dir, ...someCredential() }).then(
    async (worker) => {
      await worker.stop(0);
      return new Error("the worker started");
    },
    (error: Error) => error,
  );
  return error.message;
}

it("refuses a --tmpdir another user made or may write, and makes a missing one 0700", async () => {
  // made ahead of the worker, at a path it is known to use, by another user
  const planted = path.join(root, "planted");
  asNobody("mkdir", "-m", "0777", planted);
  expect(await refusal(planted)).toContain(
    `worker: the worker's TMPDIR ${planted} belongs to another user (uid 65534); whoever owns it can read or replace ` +
      "the workspace of every case and the temporary files of every tool the worker runs. " +
      "Give --tmpdir a folder of your own (it is made 0700 when missing).",
  );
  // the worker's own, but open to everyone
  const open = path.join(root, "open");
  await mkdir(open);
  await chmod(open, 0o777);
  expect(await refusal(open)).toContain(
    `worker: the worker's TMPDIR ${open} can be written by other users (mode 777); ` +
      "a link planted in it would send the worker's writes elsewhere. Give --tmpdir a new folder (it is made 0700).",
  );
  // the worker's own under a folder others may rename it in
  const under = path.join(root, "open", "tmp");
  expect(await refusal(under)).toContain(
    `the folder ${open} above the worker's TMPDIR ${under} can be written by other users (mode 777)`,
  );
  // nothing of the worker was written in the other user's folder, nor in the open one (but the folder it was to make)
  expect([readdirSync(planted), readdirSync(open), readdirSync(under)]).toEqual([[], ["tmp"], []]);
  // a missing one is made for the worker alone
  const fresh = path.join(root, "fresh", "tmp");
  const worker = await spawnWorker({ bundle: bundle!.file, port: 0, tmpdir: fresh, ...someCredential() });
  await worker.stop(0);
  expect((statSync(fresh).mode & 0o777).toString(8)).toBe("700");
}, 120_000);

it("hands its credential to no process it starts (a tool, a case's check)", async () => {
  started = await engineAndWorker(path.join(root, "engine"), { setups: path.join(here, "support", "env-setups.ts") });
  const { workerSecret } = started.engine.workerCredential;
  const output = await runDurably(started.engine, "child-env", { setup: "child-env", prompt: "print it" });
  const text = JSON.stringify(output.messages);
  expect(text).not.toContain(workerSecret);
  expect(text).toContain("a child sees: unset");
}, 120_000);

/** One HTTP/2 request on `session`; resolves with its status and body. */
function ask(session: http2.ClientHttp2Session, headers: http2.OutgoingHttpHeaders): Promise<[number, string]> {
  return new Promise((resolve, reject) => {
    const stream = session.request(headers);
    let body = "";
    let status = 0;
    stream.setEncoding("utf8");
    stream.on("response", (head) => {
      status = Number(head[":status"]);
    });
    stream.on("data", (chunk: string) => {
      body += chunk;
    });
    stream.on("end", () => resolve([status, body]));
    stream.on("error", reject);
    stream.end();
  });
}

it("holds at most 128 connections that sent only unsigned requests or version questions, and still proves itself", async () => {
  const credential = someCredential();
  const worker = await startWorker({ ...credential });
  const sessions: http2.ClientHttp2Session[] = [];
  try {
    // 300 connections of a local program, each one request that proves nothing, then idle
    const answers: number[] = [];
    for (let i = 0; i < 300; i++) {
      const session = http2.connect(worker.url);
      session.on("error", () => undefined);
      sessions.push(session);
      // an unsigned invocation (401), the SDK's health check under a path that starts like an
      // invocation (200 to anyone: it proves nothing either), the version question
      const headers: http2.OutgoingHttpHeaders = [
        { ":method": "POST", ":path": "/invoke/AgentRun/run", "content-type": "application/vnd.restate.invocation.v6" },
        { ":method": "GET", ":path": "/invoke/health" },
        { ":method": "GET", ":path": VERSION_PATH, [CHALLENGE_HEADER]: newChallenge() },
      ][i % 3]!;
      answers.push((await ask(session, headers).catch(() => [0, ""] as [number, string]))[0]);
    }
    // each was answered (401, or the version), and all but the 128 newest are cut
    expect(answers.slice(-3)).toEqual([401, 200, 200]);
    const open = () => sessions.filter((session) => !session.closed && !session.destroyed).length;
    for (const deadline = Date.now() + 20_000; open() > 128 && Date.now() < deadline; )
      await new Promise((resolve) => setTimeout(resolve, 20));
    expect(open()).toBe(128);
    // the proxy's question on a new connection is still answered, with a proof that holds
    const proxy = http2.connect(worker.url);
    sessions.push(proxy);
    await new Promise((resolve) => proxy.once("connect", resolve));
    const challenge = newChallenge();
    const [status, body] = await ask(proxy, { ":method": "GET", ":path": VERSION_PATH, [CHALLENGE_HEADER]: challenge });
    const answer = JSON.parse(body) as { version: string; proof: string };
    const where = endpoint(proxy.socket.remoteAddress, proxy.socket.remotePort);
    expect([status, proofHolds(credential.workerSecret, challenge, where, answer.version, answer.proof)]).toEqual([
      200,
      true,
    ]);
  } finally {
    for (const session of sessions) session.destroy();
    await worker.close(0);
  }
}, 60_000);

it("says whose port it is when another program took its port, and leaves no folder behind", async () => {
  // a program (another user's, or a worker's impostor) listening on the port first
  const squatter = net.createServer();
  await new Promise<void>((resolve) => squatter.listen(0, "127.0.0.1", resolve));
  const port = (squatter.address() as net.AddressInfo).port;
  const parent = path.join(root, "parent-tmp");
  await mkdir(parent, { mode: 0o700 });
  try {
    const error = await spawnWorker({
      bundle: bundle!.file,
      port,
      env: { TMPDIR: parent },
      ...someCredential(),
    }).then(
      async (worker) => {
        await worker.stop(0);
        return new Error("the worker started");
      },
      (error: Error) => error,
    );
    expect(error.message).toContain(
      `worker: the worker's port 127.0.0.1:${port} is taken by another program. If it is another worker, this one is not needed there; ` +
        "if it is not, it gets no run (the engine's proxy sends runs only to listeners that prove they hold the workers' secret), " +
        "but this worker cannot serve either: free the port, or give --port one the engine's --workers names.",
    );
    expect(readdirSync(parent)).toEqual([]); // its own TMPDIR, made under the parent's, removed again
  } finally {
    await new Promise((resolve) => squatter.close(resolve));
  }
}, 60_000);

it("refuses an identity keys file others may read or another user owns: it holds the workers' secret", async () => {
  const text = `${someCredential().identityKeys[0]}\n${newWorkerSecret()}\n`;
  // copied with the usual umask: any local user reads the secret, and can pass for a worker on a dead worker's port
  const open = path.join(root, "identity-keys-644");
  await writeFile(open, text, { mode: 0o644 });
  expect(() => readWorkerCredential(open)).toThrow(
    `the identity keys file ${open} can be read by other users (mode 644); ` +
      "it holds the workers' secret, with which anyone could pass for a worker and be sent runs. " +
      `Run \`chmod 600 ${open}\`.`,
  );
  // one another user wrote (they know the secret in it)
  const theirs = path.join(root, "identity-keys-theirs");
  asNobody("sh", "-c", `umask 077; printf '%s' '${text.replaceAll("\n", " ")}' > ${theirs}`);
  expect(() => readWorkerCredential(theirs)).toThrow(
    `the identity keys file ${theirs} belongs to another user (uid 65534); it holds the workers' secret, ` +
      "which must be this worker's user's alone. Copy the engine's identity-keys as your own (chmod 600).",
  );
  // the engine's own (0600) is read
  const own = path.join(root, "identity-keys-own");
  await writeFile(own, text, { mode: 0o600 });
  expect(readWorkerCredential(own).identityKeys).toHaveLength(1);
});
