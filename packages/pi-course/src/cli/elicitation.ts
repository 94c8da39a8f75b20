/**
 * An MCP server's question to the person at the terminal (`elicitation/create`), asked on the
 * prompt line while the tool call that caused it waits. A form is asked field by field, each
 * answer checked against the requested schema (mcp/elicitation-form.ts) and asked again until it
 * fits; the person then sends it (accept), declines, or cancels with Ctrl-C at any question. A URL
 * request shows the whole address and asks whether the person will open it; it is never opened
 * for them. When the server withdraws its request (or the call ends) the question leaves the
 * prompt line at once. Everything a server wrote is neutralised before it reaches the terminal.
 */
import { elicitationForm, fieldHint, readFieldAnswer, shown } from "../mcp/elicitation-form.js";
import type { Questioner } from "./io.js";
import { neutralize } from "./trace.js";

/** The answer to `elicitation/create` with `params` from server `server`, as `person` gives it. */
export async function elicitOnTerminal(
  person: Questioner,
  server: string,
  params: Record<string, unknown>,
  signal?: AbortSignal,
): Promise<Record<string, unknown>> {
  const withdrawn = () => {
    person.say(`MCP server ${server} no longer waits for an answer: the question is withdrawn`);
    return { action: "cancel" };
  };
  // the server cancelled its request (or the call ended) while an earlier question was on the line
  if (signal?.aborted) return { action: "cancel" };
  const ask = async (question: string) => {
    const answer = await person.ask(question, signal);
    return signal?.aborted ? undefined : answer;
  };
  const message = neutralize(typeof params.message === "string" ? params.message : "").trim();
  if (params.mode === "url") {
    const url = typeof params.url === "string" ? params.url : "";
    if (!URL.canParse(url)) {
      person.say(`MCP server ${server} asked you to open a page, but its address is not a URL: declined`);
      return { action: "decline" };
    }
    person.say(`MCP server ${server} asks you to open a page${message === "" ? "" : `: ${message}`}`);
    person.say(`  ${neutralize(url)}`);
    const answer = await ask("Will you open it? (y: I open it myself, n: decline) ");
    if (answer === undefined) return signal?.aborted ? withdrawn() : { action: "cancel" };
    return yes(answer) ? { action: "accept" } : { action: "decline" };
  }
  const form = elicitationForm(params);
  if ("problem" in form) {
    person.say(`MCP server ${server} asked for a form this agent cannot show (${neutralize(form.problem)}): declined`);
    return { action: "decline" };
  }
  person.say(`MCP server ${server} asks${message === "" ? " you to fill in a form" : `: ${message}`}`);
  const start = await ask(
    `Fill in its ${form.fields.length} field(s)? (y: fill in, n: decline; Ctrl-C cancels at any question) `,
  );
  if (start === undefined) return signal?.aborted ? withdrawn() : { action: "cancel" };
  if (!yes(start)) return { action: "decline" };
  const content: Record<string, unknown> = {};
  for (const field of form.fields) {
    const label = neutralize(field.label);
    if (field.description !== undefined) person.say(`  ${label}: ${neutralize(field.description)}`);
    if (field.options !== undefined)
      person.say(`    ${field.options.map((option, i) => `${i + 1}) ${neutralize(option.label)}`).join("  ")}`);
    for (;;) {
      const typed = await ask(`  ${label}${field.required ? " *" : ""} (${neutralize(fieldHint(field))}): `);
      if (typed === undefined) return signal?.aborted ? withdrawn() : { action: "cancel" };
      const answer = readFieldAnswer(field, typed);
      if ("problem" in answer) {
        person.say(`    ${neutralize(answer.problem)}`);
        continue;
      }
      if ("value" in answer) content[field.name] = answer.value;
      break;
    }
  }
  for (const field of form.fields) {
    if (field.name in content)
      person.say(`  ${neutralize(field.label)}: ${neutralize(shown(field, content[field.name]))}`);
  }
  const send = await ask(`Send this to ${server}? (y: send, n: decline) `);
  if (send === undefined) return signal?.aborted ? withdrawn() : { action: "cancel" };
  return yes(send) ? { action: "accept", content } : { action: "decline" };
}

/** An empty answer or y/yes. */
function yes(answer: string): boolean {
  return ["", "y", "yes"].includes(answer.trim().toLowerCase());
}
