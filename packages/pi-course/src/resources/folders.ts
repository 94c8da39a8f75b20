/**
 * Walks over folders: from the filesystem root down to the working folder (context files), and
 * from the working folder up to the git root (project skills, the project a trust decision is
 * about).
 */
import { existsSync } from "node:fs";
import path from "node:path";

/** Every folder from the filesystem root down to `folder` (absolute), outermost first. */
export function foldersFromRoot(folder: string): string[] {
  const chain: string[] = [];
  for (let at = path.resolve(folder); ; at = path.dirname(at)) {
    chain.push(at);
    if (path.dirname(at) === at) break;
  }
  return chain.reverse();
}

/**
 * The git root above `folder`: the closest folder, `folder` itself included, that holds a `.git`
 * entry (a folder, or the file of a worktree or submodule); undefined outside a repository.
 */
export function gitRoot(folder: string): string | undefined {
  for (let at = path.resolve(folder); ; at = path.dirname(at)) {
    if (existsSync(path.join(at, ".git"))) return at;
    if (path.dirname(at) === at) return undefined;
  }
}

/**
 * The project of the working folder `cwd`: its git root, or `cwd` itself outside a repository.
 * This is the folder a trust decision is asked and saved for.
 */
export function projectRoot(cwd: string): string {
  return gitRoot(cwd) ?? path.resolve(cwd);
}

/**
 * The folders from `cwd` up to the project root (`projectRoot(cwd)`), innermost first: where
 * project skills are looked for (the closest folder's skill wins a name).
 */
export function foldersToProjectRoot(cwd: string): string[] {
  const root = projectRoot(cwd);
  const chain: string[] = [];
  for (let at = path.resolve(cwd); ; at = path.dirname(at)) {
    chain.push(at);
    if (at === root || path.dirname(at) === at) break;
  }
  return chain;
}
