/**
 * What the bundle has instead of a Node module that costs a program's start more than it uses
 * it (scripts/bundle.ts, `LAZY_BUILTINS`): each function the module exports stands in as a
 * function that loads the module on its first call (synchronously, with `require`) and calls,
 * or constructs, the module's own; each object it exports (e.g. `crypto.constants`) as a
 * read-only view that loads the module on the first read. Until then the module costs nothing.
 * A value that is neither (a number, a flag) cannot wait: the stand-in does not export it, so a
 * source that imports one fails the build, not the program.
 */
import { createRequire } from "node:module";

const modules = new Map<string, Record<string, unknown>>();

function load(specifier: string): Record<string, unknown> {
  let loaded = modules.get(specifier);
  if (loaded === undefined) {
    loaded = createRequire(import.meta.url)(specifier) as Record<string, unknown>;
    modules.set(specifier, loaded);
  }
  return loaded;
}

/** `specifier`'s export `name` (a function or a class), loaded on the first call or `new`. */
export function functionOnFirstUse(specifier: string, name: string): unknown {
  const standIn = function (this: unknown, ...args: unknown[]) {
    const real = load(specifier)[name] as (...a: unknown[]) => unknown;
    return new.target === undefined ? real.apply(this, args) : Reflect.construct(real, args);
  };
  Object.defineProperty(standIn, "name", { value: name });
  return standIn;
}

/** `specifier`'s export `name` (an object), loaded on the first read; it cannot be changed through this view. */
export function objectOnFirstUse(specifier: string, name: string): object {
  const real = () => load(specifier)[name] as object;
  const refuse = () => {
    throw new TypeError(`${specifier}'s ${name} cannot be changed through the bundle's stand-in`);
  };
  return new Proxy(
    {},
    {
      get: (_, key) => Reflect.get(real(), key),
      has: (_, key) => Reflect.has(real(), key),
      ownKeys: () => Reflect.ownKeys(real()),
      getOwnPropertyDescriptor: (_, key) => {
        const descriptor = Reflect.getOwnPropertyDescriptor(real(), key);
        // a proxy of an extensible target may only report configurable properties
        return descriptor === undefined ? undefined : { ...descriptor, configurable: true };
      },
      getPrototypeOf: () => Reflect.getPrototypeOf(real()),
      set: refuse,
      defineProperty: refuse,
      deleteProperty: refuse,
    },
  );
}
