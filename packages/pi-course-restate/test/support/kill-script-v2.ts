/**
 * The next version of the kill script's code: its `effect` tool is renamed `record` (and the
 * script calls it so). A run that started on the old code cannot be replayed on this one: the
 * versions test keeps such runs on the old code, the cancel test makes one diverge on purpose.
 */
import { killScriptSetups } from "./kill-script.js";

export const setups = killScriptSetups("record");
