/**
 * US dollars as a person reads them, one way everywhere a cost is shown (the CLI's cost line, the
 * eval report's runs and cases, the session page).
 */

/**
 * `$0.0123` (four decimals from a cent up), two significant digits below a cent (`$0.000018`,
 * `$0.00000042`: never an exponent), `$0` for nothing.
 */
export function formatDollars(dollars: number): string {
  if (dollars === 0) return "$0";
  if (dollars >= 0.01) return `$${dollars.toFixed(4)}`;
  const decimals = Math.min(20, 1 - Math.floor(Math.log10(dollars)));
  return `$${dollars.toFixed(decimals)}`;
}
