// Every attack of issue 55 on the engine, run by the security test as ANOTHER local user
// (`runuser -u nobody`). Plain Node, no packages: what any user of the machine can run.
// Argument: JSON { gate, proxy, worker, version, engineDir, caseDir, victim, held, invocationId, pids }.
// Prints one JSON object: attack name → what happened ("401", "EACCES", "EPERM", "200 …" …).
import { generateKeyPairSync, sign } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync, chmodSync } from "node:fs";
import http from "node:http";
import http2 from "node:http2";
import path from "node:path";

const t = JSON.parse(process.argv[2]);
const out = {};

/** What a step ended with: an HTTP status (and the start of the body) or an error code. */
async function attempt(name, step) {
  try {
    out[name] = await step();
  } catch (error) {
    out[name] = error.code ?? error.cause?.code ?? error.message;
  }
}

async function viaFetch(url, init) {
  const response = await fetch(url, { ...init, signal: AbortSignal.timeout(10_000) });
  const text = await response.text();
  return response.status === 401 ? "401" : `${response.status} ${text.slice(0, 200)}`;
}

function viaSocket(socketPath, method, route, body) {
  return new Promise((resolve, reject) => {
    const request = http.request(
      { socketPath, method, path: route, headers: { host: "x", "content-type": "application/json" } },
      (response) => {
        let text = "";
        response.on("data", (c) => (text += c));
        response.on("end", () => resolve(`${response.statusCode} ${text.slice(0, 200)}`));
      },
    );
    request.on("error", reject);
    request.end(body);
  });
}

function viaH2(url, route, headers, body) {
  return new Promise((resolve, reject) => {
    const session = http2.connect(url);
    session.on("error", reject);
    const stream = session.request({
      ":method": "POST",
      ":path": route,
      "content-type": "application/vnd.restate.invocation.v5",
      ...headers,
    });
    let status = 0;
    let text = "";
    stream.on("response", (h) => (status = h[":status"]));
    stream.on("data", (c) => (text += c));
    stream.on("end", () => {
      session.close();
      resolve(status === 401 ? "401" : `${status} ${text.slice(0, 200)}`);
    });
    stream.on("error", reject);
    stream.end(body ?? "");
  });
}

/** A request identity JWT as Restate makes one, but signed with this user's own key. */
function forgedHeaders(route) {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  const raw = Buffer.from(publicKey.export({ format: "jwk" }).x, "base64url");
  const alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
  let n = BigInt(`0x${raw.toString("hex")}`);
  let kid = "";
  while (n > 0n) {
    kid = alphabet[Number(n % 58n)] + kid;
    n /= 58n;
  }
  const now = Math.floor(Date.now() / 1000);
  const header = Buffer.from(JSON.stringify({ alg: "EdDSA", typ: "JWT", kid: `publickeyv1_${kid}` })).toString(
    "base64url",
  );
  const claims = Buffer.from(JSON.stringify({ aud: route, iat: now, nbf: now - 60, exp: now + 60 })).toString(
    "base64url",
  );
  const signature = sign(null, Buffer.from(`${header}.${claims}`), privateKey).toString("base64url");
  return { "x-restate-signature-scheme": "v1", "x-restate-jwt-v1": `${header}.${claims}.${signature}` };
}

// the case folder this user makes: its check would leave `pwned` (with the uid it ran as) beside it
mkdirSync(t.caseDir, { recursive: true });
writeFileSync(path.join(t.caseDir, "task.md"), "Say hello.\n");
writeFileSync(path.join(t.caseDir, "script.json"), JSON.stringify({ turns: [{ text: "hello" }] }));
writeFileSync(path.join(t.caseDir, "case.json"), JSON.stringify({ timeLimitSeconds: 30, maxTurns: 2 }));
writeFileSync(path.join(t.caseDir, "check"), `#!/bin/sh\nid -u > "${t.caseDir}/pwned"\n`);
chmodSync(t.caseDir, 0o777);
chmodSync(path.join(t.caseDir, "check"), 0o777);

const guessed = { authorization: "Bearer guessed-token" };
const evalBody = JSON.stringify({ caseDir: t.caseDir, repeat: 0 });
const sockets = path.join(t.engineDir, "data", "engine");

