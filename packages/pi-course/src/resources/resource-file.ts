/**
 * How a skill's or a template's file is read: whatever a repository puts there, the start goes
 * on. Only a regular file is read (a FIFO, `/dev/zero` or a folder under the name is refused at
 * once, without blocking or reading it), at most `RESOURCE_FILE_MAX_BYTES`; anything else is a
 * problem the caller turns into a warning (`skipped: <problem>`), never a throw.
 */
import { errorText } from "../base/errors.js";
import { readTextFile } from "../base/read-json.js";

/** The most of one skill or template file read (1 MiB); a bigger one is skipped with a warning. */
export const RESOURCE_FILE_MAX_BYTES = 1024 * 1024;

/** The file's text, or what is wrong with it, worded after "skipped: " (e.g. `it is not a regular file (it is a FIFO)`). */
export function readResourceFile(file: string): { text: string } | { problem: string } {
  try {
    return { text: readTextFile(file, { where: "it", maxBytes: RESOURCE_FILE_MAX_BYTES }) };
  } catch (error) {
    return { problem: errorText(error) };
  }
}
