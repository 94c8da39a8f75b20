/**
 * The "told" rule: a learner never needs a test to learn a required text. Every exact text a
 * chapter's tests require of the learner's code (a string or pattern asserted on an error message
 * or on output) must be stated in the guide (LEARNING.md: the chapter's text and its labs' hints)
 * or in the practice folder's src/ (the doc comment at the construction site, or code kept around
 * it). The proof reports each untold text with its test, its line and where to say it.
 *
 * What counts as a required text, read from the test files' syntax (TypeScript's parser):
 * - the argument of `toThrow(…)` / `toThrowError(…)` (also after `rejects.`);
 * - the argument of `toMatch`, `toContain`, `toBe`, `toEqual`, `toStrictEqual` when the value
 *   under test names a message or an output (`message`, `errorMessage`, `reason`, `stderr`,
 *   `stdout`, `output`);
 * - `expect.stringMatching(…)` / `expect.stringContaining(…)` anywhere in an assertion, and a
 *   string given to a `message` / `errorMessage` / `reason` property inside an assertion;
 * - any string, template or pattern in an assertion's expected value that reads as a sentence
 *   (three words or more in one fixed part), whatever field holds it (`error`, `diagnostics`, a
 *   message's `content`) and however the assertion reaches it: inline, as a helper's argument, or
 *   through a constant whose every use is in an assertion (one also given to the code under test
 *   is the test's input). These are `prose` findings; `proseToldWaiver` excuses a chapter for now.
 *   The first three rules alone read a text only by the NAME of what holds it, so a required
 *   sentence in an `error` field, a `diagnostics` list or a constant compared with `toEqual` went
 *   unseen (chapter 05's ten untold texts, issue 56).
 * A literal is split into its fixed parts: quoted values ("nope"), numbers, `${…}` holes and a
 * pattern's wildcards are what the test chooses, not what the learner must know; the rest, a part
 * of 6 or more characters with a letter, must appear in the guide or src/ (whitespace and string
 * concatenation ignored, case ignored for an `i` pattern), as it stands or clause by clause (cut
 * at `:` `;` `(` `)` `|`: code that writes a sentence from pieces; a part of short words only is
 * then told). `true`, `false`, `null` and `undefined` are values, like numbers. A string given to
 * `RegExp(…)` is a pattern. A text the test file itself supplies
 * elsewhere (a tool that throws "boom", then `toThrow("boom")`) is the test's own input.
 */
import ts from "typescript";

/** One text a test requires. */
export interface RequiredText {
  /** The full test name's own title (`Lab 10.1 · …`), or "" outside any test. */
  test: string;
  line: number;
  /** The literal as written in the test (a string's text, or `/source/flags`). */
  text: string;
  /** The fixed parts the learner must be able to read somewhere. */
  parts: string[];
  ignoreCase: boolean;
  /** A pattern with a top-level `a|b`: the fixed parts of each alternative; one told is enough. */
  alternatives?: string[][];
  /**
   * Found only as a sentence in an expected value (any field, a constant, a helper's argument),
   * not by the matcher or property it is given to.
   */
  prose?: boolean;
}

const THROW_MATCHERS = new Set(["toThrow", "toThrowError"]);
const VALUE_MATCHERS = new Set(["toMatch", "toContain", "toBe", "toEqual", "toStrictEqual"]);
const MESSAGE_SUBJECT = /message|errorMessage|reason|stderr|stdout|output/i;
const MESSAGE_PROPERTY = new Set(["message", "errorMessage", "reason"]);
const MIN_PART = 6;

