import { getUser } from "./users.mjs";

export function greet(id) {
  return `Hello, ${getUser(id)}!`;
}
