/**
 * The durable agent run: the `AgentRun` workflow of Restate, one workflow per run id.
 *
 * Its `run` handler is chapter 7's loop, unchanged, in an `Agent` whose model and tools are
 * journaled (`journaledModel`, `journaledTools`): each model turn and each tool call is a step of
 * the engine, recorded once. The handler itself is the deterministic part: a worker that picks the
 * run up after another died replays it, and every recorded step hands back its recorded result
 * without running, so the loop walks the same path to the first step that has none.
 *
 * Models and tools are code, not data: a worker is started with named `RunSetup`s, and a run
 * names the one it uses (`RunInput.setup`) with options that are plain JSON. Every worker serving
 * the deployment must know the same setups.
 *
 * The workflow's result is the run's transcript: the messages a local `Agent` would hold (and its
 * session file would record) after the same prompt.
 */
import * as restate from "@restatedev/restate-sdk";
import { Agent, type AgentMessage, type AgentTool, type Model } from "@pi/course";
import { journaledModel } from "./journaled-model.js";
import { secretField, secretInJournal } from "./journal-guard.js";
import { journaledTools } from "./journaled-tool.js";
import { inputDigest } from "./input-digest.js";
import { MAX_STEP_SECONDS, type RunLimits, resolveLimits } from "./run-limits.js";
import { Steps } from "./steps.js";

/** The durable promise a run resolves with its input's digest as its first act (input-digest.ts). */
export const INPUT_PROMISE = "input-digest";

/** The workflow's name (the ingress path is `/AgentRun/<run id>/run`). */
export const AGENT_RUN = "AgentRun";

/** What a run is asked with (plain JSON: it travels through the engine). */
export interface RunInput {
  /** The name of a setup every worker was started with. */
  setup: string;
  /** The user's prompt. */
  prompt: string;
  /** Handed to the setup as it is. */
  options?: unknown;
  /** The run's time limits (run-limits.ts: default 3600 s a run, 600 s a step). */
  limits?: RunLimits;
}

/** What a run gives back: its transcript, and why it failed if it did. */
export interface RunOutput {
  messages: AgentMessage[];
  errorMessage?: string;
}

/** What a setup makes for one run. */
export interface RunParts {
  model: Model;
  tools: AgentTool<any, any>[];
  systemPrompt?: string;
  /** The most model turns of the run (default: the Agent's, 50). */
  maxTurns?: number;
}

/**
 * Makes the model and tools of one run. Contract: called again on every worker that replays the
 * run, so it must make the same parts from the same input (no I/O whose answer can change).
 */
export type RunSetup = (input: { runId: string; options: unknown }) => RunParts | Promise<RunParts>;

/** The setups a worker knows, by name. */
export type RunSetups = Readonly<Record<string, RunSetup>>;

/** The backoff of the engine's retries of a run (ms); `retryPolicy` says what is not given. */
export interface RetryOptions {
  /** The first wait (default 50 ms: a dead worker's run moves on at once). */
  initialIntervalMs?: number;
  /** The longest wait (default 1000 ms: a worker that comes back gets its runs within a second). */
  maxIntervalMs?: number;
}

/**
 * How the engine retries a run whose worker went away or failed: doubling waits, capped, and no
 * number of attempts after which it gives up. A run whose workers are all gone for an hour goes on
 * within `maxIntervalMs` of one coming back; nobody has to resume it. (No `maxAttempts` is
 * advertised, so the server's default applies: `startRestateServer` makes it "unlimited". An earlier
 * policy paused a run for good after 100 attempts, about 105 s without a worker.) A run that can
 * never succeed (its journal does not match the code) is retried the same way until cancelled:
 * `cancelRun` ends it.
 */
export function retryPolicy(options: RetryOptions = {}): restate.RetryPolicy {
  const initialInterval = options.initialIntervalMs ?? 50;
  const maxInterval = options.maxIntervalMs ?? 1000;
  if (![initialInterval, maxInterval].every((ms) => Number.isInteger(ms) && ms > 0)) {
    throw new RangeError(
      "a run's retry waits must be whole numbers of ms above 0 (initialIntervalMs, maxIntervalMs): " +
        "a wait of 0 retries in a busy loop while no worker answers",
    );
  }
  return { initialInterval, exponentiationFactor: 2, maxInterval };
}

/** The default policy (`retryPolicy()`). */
export const RETRY_POLICY: restate.RetryPolicy = retryPolicy();

/** The `AgentRun` workflow over `setups`. */
export function agentRunWorkflow(setups: RunSetups, options: { retry?: RetryOptions } = {}) {
  return restate.workflow({
    name: AGENT_RUN,
    handlers: {
      run: async (ctx: restate.WorkflowContext, input: RunInput): Promise<RunOutput> => {
        // first, so a second submission of this id can be compared with it (`submitRun`)
        await ctx.promise<string>(INPUT_PROMISE).resolve(inputDigest(input ?? null));
        const setup = setups[input?.setup];
        if (setup === undefined) {
          const known = Object.keys(setups).join(", ") || "(none)";
          throw new restate.TerminalError(
            `AgentRun: no setup named ${JSON.stringify(input?.setup)}; this worker knows: ${known}. ` +
              "Start every worker with the same setups module.",
          );
        }
        if (typeof input.prompt !== "string")
          throw new restate.TerminalError("AgentRun: input.prompt must be a string");
        const secret = secretField(input.options);
        if (secret !== undefined) throw new restate.TerminalError(`AgentRun: ${secretInJournal(secret)}`);
        const limits = resolveLimits(input.limits);
        if (typeof limits === "string") throw new restate.TerminalError(`AgentRun: ${limits}`);
        const startedAt = await ctx.date.now();
        const parts = await setup({ runId: ctx.key, options: input.options });
        const steps = new Steps(ctx, {
          deadline: startedAt + limits.runSeconds * 1000,
          stepMs: limits.stepSeconds * 1000,
          runLimitText: `run ${ctx.key} passed its time limit of ${limits.runSeconds} s`,
        });
        const agent = new Agent({
          initialState: {
            model: journaledModel(steps, parts.model),
            tools: journaledTools(steps, parts.tools),
            ...(parts.systemPrompt !== undefined && { systemPrompt: parts.systemPrompt }),
          },
          ...(parts.maxTurns !== undefined && { maxTurns: parts.maxTurns }),
        });
        // a step the engine failed (a cancelled invocation) fails the run with the engine's error
        await Promise.race([agent.prompt(input.prompt), steps.failed]);
        const { messages, errorMessage } = agent.state;
        return { messages: [...messages], ...(errorMessage !== undefined && { errorMessage }) };
      },
      /** The digest of the input the run was started with, once it started (waits until then). */
      input: restate.handlers.workflow.shared(
        async (ctx: restate.WorkflowSharedContext): Promise<string> => ctx.promise<string>(INPUT_PROMISE).get(),
      ),
    },
    // a step is cut by the worker at its own limit (run-limits.ts), before Restate would abort it
    options: { retryPolicy: retryPolicy(options.retry), inactivityTimeout: (MAX_STEP_SECONDS + 60) * 1000 },
  });
}
