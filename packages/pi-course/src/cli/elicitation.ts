/**
 * An MCP server's question to the person at the terminal (`elicitation/create`), asked on the
 * prompt line while the tool call that caused it waits. A form is asked field by field, each
 * answer checked against the requested schema (mcp/elicitation-form.ts) and asked again until it
 * fits; the person then sends it (accept), declines, or cancels with Ctrl-C at any question. A URL
 * request shows the whole address, its host on a line of its own in ASCII and any user name
 * before the host, and asks whether the person will open it; it is never opened for them, and
 * only an https address is offered (http on a loopback host). A form with more than
 * `MAX_FORM_FIELDS` fields is declined before any is asked. When the server withdraws its request
 * (or the call ends) the question leaves the prompt line at once.
 *
 * Everything a server wrote (its name too: a project's file chooses it) reaches the terminal
 * through the guard of terminal-text.ts: no control or invisible character, no line that could
 * pass for another server's, no text longer than the guard's cap.
 */
import { elicitationForm, fieldHint, readFieldAnswer, shown } from "../mcp/elicitation-form.js";
import type { Questioner } from "./io.js";
import { untrustedText, untrustedUrl } from "./terminal-text.js";

/** The longest server name shown: 100 characters. */
const NAME_MAX = 100;
/** The longest label, option or hint shown: 200 characters. */
const LABEL_MAX = 200;

/** The answer to `elicitation/create` with `params` from server `server`, as `person` gives it. */
export async function elicitOnTerminal(
  person: Questioner,
  serverName: string,
  params: Record<string, unknown>,
  signal?: AbortSignal,
): Promise<Record<string, unknown>> {
  const server = untrustedText(serverName, { max: NAME_MAX });
  const field = (text: string) => untrustedText(text, { max: LABEL_MAX, indent: "      │ " });
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
  const message = untrustedText(typeof params.message === "string" ? params.message.trim() : "");
  if (params.mode === "url") {
    const shownUrl = untrustedUrl(typeof params.url === "string" ? params.url : "");
    if ("refused" in shownUrl) {
      person.say(`MCP server ${server} asked you to open a page, but ${shownUrl.refused}: declined`);
      return { action: "decline" };
    }
    person.say(`MCP server ${server} asks you to open a page${message === "" ? "" : `: ${message}`}`);
    for (const line of shownUrl.lines) person.say(line);
    const answer = await ask("Will you open it? (y: I open it myself, n: decline) ");
    if (answer === undefined) return signal?.aborted ? withdrawn() : { action: "cancel" };
    return yes(answer) ? { action: "accept" } : { action: "decline" };
  }
  const form = elicitationForm(params);
  if ("problem" in form) {
    person.say(
      `MCP server ${server} asked for a form this agent cannot show (${untrustedText(form.problem)}): declined`,
    );
    return { action: "decline" };
  }
  person.say(`MCP server ${server} asks${message === "" ? " you to fill in a form" : `: ${message}`}`);
  const start = await ask(
    `Fill in its ${form.fields.length} field(s)? (y: fill in, n: decline; Ctrl-C cancels at any question) `,
  );
  if (start === undefined) return signal?.aborted ? withdrawn() : { action: "cancel" };
  if (!yes(start)) return { action: "decline" };
  const content: Record<string, unknown> = {};
  for (const asked of form.fields) {
    const label = field(asked.label);
    if (asked.description !== undefined)
      person.say(`  ${label}: ${untrustedText(asked.description, { indent: "      │ " })}`);
    if (asked.options !== undefined)
      person.say(`    ${asked.options.map((option, i) => `${i + 1}) ${field(option.label)}`).join("  ")}`);
    for (;;) {
      const typed = await ask(`  ${label}${asked.required ? " *" : ""} (${field(fieldHint(asked))}): `);
      if (typed === undefined) return signal?.aborted ? withdrawn() : { action: "cancel" };
      const answer = readFieldAnswer(asked, typed);
      if ("problem" in answer) {
        person.say(`    ${field(answer.problem)}`);
        continue;
      }
      if ("value" in answer) content[asked.name] = answer.value;
      break;
    }
  }
  for (const asked of form.fields) {
    if (asked.name in content) person.say(`  ${field(asked.label)}: ${field(shown(asked, content[asked.name]))}`);
  }
  const send = await ask(`Send this to ${server}? (y: send, n: decline) `);
  if (send === undefined) return signal?.aborted ? withdrawn() : { action: "cancel" };
  return yes(send) ? { action: "accept", content } : { action: "decline" };
}

/** An empty answer or y/yes. */
function yes(answer: string): boolean {
  return ["", "y", "yes"].includes(answer.trim().toLowerCase());
}
