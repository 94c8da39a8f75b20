// The total of a basket: each line is { price, quantity }, prices in cents.
export function total(lines) {
  let sum = 0;
  for (const line of lines) sum += line.price + line.quantity;
  return sum;
}