// 1. submit an EvalRun with a case folder it made
await attempt("submit: gate, no credential", () =>
  viaFetch(`${t.gate}/EvalRun/attack-1/run/send`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: evalBody,
  }),
);
await attempt("submit: gate, guessed credential", () =>
  viaFetch(`${t.gate}/EvalRun/attack-2/run/send`, {
    method: "POST",
    headers: { "content-type": "application/json", ...guessed },
    body: evalBody,
  }),
);
await attempt("submit: ingress socket", () =>
  viaSocket(path.join(sockets, "ingress.sock"), "POST", "/EvalRun/attack-3/run/send", evalBody),
);
await attempt(
  "read the credential file",
  () => readFileSync(path.join(t.engineDir, "client.json"), "utf8").slice(0, 0) + "read",
);
await attempt(
  "read the signing key",
  () => readFileSync(path.join(t.engineDir, "request-identity.pem"), "utf8").slice(0, 0) + "read",
);
await attempt("write the workers' key file", () => {
  writeFileSync(path.join(t.engineDir, "identity-keys"), "publickeyv1_x\n");
  return "written";
});
// 5. unsigned, and self-signed, requests to a worker (directly and through the engine's proxy)
await attempt("worker: unsigned discover", () => viaH2(t.worker, "/discover", {}));
await attempt("worker: unsigned EvalRun", () => viaH2(t.worker, "/invoke/EvalRun/run", {}));
await attempt("worker: self-signed EvalRun", () =>
  viaH2(t.worker, "/invoke/EvalRun/run", forgedHeaders("/invoke/EvalRun/run")),
);
await attempt("proxy: unsigned EvalRun", () => viaH2(t.proxy, `/v/${t.version}/invoke/EvalRun/run`, {}));
await attempt("proxy: unsigned AgentRun", () => viaH2(t.proxy, "/invoke/AgentRun/run", {}));

// 2. read a victim run's output
await attempt("output: gate", () => viaFetch(`${t.gate}/restate/workflow/AgentRun/${t.victim}/output`));
await attempt("output: gate, guessed credential", () =>
  viaFetch(`${t.gate}/restate/workflow/AgentRun/${t.victim}/output`, { headers: guessed }),
);
await attempt("output: ingress socket", () =>
  viaSocket(path.join(sockets, "ingress.sock"), "GET", `/restate/workflow/AgentRun/${t.victim}/output`),
);
await attempt("output: Restate's files", () => {
  mkdirSync(path.join(t.engineDir, "data", "engine", "db", "probe"));
  return "listed";
});

// 3. list runs and deployments
await attempt("list deployments: gate", () => viaFetch(`${t.gate}/admin/deployments`));
await attempt("list runs: gate", () =>
  viaFetch(`${t.gate}/admin/query`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: '{"query":"SELECT id FROM sys_invocation"}',
  }),
);
await attempt("list deployments: admin socket", () =>
  viaSocket(path.join(sockets, "admin.sock"), "GET", "/deployments"),
);
await attempt("list runs: admin socket", () =>
  viaSocket(path.join(sockets, "admin.sock"), "POST", "/query", '{"query":"SELECT id FROM sys_invocation"}'),
);

// 4. kill or cancel a running run
for (const what of ["cancel", "kill"]) {
  await attempt(`${what}: gate`, () =>
    viaFetch(`${t.gate}/admin/invocations/${t.invocationId}/${what}`, { method: "PATCH" }),
  );
  await attempt(`${what}: gate, guessed credential`, () =>
    viaFetch(`${t.gate}/admin/invocations/${t.invocationId}/${what}`, { method: "PATCH", headers: guessed }),
  );
  await attempt(`${what}: admin socket`, () =>
    viaSocket(path.join(sockets, "admin.sock"), "PATCH", `/invocations/${t.invocationId}/${what}`),
  );
}
for (const [name, pid] of Object.entries(t.pids)) {
  await attempt(`SIGKILL the ${name}`, () => {
    process.kill(pid, "SIGKILL");
    return "killed";
  });
}
process.stdout.write(JSON.stringify(out));
