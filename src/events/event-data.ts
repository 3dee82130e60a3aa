/** `JSON.rawJSON` (Node 21 and later), which TypeScript's libraries do not declare yet. */
const rawJson = (text: string): unknown => (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON(text);

/**
 * An event's data as JSON text: `value`'s fields, its bigint ones (int64 ids) written as their exact
 * digits, never through a double; an absent optional field is left out. A generated resource's event
 * (`<singular>.created`) carries its new value so, as the New… schema documents it.
 */
export function eventData(value: object): string {
  return JSON.stringify(value, (_key, field: unknown) =>
    typeof field === 'bigint' ? rawJson(field.toString()) : field,
  );
}
