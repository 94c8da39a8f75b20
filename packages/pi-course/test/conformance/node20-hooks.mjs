// Module hooks: the conformance suite's `fs` import gets node20-fs.mjs (see there); all else as usual.
export async function resolve(specifier, context, next) {
  if (
    (specifier === "fs" || specifier === "node:fs") &&
    context.parentURL?.includes("@modelcontextprotocol/conformance")
  )
    return { url: new URL("./node20-fs.mjs", import.meta.url).href, shortCircuit: true };
  return next(specifier, context);
}
