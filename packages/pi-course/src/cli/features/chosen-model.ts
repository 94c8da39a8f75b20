/**
 * The model a runtime uses, chosen by name (chapter 18): the catalogue (built in, plus
 * `~/.pi-course/models.json`), the choice at start (`--model`, `--thinking`), the choice a resumed
 * session recorded, `/model` and `/thinking` in a conversation (each recorded in the session as a
 * `model_change` entry), and the real model that answered (a `model_route` entry) when a fallback
 * list or a virtual model routed it. Set up on the runtime by the models feature (models.ts).
 */
import { ModelCatalogue } from "../../model-choice/catalogue.js";
import { loadModelsFile } from "../../model-choice/models-file.js";
import type { RouteReport } from "../../model-choice/virtual-model.js";
import type { ThinkingLevel } from "../../model.js";
import type { ModelChangeEntry, ModelRouteEntry } from "../../session/types.js";
import { CliUsageError } from "../usage-error.js";
import { SessionFile, messagesOf } from "../../session/session.js";
import type { AssistantMessage } from "../../types.js";
import { serverOf, setUpModel, type ModelSetup } from "../model-setup.js";
import { serverModelIds } from "../server-models.js";
import type { RunOptions } from "../run-options.js";
import { SessionFolder } from "../sessions.js";
import { withPairingCheck } from "../pairing.js";
import type { Runtime, RuntimePart } from "../runtime.js";

/** The model a runtime uses, as chosen; see the module comment. */
export class ChosenModel implements RuntimePart {
  /** The models the runtime knows by name (built in, plus `~/.pi-course/models.json`). */
  catalogue: ModelCatalogue = ModelCatalogue.builtin();
  /** The model in use as chosen (set before the session is chosen). */
  choice: ModelSetup | undefined;

  constructor(private readonly runtime: Runtime) {}

  /** The models file, then the choice the options name. */
  async beforeSession(notes: (text: string) => void): Promise<void> {
    const { options, demoDelayMs } = this.runtime;
    if (options.modelsFile !== undefined) this.catalogue = await loadModelsFile(this.catalogue, options.modelsFile);
    let name = options.server?.model ?? "demo";
    let thinking = options.thinking;
    if (options.server?.modelFrom === "session") {
      // no model given: the one the resumed session went on with (afterSession confirms it)
      const found = await sessionChoice(options);
      name = found.model;
      thinking ??= found.thinking;
      notes(`model from the session: ${name} · thinking ${thinking ?? "off"}`);
    }
    this.choose(setUpModel(options, this.catalogue, name, thinking, demoDelayMs, this.routeHeard), notes);
  }

  /** The newest `model_change` on the session's path: the choice a resumed conversation goes on with. */
  async afterSession(notes: (text: string) => void): Promise<void> {
    const session = this.runtime.session;
    const leaf = session?.leaf;
    if (session === undefined || leaf === undefined) return;
    const path = session.pathToLeaf(leaf.id);
    const entry = path.filter((e): e is ModelChangeEntry => e.type === "model_change").at(-1);
    if (entry === undefined) return;
    if (entry.model === this.choice?.name && entry.thinking === (this.choice?.thinking ?? "off")) return;
    if (this.runtime.options.server?.modelFrom === "flag" && this.choice !== undefined) {
      // an explicit --model wins over the session's choice, and the session goes on with it
      notes(
        `--model ${this.choice.name} instead of the session's ${entry.model} · thinking ${entry.thinking}; ` +
          "the session goes on with it",
      );
      await this.recordChoice();
      return;
    }
    try {
      const { options, demoDelayMs } = this.runtime;
      const setup = setUpModel(options, this.catalogue, entry.model, entry.thinking, demoDelayMs, this.routeHeard);
      this.choose(setup, notes);
      notes(`model from the session: ${entry.model} · thinking ${entry.thinking}`);
    } catch (error) {
      notes(
        `the session's model ${entry.model} cannot be used (${(error as Error).message}); going on with ${this.choice?.name}`,
      );
    }
  }

  /**
   * Switches to another model for the next run: a catalogue id, a virtual model, or `a,b`; the
   * choice is recorded in the session (a `model_change` entry after the leaf), so `--continue`
   * resumes with it. A name that names no model throws, changing nothing; so does a model in no
   * catalogue that the server does not list either (when it lists its models).
   */
  async switchModel(name: string): Promise<void> {
    const setup = setUpModel(this.runtime.options, this.catalogue, name, this.choice?.thinking, 0, this.routeHeard);
    for (const info of setup.infos.filter((i) => !i.known)) {
      const served = await serverModelIds(serverOf(this.runtime.options, this.catalogue, info.id));
      if (served !== undefined && !served.includes(info.id)) {
        const some = served.slice(0, 8).join(", ") + (served.length > 8 ? `, … (${served.length} in all)` : "");
        throw new Error(
          `"${info.id}" is in no model catalogue and the server does not serve it (it lists ${some || "none"}); nothing changed`,
        );
      }
    }
    this.choose(setup, this.runtime.onNotice);
    await this.recordChoice();
  }

