import { PiCourseError } from "../base/errors.js";

/** A mistake on the command line: printed with a pointer to `--help`, exit code 2. */
export class CliUsageError extends PiCourseError {
  override name = "CliUsageError";
  /** Stable: `"CLI_USAGE"`. */
  override readonly code = "CLI_USAGE";
}
