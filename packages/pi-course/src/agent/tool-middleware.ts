/**
 * The features every run's tool batch gets (see `ToolMiddleware` in types.ts), in the order their
 * hooks are asked: one list, so a feature plugs in here instead of patching the loop. Each run
 * makes its own hooks from its context (`LoopRun`).
 */
import type { ToolMiddlewareFactory } from "./types.js";
// #region ch15
import { toolExposure } from "./tool-exposure.js";
// #endregion
// #region ch16
import { nestedCalls } from "./nested-calls.js";
// #endregion

export const BUILT_IN_MIDDLEWARE: readonly ToolMiddlewareFactory[] = [
  // #region ch15
  toolExposure,
  // #endregion
  // #region ch16
  nestedCalls,
  // #endregion
];
