export function clamp(x, lo, hi) {
  return Math.max(x, Math.min(lo, hi));
}
