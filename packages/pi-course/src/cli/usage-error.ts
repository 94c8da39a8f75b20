/** A mistake on the command line: printed with a pointer to `--help`, exit code 2. */
export class CliUsageError extends Error {
  override name = "CliUsageError";
}
