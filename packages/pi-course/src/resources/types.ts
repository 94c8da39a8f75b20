/**
 * The vocabulary of the project around the agent (chapter 12): where resources are looked for,
 * which of them a trust decision protects, and the warnings loading them produces. Plain data.
 */

/**
 * Where resources come from. `project` resources lie in the working folder or above it (up to
 * the git root) and come with the repository: a cloned repository can put them there, so the
 * ones that run code or steer the agent (skills, templates, extensions) load only for a trusted
 * folder. `user` resources are the user's own (`~/.pi-course/…`, `~/.agents/skills`), always
 * loaded. `flag` is what the command line named (`--extension PATH`).
 */
export type ResourceScope = "project" | "user" | "flag";

/**
 * The folders resources are looked for in.
 * - `cwd`: the working folder (absolute).
 * - `piHome`: the user's pi-course folder, usually `~/.pi-course`.
 * - `userHome`: the user's home folder (for `~/.agents/skills`).
 */
export interface ResourceLocations {
  cwd: string;
  piHome: string;
  userHome: string;
}

/**
 * Something a person should know about a resource that loaded with a problem, or did not load:
 * the file it is about, and what is wrong and what to do. Shown by the CLI's banner.
 */
export interface ResourceWarning {
  /** The file or folder the warning is about (absolute). */
  path: string;
  message: string;
}
