/**
 * Attacks on the engine package that its own security test does not make (issue 55, items 2–4):
 * a folder another local user planted where the engine is told to live, or could swap later, credentials the journal
 * guard missed under other names, a retry backoff that would not back off; and (a later round) a
 * Restate server an engine left behind, connections that ask only the gate's proof question, a
 * `client.json` swapped while it is read, and an engine started under umask 000.
 *
 * The attacks made as another user need root (`runuser -u nobody`); they fail, saying so, without it.
 */
import { spawn, spawnSync } from "node:child_process";
import { readdirSync, renameSync, statSync, symlinkSync } from "node:fs";
import { chmod, mkdir, mkdtemp, readFile, realpath, rm, symlink, writeFile } from "node:fs/promises";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { retryPolicy } from "../src/agent-run.js";
import { readConnection } from "../src/engine-client.js";
import { startEngine } from "../src/engine.js";
import { guardFolder } from "../src/folder-guard.js";
import { startGate } from "../src/gate.js";
import { engineIdentity } from "../src/identity.js";
import { startRestateServer } from "../src/restate-server.js";
import { secretField } from "../src/journal-guard.js";
import { newChallenge } from "../src/worker-proof.js";
import { asNobody } from "./support/another-user.js";

let root: string;

beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), "pi-restate-attacks-"));
  await chmod(root, 0o1777); // like /tmp: anyone may make a folder here
});

afterAll(async () => {
  if (root !== undefined) await rm(root, { recursive: true, force: true });
});

it("refuses an engine folder another local user made (they would know its token, or swap its keys)", async () => {
  const dir = path.join(root, "planted");
  // another user makes the folder first and leaves a credential whose token they know
  asNobody("mkdir", "-m", "0777", dir);
  asNobody("sh", "-c", `printf '{"url":"http://127.0.0.1:1","token":"known-to-nobody"}' > ${dir}/client.json`);
  const started = startEngine({ dir, workers: [], log: () => undefined });
  const engine = await started.catch(() => undefined);
  await engine?.stop();
  await expect(started).rejects.toThrow(
    `the engine's folder ${dir} belongs to another user (uid 65534); whoever owns it can read or replace its credential and keys. ` +
      "Give --dir a folder of your own (it is made 0700 when missing).",
  );
}, 60_000);

it("refuses an engine folder others may write in (a credential planted in it would be taken)", async () => {
  const dir = path.join(root, "open");
  await mkdir(dir);
  await chmod(dir, 0o777);
  asNobody("sh", "-c", `printf '{"url":"http://127.0.0.1:1","token":"known-to-nobody"}' > ${dir}/client.json`);
  const started = startEngine({ dir, workers: [], log: () => undefined });
  const engine = await started.catch(() => undefined);
  await engine?.stop();
  await expect(started).rejects.toThrow(
    `the engine's folder ${dir} can be written by other users (mode 777); ` +
      "a credential or key planted in it would be taken as the engine's. Give --dir a new folder (it is made 0700).",
  );
}, 60_000);

it("refuses an engine folder that is a symbolic link (planted where the engine would make its folder)", async () => {
  const theirs = path.join(root, "theirs");
  asNobody("mkdir", "-m", "0777", theirs);
  const dir = path.join(root, "linked");
  await symlink(theirs, dir);
  const started = startEngine({ dir, workers: [], log: () => undefined });
  const engine = await started.catch(() => undefined);
  await engine?.stop();
  await expect(started).rejects.toThrow(`the engine's folder ${dir} is a symbolic link`);
}, 60_000);

it("finds a credential in a run's options under any of the names and shapes keys travel in", () => {
  const found = (options: unknown) => secretField(options);
  expect(found({ env: { OPENAI_KEY: "sk-1" } })).toBe("options.env.OPENAI_KEY");
  expect(found({ env: { AWS_SECRET_ACCESS_KEY: "abc" } })).toBe("options.env.AWS_SECRET_ACCESS_KEY");
  expect(found({ model: { privateKey: "-----BEGIN PRIVATE KEY-----" } })).toBe("options.model.privateKey");
  expect(found({ accessKey: "abc" })).toBe("options.accessKey");
  expect(found({ key: "sk-ant-abc" })).toBe("options.key");
  expect(found({ headers: { cookie: "session=abc" } })).toBe("options.headers.cookie");
  // a header list of pairs: the name is a value, so the value says it
  expect(found({ headers: [["Authorization", "Bearer sk-abc123456"]] })).toBe("options.headers[0][1]");
  expect(found({ baseUrl: "https://user:pass@models.example/v1" })).toBe("options.baseUrl");
  // what the guard has always found, and what it must let through
  expect(found({ headers: { Authorization: "Bearer x" } })).toBe("options.headers.Authorization");
  expect(found({ env: { OPENAI_API_KEY: "sk-1" } })).toBe("options.env.OPENAI_API_KEY");
  expect(
    found({ model: { apiKeyEnv: "OPENAI_API_KEY" }, baseUrl: "https://models.example/v1", prompt: "Bearer in mind" }),
  ).toBe(undefined);
});

