/**
 * What must never travel through a journal: a run's input (its prompt and options) is kept in
 * the engine's journal and shown by its admin API for as long as the run is retained, so a model
 * key in it would be readable there. Keys stay with the workers, in their own environment or
 * files; a run's options may only name them (`apiKeyEnv: "OPENAI_API_KEY"`, as `pi-course` does).
 *
 * `secretField` finds an option that looks like a credential (a non-empty string under a name
 * ending like `apiKey`, `OPENAI_KEY`, `privateKey`, `token`, `secret`, `password`, `authorization`,
 * `cookie`; or a value that is one whatever its name: `Bearer …`, `Basic …`, a URL with a
 * password); the client refuses to submit such a run and the worker refuses to run one that
 * reached it another way. A name that only names a key (`apiKeyEnv`) is fine.
 */

const SECRET_NAME = /(key|secret|password|passwd|token|authorization|credential|cookie)s?$/i;
/** A value that is a credential by itself: an HTTP credential, or a URL with a user and password. */
const SECRET_VALUE = /^(bearer|basic) +[\w.~+/=-]{8,}$|^[a-z][a-z0-9+.-]*:\/\/[^/@\s]*:[^/@\s]*@/i;

/** The path of the first field of `value` that holds what looks like a secret (`options.apiKey`), if any. */
export function secretField(value: unknown, at = "options"): string | undefined {
  if (typeof value === "string") return SECRET_VALUE.test(value) ? at : undefined;
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      const found = secretField(item, `${at}[${i}]`);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  if (value === null || typeof value !== "object") return undefined;
  for (const [name, field] of Object.entries(value)) {
    if (SECRET_NAME.test(name) && typeof field === "string" && field !== "") return `${at}.${name}`;
    const found = secretField(field, `${at}.${name}`);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** The error for a run whose options hold `field`. */
export function secretInJournal(field: string): string {
  return (
    `${field} looks like a credential, and a run's input is kept in the engine's journal. ` +
    "Give the workers the key in their own environment or a file, and let the options name it " +
    '(e.g. { "apiKeyEnv": "OPENAI_API_KEY" }).'
  );
}