/** The texts the tests of one file require, with the test each sits in. */
export function requiredTexts(fileName: string, source: string): RequiredText[] {
  const file = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found: RequiredText[] = [];
  const add = (node: ts.Node, test: string, prose = false) => {
    const literal = literalOf(node);
    if (!literal) return;
    if (literal.alternatives) {
      // one alternative said is enough: keep the pattern only if none is
      const line = file.getLineAndCharacterOfPosition(node.getStart(file)).line + 1;
      found.push({
        test,
        line,
        text: literal.text,
        parts: literal.parts,
        ignoreCase: literal.ignoreCase,
        alternatives: literal.alternatives,
        ...(prose && { prose }),
      });
      return;
    }
    const parts = literal.parts.filter((p) => p.length >= MIN_PART && /\p{L}/u.test(p));
    if (parts.length === 0) return;
    const line = file.getLineAndCharacterOfPosition(node.getStart(file)).line + 1;
    found.push({ test, line, text: literal.text, parts, ignoreCase: literal.ignoreCase, ...(prose && { prose }) });
  };
  // The constants an assertion may name (`expect(body).toEqual(CHAT_MESSAGES)`): their values are expected too.
  const constants = new Map<string, ts.Node>();
  const declared = (node: ts.Node): void => {
    if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.initializer)
      constants.set(node.name.text, node.initializer);
    ts.forEachChild(node, declared);
  };
  declared(file);
  // A constant is an expected value only if every use of it is in an assertion: one also given
  // to the code under test (`tools`, a context) is the test's input.
  const uses = new Map<string, number>();
  const count = (node: ts.Node): void => {
    if (
      ts.isIdentifier(node) &&
      constants.has(node.text) &&
      !(ts.isVariableDeclaration(node.parent) && node.parent.name === node)
    )
      uses.set(node.text, (uses.get(node.text) ?? 0) + 1);
    ts.forEachChild(node, count);
  };
  count(file);
  const inAssertions = new Map<string, { uses: number; test: string }>();
  const visit = (node: ts.Node, test: string, inAssertion: boolean): void => {
    let here = test;
    if (
      inAssertion &&
      (ts.isStringLiteralLike(node) || ts.isTemplateExpression(node) || ts.isRegularExpressionLiteral(node)) &&
      readsAsProse(node)
    ) {
      add(node, here, true);
      return;
    }
    if (inAssertion && ts.isIdentifier(node) && constants.has(node.text)) {
      const seen = inAssertions.get(node.text);
      inAssertions.set(node.text, { uses: (seen?.uses ?? 0) + 1, test: seen?.test ?? here });
      return;
    }
    if (ts.isCallExpression(node)) {
      const callee = node.expression;
      const name = ts.isIdentifier(callee) ? callee.text : undefined;
      const title = node.arguments[0];
      if (
        (name === "it" || name === "test") &&
        title &&
        (ts.isStringLiteralLike(title) || ts.isTemplateExpression(title))
      )
        here = ts.isStringLiteralLike(title) ? title.text : title.head.text;
      if (ts.isPropertyAccessExpression(callee)) {
        const matcher = callee.name.text;
        const subject = expectSubject(callee.expression);
        const arg = node.arguments[0];
        if (subject !== undefined && arg) {
          if (THROW_MATCHERS.has(matcher)) add(arg, here);
          else if (VALUE_MATCHERS.has(matcher) && MESSAGE_SUBJECT.test(subject.getText(file))) add(arg, here);
        }
        if (
          (matcher === "stringMatching" || matcher === "stringContaining") &&
          ts.isIdentifier(callee.expression) &&
          callee.expression.text === "expect" &&
          arg
        )
          add(arg, here);
        if (subject !== undefined) {
          for (const a of node.arguments) visit(a, here, true);
          visit(callee.expression, here, inAssertion);
          return;
        }
      }
    }
    if (
      inAssertion &&
      ts.isPropertyAssignment(node) &&
      MESSAGE_PROPERTY.has(node.name.getText(file)) &&
      (ts.isStringLiteralLike(node.initializer) || ts.isRegularExpressionLiteral(node.initializer))
    )
      add(node.initializer, here);
    ts.forEachChild(node, (child) => visit(child, here, inAssertion));
  };
  visit(file, "", false);
  for (const [name, seen] of inAssertions) {
    if (seen.uses === uses.get(name)) visit(constants.get(name)!, seen.test, true);
  }
  // One finding per literal; the matcher's or property's rule before the sentence rule.
  const seen = new Set<string>();
  const unique = [...found]
    .sort((a, b) => Number(a.prose ?? false) - Number(b.prose ?? false))
    .filter((r) => {
      const key = `${r.line}\0${r.text}`;
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    })
    .sort((a, b) => a.line - b.line);
  found.length = 0;
  found.push(...unique);
  // The test's own inputs (any other string in the file: "disk full" given to a fake that throws
  // it) are cut out of the parts: the learner's code only passes them through.
  const inputs = new Set<string>();
  const collect = (node: ts.Node): void => {
    if (ts.isStringLiteralLike(node) && (node.text.trim().length >= 5 || /^[\w.-]{2,}$/.test(node.text)))
      inputs.add(node.text.trim());
    // A script or a document the test gives the code: its own quoted strings are inputs too.
    if (ts.isStringLiteralLike(node))
      for (const m of node.text.matchAll(/'([^'\n]{5,})'|"([^"\n]{5,})"/g)) inputs.add((m[1] ?? m[2]!).trim());
    ts.forEachChild(node, collect);
  };
  collect(file);
  const byLength = [...inputs].sort((a, b) => b.length - a.length);
  for (const r of found) {
    let parts = r.parts;
    for (const input of byLength) {
      if (input === r.text || r.text.includes(`\${input}`)) continue;
      // a short id ("bb") is cut only as a whole word; a longer input wherever it occurs
      const at =
        input.length < 5 ? new RegExp(`(?<![\\w])${input.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}(?![\\w])`) : input;
      parts = parts.flatMap((p) =>
        p !== input && (typeof at === "string" ? p.includes(at) : at.test(p)) ? p.split(at) : [p],
      );
    }
    r.parts = parts
      .map((p) => p.replace(/^[\s:;,]+|[\s:;,]+$/g, ""))
      .filter((p) => p.length >= MIN_PART && /\p{L}/u.test(p));
  }
  // A text the test file supplies itself (as input elsewhere) is not the learner's to know.
  const rest: RequiredText[] = [];
  for (const r of found) {
    const parts = r.parts.filter((p) => occurrences(source, p) <= occurrences(r.text, p) * assertionsOf(found, r.text));
    if (parts.length > 0 && r.parts.length > 0) rest.push({ ...r, parts });
  }
  return rest;
}

