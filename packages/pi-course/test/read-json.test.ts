import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Type } from "typebox";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { PiCourseError, errorText } from "../src/base/errors.js";
import {
  JsonFileError,
  checkJson,
  describeJson,
  parseJson,
  readJsonFile,
  readTextFile,
} from "../src/base/read-json.js";

const Settings = Type.Object(
  {
    name: Type.String({ minLength: 1 }),
    tokens: Type.Optional(Type.Integer({ minimum: 1, expected: "a whole number of tokens" })),
    tags: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { expected: "a list of non-empty strings" })),
    servers: Type.Optional(
      Type.Record(Type.String(), Type.Object({ url: Type.String() }, { additionalProperties: false })),
    ),
  },
  { additionalProperties: false, expected: 'one JSON object, e.g. {"name": "x"}' },
);

const refusal = (run: () => unknown): Error => {
  try {
    run();
  } catch (error) {
    return error as Error;
  }
  throw new Error("accepted");
};

describe("read-json: one wording for every file the library reads", () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "read-json-"));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("not JSON, the wrong shape at the root, at a field, in a list, in a record; an unknown key; a missing field", () => {
    const message = (text: string) => refusal(() => parseJson(text, Settings, "s.json")).message;
    expect(message("{")).toMatch(/^s\.json is not JSON \(.+\)$/);
    expect(message("[1, 2]")).toBe('s.json must be one JSON object, e.g. {"name": "x"}, got an array of 2 items');
    expect(message('{"name": "a", "tokens": 0}')).toBe("s.json: tokens must be a whole number of tokens, got 0");
    expect(message('{"name": "a", "tags": ["x", ""]}')).toBe(
      "s.json: tags must be a list of non-empty strings, got an array of 2 items",
    );
    expect(message('{"name": "a", "servers": {"my web": {"url": 3}}}')).toBe(
      's.json: servers["my web"].url must be a string, got 3',
    );
    expect(message('{"name": "a", "servers": {"web": {"url": "u", "token": "t"}}}')).toBe(
      's.json: servers.web has an unknown key "token"; the keys are url',
    );
    expect(message('{"name": "a", "nmae": "b"}')).toBe(
      's.json has an unknown key "nmae"; the keys are name, tokens, tags, servers',
    );
    // A missing field: at the object when only the object says what it expects, else at the field.
    expect(message("{}")).toBe('s.json must be one JSON object, e.g. {"name": "x"}, got an object');
    expect(refusal(() => parseJson('{"name": "a", "servers": {"web": {}}}', Settings, "s.json")).message).toBe(
      "s.json: servers.web.url must be a string, got nothing",
    );
    expect(refusal(() => parseJson("{", Settings, "s.json"))).toBeInstanceOf(JsonFileError);
    expect((refusal(() => parseJson("{", Settings, "s.json")) as JsonFileError).failure).toBe("not-json");
  });

  it("a string is never shown (it may be a key); hideValues hides numbers and booleans too", () => {
    const key = "sk-abcdefghijklmnopqrstuvwxyz";
    const shown = refusal(() => checkJson({ name: "a", tokens: key }, Settings, "s.json")).message;
    expect(shown).toBe(`s.json: tokens must be a whole number of tokens, got a string of ${key.length} characters`);
    expect(shown).not.toContain("sk-");
    const hidden = refusal(() =>
      checkJson({ name: "a", tokens: 0.5 }, Settings, { where: "s.json", hideValues: true }),
    );
    expect(hidden.message).toBe("s.json: tokens must be a whole number of tokens, got a number");
    expect([
      describeJson(null),
      describeJson({}),
      describeJson("a"),
      describeJson(true),
      describeJson(true, true),
    ]).toEqual(["null", "an object", "a string of 1 character", "true", "a boolean"]);
  });

  it("a missing file, an unreadable one, ifMissing, and the format's own error class", async () => {
    const file = path.join(dir, "settings.json");
    expect(refusal(() => readJsonFile(file, Settings)).message).toBe(`${file} does not exist`);
    expect(readJsonFile(file, Settings, { ifMissing: () => "none" })).toBe("none");
    class FormatError extends PiCourseError {
      override readonly code = "FORMAT";
    }
    const where = `the settings ${file}`;
    const error = (message: string) => new FormatError(`${message}.`);
    expect(refusal(() => readJsonFile(file, Settings, { where, error }))).toEqual(
      new FormatError(`${where} does not exist.`),
    );
    await writeFile(file, '{"name": "a"}');
    expect(readJsonFile(file, Settings)).toEqual({ name: "a" });
    expect(readTextFile(file)).toBe('{"name": "a"}');
    if (process.getuid?.() !== 0) {
      await chmod(file, 0o000);
      const refused = refusal(() => readJsonFile(file, Settings, { where, error, ifMissing: () => undefined }));
      expect(refused).toBeInstanceOf(FormatError);
      expect(refused).toBeInstanceOf(PiCourseError);
      expect(refused.message).toBe(`${where} cannot be read (EACCES).`);
    }
  });

  it("errorText reads anything thrown, even an Error whose message getter throws", () => {
    const hostile = new Error("x");
    Object.defineProperty(hostile, "message", {
      get() {
        throw new Error("no");
      },
    });
    expect(errorText(hostile)).toBe("(a thrown object that cannot be read as text)");
    expect(errorText(new TypeError(""))).toBe("TypeError");
    expect(errorText("plain")).toBe("plain");
    expect(errorText(Object.create(null))).toBe("(a thrown object that cannot be read as text)");
  });
});
