/**
 * The features of the command line, one module each (see feature.ts). A chapter adds its feature
 * with one line here. Contract: every value exported is a `CliFeature`; `--help` shows them in
 * the order of their names.
 */
export type { CliFeature } from "./feature.js";
// #region ch14
export { evalSuite } from "./eval.js";
// #endregion
// #region ch16
export { codemode } from "./codemode.js";
// #endregion
// #region ch17
export { mcp } from "./mcp.js";
// #endregion
// #region ch18
export { models } from "./models.js";
// #endregion
// #region ch19
export { durable } from "./durable.js";
// #endregion