/**
 * A string in an assertion's expected value that reads as a sentence (three words or more in one
 * fixed part): a text the code under test writes, whatever field it sits in (`error`,
 * `diagnostics`, a message's content) and however the assertion reaches it (a constant, a helper's
 * argument). A text the test supplies itself is cut out later.
 */
function readsAsProse(node: ts.StringLiteralLike | ts.TemplateExpression | ts.RegularExpressionLiteral): boolean {
  const parts = ts.isRegularExpressionLiteral(node)
    ? patternParts(node.text.slice(1, node.text.lastIndexOf("/")))
    : (ts.isTemplateExpression(node)
        ? [node.head.text, ...node.templateSpans.map((s) => s.literal.text)]
        : [node.text]
      ).flatMap(stringParts);
  return parts.some((p) => p.length >= MIN_PART && /\S*\p{L}\S*(?:\s+\S*\p{L}\S*){2}/u.test(p));
}

/** How many assertions require the same text (each holds its parts once more in the file). */
function assertionsOf(found: RequiredText[], text: string): number {
  return found.filter((r) => r.text === text).length;
}

function occurrences(haystack: string, needle: string): number {
  return haystack.split(needle).length - 1;
}

/** `expect(x)` (or `expect(x).rejects`, `.not`, `.resolves`) → x. */
function expectSubject(node: ts.Expression): ts.Expression | undefined {
  let at = node;
  while (ts.isPropertyAccessExpression(at) && ["rejects", "resolves", "not"].includes(at.name.text)) {
    if (at.name.text === "not") return undefined; // a text that must NOT appear is not required
    at = at.expression;
  }
  if (ts.isCallExpression(at) && ts.isIdentifier(at.expression) && at.expression.text === "expect")
    return at.arguments[0];
  if (
    ts.isCallExpression(at) &&
    ts.isPropertyAccessExpression(at.expression) &&
    ts.isIdentifier(at.expression.expression) &&
    at.expression.expression.text === "expect" &&
    at.expression.name.text === "soft"
  )
    return at.arguments[0];
  return undefined;
}

function literalOf(
  node: ts.Node,
): { text: string; parts: string[]; ignoreCase: boolean; alternatives?: string[][] } | undefined {
  const parent = node.parent;
  if (
    parent &&
    (ts.isNewExpression(parent) || ts.isCallExpression(parent)) &&
    ts.isIdentifier(parent.expression) &&
    parent.expression.text === "RegExp" &&
    parent.arguments?.[0] === node &&
    (ts.isStringLiteralLike(node) || ts.isTemplateExpression(node))
  ) {
    // `new RegExp(\`^Request to ${url} failed\`)`: a pattern's source
    const pieces = ts.isTemplateExpression(node)
      ? [node.head.text, ...node.templateSpans.map((s) => s.literal.text)]
      : [node.text];
    const flags = parent.arguments[1];
    return {
      text: pieces.join("${…}"),
      parts: pieces.flatMap(patternParts),
      ignoreCase: flags !== undefined && ts.isStringLiteralLike(flags) && flags.text.includes("i"),
    };
  }
  if (ts.isStringLiteralLike(node)) return { text: node.text, parts: stringParts(node.text), ignoreCase: false };
  if (ts.isTemplateExpression(node)) {
    const pieces = [node.head.text, ...node.templateSpans.map((s) => s.literal.text)];
    return { text: pieces.join("${…}"), parts: pieces.flatMap(stringParts), ignoreCase: false };
  }
  if (ts.isRegularExpressionLiteral(node)) {
    const m = /^\/(.*)\/([a-z]*)$/s.exec(node.text);
    if (!m) return undefined;
    const alternatives = topLevelAlternatives(m[1]!).map(patternParts);
    return {
      text: node.text,
      parts: alternatives.flat(),
      ignoreCase: m[2]!.includes("i"),
      ...(alternatives.length > 1 && { alternatives }),
    };
  }
  return undefined;
}

