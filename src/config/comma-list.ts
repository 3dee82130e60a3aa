/** The items of a comma-separated variable, trimmed, empty ones dropped. */
export function commaList(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
}
