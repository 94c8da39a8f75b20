/**
 * What the bundle has instead of `typebox/compile` (scripts/bundle.ts): the same `Compile`, whose
 * first call loads TypeBox's compiler, synchronously, from the CommonJS bundle of it that sits
 * beside the chunk holding this module (`typebox-compile.cjs`, written by `bundle`). Until then
 * the compiler costs an importing program nothing.
 */
import { createRequire } from "node:module";
import type { Compile as TypeBoxCompile } from "typebox/compile";

let compiler: { Compile: typeof TypeBoxCompile } | undefined;

/** TypeBox's `Compile`, loaded on the first call. */
export const Compile: typeof TypeBoxCompile = ((...args: Parameters<typeof TypeBoxCompile>) => {
  compiler ??= createRequire(import.meta.url)("./typebox-compile.cjs") as { Compile: typeof TypeBoxCompile };
  return (compiler.Compile as (...a: unknown[]) => unknown)(...args);
}) as typeof TypeBoxCompile;
