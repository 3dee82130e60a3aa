/** `JSON.rawJSON` (Node 21 and later), which TypeScript's libraries do not declare yet. */
const rawJson = (text: string): unknown => (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON(text);

/**
 * An event's body as sent (and signed): `value` as JSON, its bigint fields (int64 ids) written as
 * their exact digits, never through a double; an absent optional field is left out. A generated
 * resource's event (`<singular>.created`) sends its new value so, as the New… schema documents it.
 */
export function eventBody(value: object): string {
  return JSON.stringify(value, (_key, field: unknown) =>
    typeof field === 'bigint' ? rawJson(field.toString()) : field,
  );
}