/** A pattern's source cut at each `|` outside groups and classes. */
function topLevelAlternatives(source: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  let inClass = false;
  for (let i = 0; i < source.length; i++) {
    const c = source[i]!;
    if (c === "\\") i++;
    else if (inClass) inClass = c !== "]";
    else if (c === "[") inClass = true;
    else if (c === "(") depth++;
    else if (c === ")") depth--;
    else if (c === "|" && depth === 0) {
      out.push(source.slice(start, i));
      start = i + 1;
    }
  }
  out.push(source.slice(start));
  return out;
}

/** Fixed parts of a string: quoted values and numbers are the test's choice. */
export function stringParts(text: string): string[] {
  return text
    .split(/"[^"]*"|'[^']*'|`[^`]*`|-?\b\d+(?:\.\d+)?\b|\bNaN\b|-?\bInfinity\b|\b(?:true|false|null|undefined)\b|\n/)
    .map((p) => p.replace(/^[\s:;,{}]+|[\s:;,{}]+$/g, ""))
    .filter((p) => p !== "");
}

/**
 * Fixed parts of a regular expression's source: literal runs, cut at every wildcard, class,
 * group, quantifier or alternation (a top-level `a|b` keeps only the parts common to... none:
 * each alternative is cut apart, and each part must be told).
 */
export function patternParts(source: string): string[] {
  const parts: string[] = [];
  let run = "";
  const cut = () => {
    parts.push(...stringParts(run));
    run = "";
  };
  for (let i = 0; i < source.length; i++) {
    const c = source[i]!;
    if (c === "\\") {
      const next = source[i + 1] ?? "";
      i++;
      if (/[dDwWsSbB]/.test(next)) cut();
      else if (next === "n" || next === "t") cut();
      else run += next;
      continue;
    }
    if (c === "[") {
      cut();
      while (i < source.length && source[i] !== "]") i += source[i] === "\\" ? 2 : 1;
      continue;
    }
    if (c === "{") {
      cut();
      while (i < source.length && source[i] !== "}") i++;
      continue;
    }
    if ("().|*+?^$".includes(c)) {
      // a quantifier applies to the last character: it is not fixed
      if ("*+?".includes(c) && run.length > 0) run = run.slice(0, -1);
      if (c === "(" && source[i + 1] === "?") i += source[i + 2] === "<" ? 3 : 2;
      cut();
      continue;
    }
    run += c;
  }
  cut();
  return parts;
}

/** Text normalised for the search: string concatenations joined, whitespace runs made one space. */
export function normalise(text: string): string {
  return text
    .replace(/["'`]\s*\+\s*(?:\/\/[^\n]*\n\s*)*["'`]/g, "")
    .replace(/\s*\n\s*(?:\*\s+|\/\/\s*)?/g, " ")
    .replace(/\s+/g, " ");
}

/** The parts of `required` not found in `corpus` (already normalised). */
export function untoldParts(required: RequiredText, corpus: string, corpusLower: string): string[] {
  if (required.alternatives) {
    const each = required.alternatives.map((parts) =>
      untoldParts({ ...required, parts, alternatives: undefined }, corpus, corpusLower),
    );
    return each.some((missing) => missing.length === 0) ? [] : each.flat();
  }
  const found = (text: string) => {
    const p = normalise(text);
    return required.ignoreCase ? corpusLower.includes(p.toLowerCase()) : corpus.includes(p);
  };
  // A part is told when it is said as it stands, or clause by clause (code that writes a sentence
  // from pieces: `no data arrived (…)` and `for ${ms} ms` in two places of one function).
  return required.parts.filter((part) => {
    if (found(part)) return false;
    const pieces = part.split(/[:;()|]/).map((c) => c.trim());
    if (pieces.length === 1) return true;
    return !pieces.filter((c) => c.length >= MIN_PART && /\p{L}/u.test(c)).every(found);
  });
}
