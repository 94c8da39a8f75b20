/** `ScriptedModel`'s repeating responder: every call after the scripted turns is answered by it. */
import { expect, it } from "vitest";
import { assistantMessage, textOf } from "../src/messages.js";
import { ScriptedModel } from "../src/models/scripted-model.js";

const says = (text: string) => assistantMessage([{ type: "text", text }], "stop");
const ask = (model: ScriptedModel) => model.stream({ messages: [] }).result();

it("ScriptedModel.repeat answers every call, with the turn index counting on; the repeat option follows the script", async () => {
  const echo = ScriptedModel.repeat((_context, turn) => says(`turn ${turn}`));
  const answers = [];
  for (let i = 0; i < 5; i++) answers.push(textOf(await ask(echo)));
  expect(answers).toEqual(["turn 0", "turn 1", "turn 2", "turn 3", "turn 4"]);
  expect(echo.requests).toHaveLength(5);

  const scripted = new ScriptedModel([says("first")], { repeat: (_c, turn) => says(`again ${turn}`) });
  expect([textOf(await ask(scripted)), textOf(await ask(scripted)), textOf(await ask(scripted))]).toEqual([
    "first",
    "again 1",
    "again 2",
  ]);

  const plain = new ScriptedModel([says("only")]);
  await ask(plain);
  expect((await ask(plain)).errorMessage).toMatch(/the script has no turn 2 \(it has 1\)/);
  expect(() => new ScriptedModel([], { repeat: "x" as never })).toThrow(/repeat must be a responder function/);
});
