import { register } from "node:module";

register("./node20-hooks.mjs", import.meta.url);
