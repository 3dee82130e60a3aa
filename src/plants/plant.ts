/** A plant in the store. `id` is a bigint so every int64 is kept exactly. */
export interface Plant {
  readonly id: bigint;
  readonly name: string;
  readonly tag?: string;
}

/** Two plants are the same when id, name and tag all match (a missing tag equals a missing tag). */
export function samePlant(a: Plant, b: Plant): boolean {
  return a.id === b.id && a.name === b.name && a.tag === b.tag;
}
