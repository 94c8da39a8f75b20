#!/usr/bin/env node
/**
 * `pi-course-restate`: the engine, workers and runs from a shell. Each command is a module of
 * `commands/` (the worker's is `worker-command.ts`, which a worker bundle runs too); this file only
 * dispatches, and says `--help` (exit 0) for the program and for every command.
 *
 * Exit codes: 0 done, 1 the work failed (the error on stderr names the address and what to do),
 * 2 a usage error.
 */
import "./node20.js";
import { bundle } from "./commands/bundle.js";
import { type Command, UsageError } from "./commands/command.js";
import { engine } from "./commands/engine.js";
import { evalCommand } from "./commands/eval.js";
import { cancel, list, status } from "./commands/runs.js";
import { result, submit } from "./commands/submit.js";
import { runWorkerCommand, WORKER_HELP } from "./worker-command.js";

const worker: Command = {
  name: "worker",
  summary: "start a worker (agent runs of a setups module, eval cases)",
  help: WORKER_HELP,
  async run(args) {
    await runWorkerCommand(args);
    return 0;
  },
};

const COMMANDS: readonly Command[] = [engine, worker, bundle, submit, status, result, cancel, list, evalCommand];

const HELP = `usage: pi-course-restate COMMAND [options]

Durable agent runs and eval suites of @pi/course on Restate.

${COMMANDS.map((c) => `  ${c.name.padEnd(8)} ${c.summary}`).join("\n")}

Run \`pi-course-restate COMMAND --help\` for a command's options.
`;

async function main(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  if (name === undefined) {
    process.stderr.write(HELP);
    return 2;
  }
  if (name === "--help" || name === "-h" || name === "help") {
    process.stdout.write(HELP);
    return 0;
  }
  const command = COMMANDS.find((c) => c.name === name);
  if (command === undefined) {
    process.stderr.write(`error: unknown command ${JSON.stringify(name)}.\n\n${HELP}`);
    return 2;
  }
  if (args.includes("--help") || args.includes("-h")) {
    process.stdout.write(command.help);
    return 0;
  }
  try {
    return await command.run(args);
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`error: ${error.message}.\nRun \`pi-course-restate ${name} --help\` for the options.\n`);
      return 2;
    }
    process.stderr.write(`${name}: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  },
);