it("refuses a retry backoff that would not back off (0, negative, not a number)", () => {
  for (const bad of [{ maxIntervalMs: 0 }, { initialIntervalMs: -5 }, { maxIntervalMs: Number.NaN }]) {
    expect(() => retryPolicy(bad)).toThrow(
      "a run's retry waits must be whole numbers of ms above 0 (initialIntervalMs, maxIntervalMs): a wait of 0 retries in a busy loop while no worker answers",
    );
  }
  expect(retryPolicy({ initialIntervalMs: 10, maxIntervalMs: 20 })).toEqual({
    initialInterval: 10,
    exponentiationFactor: 2,
    maxInterval: 20,
  });
});

it("hangs up on a peer without the token at once, instead of reading the body it promised for ever", async () => {
  const gate = await startGate({
    token: "t".repeat(43),
    ingressSocket: path.join(root, "none.sock"),
    adminSocket: path.join(root, "none.sock"),
  });
  try {
    const socket = net.connect(gate.port, "127.0.0.1");
    let reply = "";
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => {
      reply += chunk;
    });
    socket.write(
      "POST /AgentRun/x/run HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\nthe first bytes of 100 MB",
    );
    // the peer trickles its body: a gate reading on never ends; an answer ends as soon as the 401 is written
    const trickle = setInterval(() => socket.write("."), 200);
    const ended = await new Promise<string>((resolve) => {
      socket.on("close", () => resolve("closed"));
      socket.on("error", () => undefined);
      setTimeout(() => resolve("still reading after 20 s"), 20_000).unref();
    });
    clearInterval(trickle);
    socket.destroy();
    expect(ended).toBe("closed");
    expect(reply.split("\r\n")[0]).toBe("HTTP/1.1 401 Unauthorized");
  } finally {
    await gate.close();
  }
}, 60_000);

it("refuses a client.json another user wrote (it would send our runs to their address)", async () => {
  const dir = path.join(root, "their-engine");
  asNobody("mkdir", "-m", "0755", dir);
  asNobody("sh", "-c", `umask 077; printf '{"url":"http://127.0.0.1:1","token":"theirs"}' > ${dir}/client.json`);
  await expect(readConnection(dir)).rejects.toThrow(
    `${path.join(dir, "client.json")} belongs to another user (uid 65534): an engine's credential is its owner's alone. ` +
      "Use the client.json of an engine you started, or a copy of it you made (chmod 600).",
  );
});

it("refuses an engine folder under a folder others may write in (they could swap it for their own)", async () => {
  const open = path.join(root, "open-above");
  await mkdir(open);
  await chmod(open, 0o777); // not sticky: anyone may rename what is in it
  const dir = path.join(open, "engine");
  const started = startEngine({ dir, workers: [], log: () => undefined });
  const engine = await started.catch(() => undefined);
  await engine?.stop();
  await expect(started).rejects.toThrow(
    `the folder ${await realpath(open)} above the engine's folder ${dir} can be written by other users (mode 777), who could swap the engine's folder for their own. ` +
      `Make it writable by its owner only (chmod go-w ${await realpath(open)}), or sticky like /tmp (chmod +t ${await realpath(open)}), or give --dir a folder elsewhere.`,
  );
}, 60_000);

it("notices a folder above the engine's made writable by others after the start", async () => {
  const above = path.join(root, "above-later");
  const dir = path.join(above, "engine");
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(above, 0o755);
  const guard = await guardFolder(dir);
  await guard.check(); // as it was
  await chmod(above, 0o777);
  await expect(guard.check()).rejects.toThrow(
    `the folder ${await realpath(above)} above the engine's folder ${dir} can be written by other users (mode 777)`,
  );
});

