import { getUser } from "./lib/users.mjs";
import { greet } from "./lib/greet.mjs";

console.log(greet(1), getUser(2));
