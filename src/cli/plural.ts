/** `1 slot`, `2 slots`, `0 workers`: a count with its noun, plural unless the count is exactly 1. */
export function plural(n: number, noun: string, many = `${noun}s`): string {
  return `${n} ${n === 1 ? noun : many}`;
}
