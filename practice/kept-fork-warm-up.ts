/**
 * The first run of every kept fork (kept-forks.ts): one empty test. vitest's worker finishes its
 * own set-up in its first run (its error listeners, its console, variables such as SSR); the
 * process as this run leaves it is what every later run must leave it as.
 */
import { it } from "vitest";

it("warms a kept fork up", () => {});
