// The conformance suite imports `globSync` from node:fs (Node 22) for its tier report only; on
// Node 20 this module stands in for node:fs inside the suite, with a globSync that says so.
export * from "node:fs";
export function globSync() {
  throw new Error("the conformance suite's tier report needs Node 22 (fs.globSync)");
}
