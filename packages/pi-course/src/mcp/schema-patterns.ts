/**
 * Regular expressions in a server's tool schema (`pattern`, `patternProperties`) run on the
 * agent's main thread when a call's arguments are checked. JavaScript's engine backtracks: a
 * pattern such as `^(a+)+$` takes time exponential in the length of an argument that almost
 * matches (31 characters froze the agent for minutes, deaf to Ctrl-C). So a pattern that can
 * backtrack that way is left out of the schema the agent checks with (the server still checks
 * its own input), and said in a note.
 *
 * "Can backtrack that way" is judged as the usual linters do: a quantified group that holds a
 * quantifier itself (star height above one: `(a+)+`, `(a|b*)*`, `(x{2,})+`), a backreference, or a
 * pattern longer than 500 characters. Some safe patterns are left out too; no slow one is kept.
 */

const MAX_PATTERN = 500;

/** Whether `pattern` might take time exponential in its input (see the module comment). */
export function riskyPattern(pattern: string): boolean {
  if (pattern.length > MAX_PATTERN || /\\[1-9]|\\k</.test(pattern)) return true;
  /** Per open group: whether it holds a quantifier. */
  const groups: boolean[] = [];
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === "\\") {
      i++;
      continue;
    }
    if (inClass) {
      if (c === "]") inClass = false;
      continue;
    }
    if (c === "[") inClass = true;
    else if (c === "(") groups.push(false);
    else if (c === ")") {
      const holdsQuantifier = groups.pop() ?? false;
      const quantified = isQuantifier(pattern, i + 1);
      if (holdsQuantifier && quantified) return true;
      if (groups.length > 0 && (holdsQuantifier || quantified)) groups[groups.length - 1] = true;
    } else if (groups.length > 0 && isQuantifier(pattern, i)) groups[groups.length - 1] = true;
  }
  return false;
}

/** Whether a quantifier that repeats (`*`, `+`, `{n,}`, `{n,m}` with m > 1) starts at `i`. */
function isQuantifier(pattern: string, i: number): boolean {
  const c = pattern[i];
  if (c === "*" || c === "+") return true;
  if (c !== "{") return false;
  const match = /^\{(\d*)(,(\d*))?\}/.exec(pattern.slice(i));
  if (match === null) return false;
  return match[2] !== undefined ? match[3] === "" || Number(match[3]) > 1 : Number(match[1]) > 1;
}

/**
 * `schema` without its risky patterns (a copy; `schema` is kept), and the JSON paths of the
 * patterns left out.
 */
export function withoutRiskyPatterns(schema: unknown): { schema: unknown; dropped: string[] } {
  const dropped: string[] = [];
  const walk = (value: unknown, at: string, depth: number): unknown => {
    if (depth > 64 || typeof value !== "object" || value === null) return value;
    if (Array.isArray(value)) return value.map((item, i) => walk(item, `${at}/${i}`, depth + 1));
    const out: Record<string, unknown> = {};
    for (const [key, child] of Object.entries(value)) {
      if (key === "pattern" && typeof child === "string" && riskyPattern(child)) {
        dropped.push(`${at}/pattern`);
        continue;
      }
      if (key === "patternProperties" && typeof child === "object" && child !== null) {
        const kept: Record<string, unknown> = {};
        for (const [name, sub] of Object.entries(child)) {
          if (riskyPattern(name)) dropped.push(`${at}/patternProperties/${name.slice(0, 40)}`);
          else kept[name] = walk(sub, `${at}/patternProperties/${name}`, depth + 1);
        }
        out[key] = kept;
        continue;
      }
      out[key] = walk(child, `${at}/${key}`, depth + 1);
    }
    return out;
  };
  return { schema: walk(schema, "", 0), dropped };
}