it("stops the engine, writing nothing more, when its folder is swapped for another user's while it runs", async () => {
  const above = path.join(root, "swapped-above");
  const dir = path.join(above, "engine");
  await mkdir(above, { mode: 0o755 });
  let back!: (line: string) => void;
  const restarted = new Promise<string>((resolve) => {
    back = resolve;
  });
  const engine = await startEngine({
    dir,
    workers: [],
    watchMs: 100,
    log: (line) => {
      if (line.includes("is back")) back(line);
    },
  });
  try {
    const theirs = path.join(root, "theirs-for-swap");
    asNobody("mkdir", "-m", "0777", theirs);
    // the swap (what anyone who can write the folder above could do), and the Restate server
    // dying at that moment, whose restart would start it on their folder: no await in between,
    // so the engine cannot look at its folder half-way
    renameSync(dir, path.join(above, "engine-moved"));
    symlinkSync(theirs, dir);
    engine.server().process.kill("SIGKILL");
    const outcome = await Promise.race([engine.failed, restarted]);
    expect(outcome).toBeInstanceOf(Error);
    expect((outcome as Error).message).toContain(
      `the engine's folder ${dir} was swapped while it ran (it is a symbolic link now): the engine stopped and wrote nothing more there. ` +
        "Find who could write the folder above it, then start the engine again on its real folder.",
    );
    // it stopped: its Restate server is gone, its gate answers no more, and nothing of it is in their folder
    await new Promise((resolve) => {
      const server = engine.server().process;
      if (server.exitCode !== null || server.signalCode !== null) resolve(undefined);
      else server.once("exit", resolve);
    });
    await expect(fetch(engine.url)).rejects.toThrow();
    expect(readdirSync(theirs)).toEqual([]);
  } finally {
    await engine.stop();
  }
}, 120_000);

it("ends a Restate server an engine left without a pid file, and takes no other user's process for one", async () => {
  const dir = path.join(root, "left-behind");
  await (await startEngine({ dir, workers: [], log: () => undefined })).stop();
  // a server the last engine started but never named in restate.pid (it was SIGKILLed in between,
  // or before setpriv set the parent-death signal): it holds the folder's sockets
  const left = await startRestateServer({ dir, identityKeyFile: (await engineIdentity(dir)).privateKeyFile });
  // and a process of another user whose command line names the same config (a shell waiting on
  // its child), its pid in the pid file
  const config = path.join(dir, "restate.toml");
  const pids = path.join(root, "their-pids");
  const theirs = spawn(
    "runuser",
    [
      "-u",
      "nobody",
      "--",
      "sh",
      "-c",
      `sleep 600 & echo $$ $! > ${pids}.tmp; mv ${pids}.tmp ${pids}; wait`,
      "--config-file",
      config,
    ],
    { stdio: "ignore" },
  );
  let theirPids: number[] = [];
  const alive = (pid: number) => spawnSync("kill", ["-0", String(pid)]).status === 0;
  try {
    const lines: string[] = [];
    while (theirPids.length === 0) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      theirPids = (await readFile(pids, "utf8").catch(() => "")).split(/\s+/).filter(Boolean).map(Number);
    }
    const [theirPid] = theirPids;
    await writeFile(path.join(dir, "restate.pid"), `${theirPid}\n`);
    const engine = await startEngine({ dir, workers: [], log: (line) => lines.push(line) });
    try {
      // the other user's process was left alone (looked at once the engine started: the moment a kill would have come)
      expect(alive(theirPid!)).toBe(true);
      // the leftover was ended before the engine's own server started (a hang bound, not a speed)
      const ended = await Promise.race([left.exited, new Promise((resolve) => setTimeout(resolve, 30_000, "running"))]);
      expect(ended).toEqual({ code: null, signal: "SIGKILL" });
      // the engine's server is its own and stays up
      await engine.stop();
      expect(lines.filter((line) => line.includes("exited"))).toEqual([]);
    } finally {
      await engine.stop();
    }
  } finally {
    await left.stop(0);
    for (const pid of theirPids) if (alive(pid)) process.kill(pid, "SIGKILL");
    theirs.kill("SIGKILL");
  }
}, 120_000);

