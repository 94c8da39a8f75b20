/**
 * The stand-ins the bundle has for modules that cost a program's start more than it uses them
 * (scripts/bundle.ts): Node's heavier modules, TypeBox's compiler, TypeBox's `Type` beyond the
 * builders the sources use. A stand-in loads the real module on first use, synchronously, with
 * `require`: a Node module by its name, a CommonJS bundle by its path beside the chunk that holds
 * this module (`./typebox-compile.cjs`, in `cli/`). Until then the module costs nothing.
 *
 * - a function (or a class) stands in as a function that loads the module on its first call and
 *   calls, or constructs, the module's own (`new Worker(…)` gives a real `Worker`; a class the
 *   sources would extend, or test with `instanceof`, cannot stand in);
 * - an object (e.g. `crypto.constants`, TypeBox's `Type`) as a read-only view that loads the
 *   module on the first read it cannot answer from what it was given at once (`eager`).
 *
 * A value that is neither (a number, a flag) cannot wait: bundle.ts exports no stand-in for it,
 * so a source that imports one fails the build, not the program.
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

/**
 * `specifier`'s export `name` (an object), as a view: a key `eager` has is read from it, any other
 * read loads the module. It cannot be changed through the view.
 */
export function objectOnFirstUse(specifier: string, name: string, eager: object = {}): object {
  const real = () => load(specifier)[name] as object;
  const from = (key: string | symbol) => (Reflect.has(eager, key) ? eager : real());
  const refuse = () => {
    throw new TypeError(`${name} of ${specifier} cannot be changed through the bundle's stand-in`);
  };
  return new Proxy(
    {},
    {
      get: (_, key) => Reflect.get(from(key), key),
      has: (_, key) => Reflect.has(from(key), key),
      ownKeys: () => Reflect.ownKeys(real()),
      getOwnPropertyDescriptor: (_, key) => {
        const descriptor = Reflect.getOwnPropertyDescriptor(from(key), key);
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
