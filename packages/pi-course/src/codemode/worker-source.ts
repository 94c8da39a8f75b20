/**
 * Chapter 16: the code of the sandbox's worker thread, as text (the worker is started with
 * `eval: true`, so the same text runs under tsx, vitest and the built package alike).
 *
 * The worker holds no VM between scripts: each `run` message gets a fresh QuickJS VM from the
 * wasm module the host compiled once, with the host's limits (memory, stack, an interrupt flag
 * in shared memory that the host raises to stop a script). Inside the VM a script sees only
 * `tools.<name>(args)` (async: the call crosses to the host as JSON, which runs it through the
 * agent's tool pipeline) and `console.*` (captured); no timers, network, process or filesystem,
 * because QuickJS has none and none are given.
 *
 * Protocol (every message carries the run's `runId`):
 * host → worker: `run {code, names, limits}`, `reply {callId, ok, text}`, `cancel`;
 * worker → host: `call {callId, name, args}` (args as JSON text), `done {ok, value?, error?, logs}`.
 */
export const WORKER_SOURCE = String.raw`
"use strict";
const { parentPort, workerData } = require("node:worker_threads");
const interrupt = new Int32Array(workerData.interrupt);
const loaded = import(workerData.quickjsUrl);

const PRELUDE = "(" + function (call, log, names) {
  const format = (values) =>
    values
      .map((value) => {
        if (typeof value === "string") return value;
        try {
          const json = JSON.stringify(value);
          return json === undefined ? String(value) : json;
        } catch (error) {
          return String(value);
        }
      })
      .join(" ");
  const tools = {};
  for (const name of names) {
    tools[name] = async function (args) {
      const json = JSON.stringify(args === undefined ? {} : args);
      if (json === undefined) throw new TypeError("tools." + name + ": the arguments must be JSON data");
      const answer = await call(name, json);
      if (answer.startsWith("!")) throw new Error(answer.slice(1));
      return answer.slice(1);
    };
  }
  const consoleObject = {};
  for (const level of ["log", "info", "warn", "error", "debug"]) {
    consoleObject[level] = (...values) => log(level, format(values));
  }
  Object.defineProperty(globalThis, "tools", { value: Object.freeze(tools), enumerable: false });
  Object.defineProperty(globalThis, "console", { value: Object.freeze(consoleObject), enumerable: false });
}.toString() + ")";

let current;

parentPort.on("message", (message) => {
  loaded.then(
    (quickjs) => handle(quickjs, message),
    (error) => parentPort.postMessage({ type: "done", runId: message.runId, ok: false, logs: [],
      error: { kind: "sandbox", message: "the sandbox could not load QuickJS: " + String(error) } }),
  );
});

function handle(quickjs, message) {
  if (message.type === "run") return start(quickjs, message).catch((error) => end(message.runId, failure(error)));
  if (current === undefined || current.runId !== message.runId) return;
  if (message.type === "reply") return reply(message);
  if (message.type === "cancel") return end(message.runId, { ok: false, error: { kind: "aborted", message: "cancelled" } });
}

async function start(quickjs, { runId, code, names, limits }) {
  const run = { runId, vm: undefined, pending: new Map(), logs: [], logChars: 0, logsCut: 0, calls: 0, limits };
  current = run;
  const vm = await quickjs.QuickJS.create({
    wasm: workerData.module,
    memoryLimit: limits.memoryBytes,
    maxStackSize: limits.maxStackBytes,
    interruptHandler: () => Atomics.load(interrupt, 0) >= runId,
  });
  run.vm = vm;
  if (current !== run) return vm.dispose();
  const call = vm.newFunction("call", (nameHandle, argsHandle) => {
    const deferred = vm.newPromise();
    const callId = ++run.calls;
    run.pending.set(callId, deferred);
    parentPort.postMessage({ type: "call", runId, callId, name: nameHandle.toString(), args: argsHandle.toString() });
    return deferred.handle;
  });
  const log = vm.newFunction("log", (levelHandle, textHandle) => {
    const line = (levelHandle.toString() === "log" ? "" : levelHandle.toString() + ": ") + textHandle.toString();
    if (run.logChars + line.length <= limits.maxOutputChars) {
      run.logs.push(line);
      run.logChars += line.length + 1;
    } else run.logsCut++;
    return vm.undefined;
  });
  const prelude = vm.evalCode(PRELUDE, "prelude.js");
  const namesHandle = vm.hostToHandle(names);
  vm.callFunction(prelude, vm.undefined, call, log, namesHandle).dispose();
  for (const handle of [prelude, namesHandle, call, log]) handle.dispose();
  const wrapped =
    "(async () => { const value = await (async () => {\n" + code + "\n})();\n" +
    "return value === undefined ? undefined : JSON.stringify(value); })()";
  const promise = vm.evalCode(wrapped, "script.js");
  const settled = vm.resolvePromise(promise);
  vm.executePendingJobs();
  const outcome = await settled;
  promise.dispose();
  if (current !== run) return;
  if ("error" in outcome) {
    const error = vm.dump(outcome.error);
    outcome.error.dispose();
    return end(runId, { ok: false, error: describe(error) });
  }
  const value = outcome.value.isUndefined ? undefined : outcome.value.toString();
  outcome.value.dispose();
  end(runId, { ok: true, value });
}

function reply({ callId, ok, text }) {
  const run = current;
  const deferred = run.pending.get(callId);
  if (deferred === undefined) return;
  run.pending.delete(callId);
  try {
    const answer = run.vm.newString((ok ? "=" : "!") + text);
    deferred.resolve(answer);
    answer.dispose();
    run.vm.executePendingJobs();
  } catch (error) {
    end(run.runId, failure(error));
  }
}

function end(runId, result) {
  const run = current;
  if (run === undefined || run.runId !== runId) return;
  current = undefined;
  const logs = run.logs;
  if (run.logsCut > 0) logs.push("[" + run.logsCut + " more console lines cut: output limit reached]");
  try {
    run.vm?.dispose();
  } catch {}
  parentPort.postMessage({ type: "done", runId, logs, ...result });
}

function failure(error) {
  // a trap of the wasm machine itself (not a JavaScript error of the script): the VM is broken
  if (error instanceof WebAssembly.RuntimeError) {
    return { ok: false, error: { kind: "sandbox", message: "the sandbox crashed: RuntimeError: " + error.message } };
  }
  return { ok: false, error: describe(error) };
}

function describe(error) {
  if (error !== null && typeof error === "object") {
    const name = typeof error.name === "string" ? error.name : "Error";
    const message = typeof error.message === "string" ? error.message : String(error);
    return { kind: "script", message: name + ": " + message };
  }
  return { kind: "script", message: "thrown: " + String(error) };
}
`;