  /** Sets the thinking level of every call from the next run on, recorded as `switchModel` records it. */
  async setThinking(level: ThinkingLevel): Promise<ModelSetup> {
    const { options } = this.runtime;
    const name = this.choice?.name ?? options.server?.model ?? "demo";
    const setup = setUpModel(options, this.catalogue, name, level, 0, this.routeHeard);
    this.choose(setup, this.runtime.onNotice);
    await this.recordChoice();
    return setup;
  }

  /** Makes `setup` the agent's model; the budget follows its window unless `--context-tokens` set one. */
  private choose(setup: ModelSetup, notes: (text: string) => void): void {
    const { agent, options } = this.runtime;
    this.choice = setup;
    agent.setModel(withPairingCheck(setup.model));
    if (options.contextTokens === undefined) {
      agent.setContextBudget(setup.budget === undefined ? undefined : { budget: setup.budget });
    }
    for (const notice of setup.notices) notes(notice);
  }

  /** Appends the choice in use to the session after its leaf, and goes on from there. */
  private async recordChoice(): Promise<void> {
    const session = this.runtime.session;
    const choice = this.choice;
    if (session === undefined || choice === undefined) return;
    await session.append({
      type: "model_change",
      parentId: session.leaf?.id ?? null,
      model: choice.name,
      thinking: choice.thinking ?? "off",
    });
    this.runtime.reload();
  }

  /**
   * The newest `model_route` on the session's path, unless a `model_change` came after it (a new
   * choice: its first answer is a change). Undefined without a session.
   */
  private lastRoute(): ModelRouteEntry | undefined {
    const session = this.runtime.session;
    const leaf = session?.leaf;
    if (session === undefined || leaf === undefined) return undefined;
    const path = session.pathToLeaf(leaf.id);
    for (let i = path.length - 1; i >= 0; i--) {
      const entry = path[i]!;
      if (entry.type === "model_route") return entry;
      if (entry.type === "model_change") return undefined;
    }
    return undefined;
  }

  /**
   * A fallback is said as it happens. The real model that answered is recorded in the session
   * (a `model_route` entry, just before its answer) when it differs from the one recorded last
   * on the path since the newest choice (`lastRoute`): unchanged, nothing is written.
   */
  private readonly routeHeard = (report: RouteReport): void => {
    const { provider, id } = report.answeredBy;
    const last = this.lastRoute();
    if (this.choice !== undefined && (last?.provider !== provider || last.answeredBy !== id)) {
      this.runtime.agent.noteRoute({
        type: "model_route",
        model: this.choice.name,
        provider,
        answeredBy: id,
        skipped: report.skipped.map((s) => ({ model: s.model.id, error: s.error })),
      });
    }
    if (report.skipped.length === 0) return;
    this.runtime.onNotice(
      `fell back from ${report.skipped.map((s) => s.model.id).join(" and ")} to ${report.answeredBy.id} ` +
        `(${report.skipped.map((s) => `${s.model.id}: ${s.error}`).join("; ")})`,
    );
  };
}

/**
 * The model a resumed session went on with, read before it is opened: the newest `model_change`
 * on its path, else the model of its last answer. A usage error when it records none.
 */
async function sessionChoice(options: RunOptions): Promise<{ model: string; thinking?: ThinkingLevel }> {
  const wanted = options.session;
  const how = wanted?.resume !== undefined ? `--resume ${wanted.resume}` : "--continue";
  const folder = wanted === undefined ? undefined : new SessionFolder(wanted.root, options.folder);
  const found = wanted?.resume !== undefined ? await folder?.find(wanted.resume) : await folder?.newest();
  if (found !== undefined) {
    const session = await SessionFile.open(found.file, { readOnly: true });
    try {
      const path = session.leaf === undefined ? [] : session.pathToLeaf(session.leaf.id);
      const change = path.filter((e): e is ModelChangeEntry => e.type === "model_change").at(-1);
      if (change !== undefined) return { model: change.model, thinking: change.thinking };
      const answer = messagesOf(path)
        .filter((m): m is AssistantMessage => "role" in m && m.role === "assistant")
        .at(-1);
      if (answer !== undefined && answer.model !== "") return { model: answer.model };
    } finally {
      await session.close();
    }
  }
  throw new CliUsageError(
    `${how} without --model: ${found === undefined ? "there is no session to take the model from" : "the session records no model"}; give --model NAME.`,
  );
}