it("keeps connections that only asked the gate's proof question under its guard, whatever body they promise", async () => {
  // the one question the gate answers without the token, then a body without end, a byte a second:
  // such a connection must count as waiting for its request (time limit, cap), or any local user
  // holds as many open as they like
  const gate = await startGate({
    token: "t".repeat(43),
    ingressSocket: path.join(root, "none.sock"),
    adminSocket: path.join(root, "none.sock"),
    maxPending: 8,
    pendingMs: 1000,
  });
  const sockets: net.Socket[] = [];
  try {
    const answered: string[] = [];
    for (let i = 0; i < 20; i++) {
      const socket = net.connect(gate.port, "127.0.0.1");
      socket.on("error", () => undefined);
      socket.once("data", (chunk: Buffer) => answered.push(chunk.toString("latin1").split("\r\n")[0]!));
      socket.write(
        `GET /pi-course-restate/gate HTTP/1.1\r\nhost: x\r\nx-pi-restate-challenge: ${newChallenge()}\r\n` +
          "content-length: 1000000000\r\n\r\n",
      );
      sockets.push(socket);
    }
    const trickle = setInterval(() => {
      for (const socket of sockets) if (!socket.destroyed) socket.write(".");
    }, 200);
    // every one is cut: the 12 beyond the cap as they come, the others after their second (a hang bound, not a speed)
    const closed = await Promise.race([
      Promise.all(sockets.map((socket) => new Promise((resolve) => socket.once("close", resolve)))).then(() => "all"),
      new Promise((resolve) => setTimeout(resolve, 20_000, "some still open after 20 s")),
    ]);
    clearInterval(trickle);
    expect(closed).toBe("all");
    expect(gate.cut()).toBe(20);
    // they were answered first (the proof question, not a refusal), those not crowded out before
    expect(answered.length).toBeGreaterThan(0);
    expect(new Set(answered)).toEqual(new Set(["HTTP/1.1 200 OK"]));
  } finally {
    for (const socket of sockets) socket.destroy();
    await gate.close();
  }
}, 60_000);

it("never takes another user's client.json swapped in while it reads ours (a folder others may rename in)", async () => {
  const dir = path.join(root, "swapped-client");
  await mkdir(dir);
  await chmod(dir, 0o777); // a shared folder, not sticky: anyone may rename what is in it
  const file = path.join(dir, "client.json");
  await writeFile(file, JSON.stringify({ url: "http://127.0.0.1:1111", token: "ours" }), { mode: 0o600 });
  // another user swaps their own client.json in and ours back, without end
  const swap =
    `cd ${dir} && umask 077 && printf '{"url":"http://127.0.0.1:6666","token":"theirs"}' > theirs && ` +
    "while :; do mv client.json ours.bak; mv theirs client.json; mv client.json theirs; mv ours.bak client.json; done";
  const swapper = spawn("runuser", ["-u", "nobody", "--", "sh", "-c", `echo $$ > ${dir}/swapper.pid; ${swap}`], {
    stdio: "ignore",
  });
  try {
    const got = { ours: 0, theirs: 0, refused: 0 };
    // reads until 10,000 met the swap (refused: no file there, or theirs), a count, not a time;
    // before, 2 to 95 reads in three such runs came back with their address and token
    while (got.refused < 10_000) {
      const connection = await readConnection(file).catch(() => undefined);
      if (connection === undefined) got.refused++;
      else if (connection.token === "theirs") got.theirs++;
      else got.ours++;
    }
    expect(got.theirs).toBe(0);
    expect(got.ours).toBeGreaterThan(0); // it read ours while the swaps went on
  } finally {
    const pid = Number(await readFile(path.join(dir, "swapper.pid"), "utf8").catch(() => "0"));
    if (pid > 0) process.kill(pid, "SIGKILL");
    swapper.kill("SIGKILL");
  }
}, 120_000);

it("keeps the Restate server's data and sockets its owner's whatever the umask, so the folder is not the one barrier", async () => {
  const dir = path.join(root, "umask");
  const umask = process.umask(0o000); // an engine started from a shell or service with umask 000
  const engine = await startEngine({ dir, workers: [], log: () => undefined }).finally(() => process.umask(umask));
  try {
    const node = path.join(dir, "data", "engine");
    const modes = ["", "admin.sock", "ingress.sock", "db"].map((name) => [
      name,
      (statSync(path.join(node, name)).mode & 0o777).toString(8),
    ]);
    expect(modes.filter(([, mode]) => !mode!.endsWith("00"))).toEqual([]);
    // the owner opens the folder to others (to let them read a log, say): its admin API stays shut to them
    await chmod(dir, 0o755);
    await chmod(path.join(dir, "data"), 0o755);
    const connect = `require("node:net").connect(${JSON.stringify(path.join(node, "admin.sock"))})
      .on("connect", () => { console.log("connected"); process.exit(0); })
      .on("error", (error) => { console.log(error.code); process.exit(0); });`;
    const asked = spawnSync("runuser", ["-u", "nobody", "--", process.execPath, "-e", connect], { encoding: "utf8" });
    expect(asked.stdout.trim()).toBe("EACCES");
  } finally {
    await engine.stop();
  }
}, 60_000);
