import assert from "node:assert/strict";
import { total } from "./price.mjs";

assert.equal(total([]), 0);
assert.equal(total([{ price: 250, quantity: 2 }]), 500);
assert.equal(
  total([
    { price: 100, quantity: 3 },
    { price: 5, quantity: 1 },
  ]),
  305,
);
console.log("price tests pass");
