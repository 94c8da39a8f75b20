import assert from "node:assert/strict";
import { clamp } from "./clamp.mjs";

assert.equal(clamp(5, 0, 10), 5);
assert.equal(clamp(-3, 0, 10), 0);
assert.equal(clamp(42, 0, 10), 10);
console.log("clamp tests pass");
