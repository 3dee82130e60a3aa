/**
 * One step of the schema, owned by a feature, as DDL text in each dialect (where they differ most).
 * Kysely's `Migrator` records each applied name in `kysely_migration` and applies the missing ones at
 * start-up, in name order. A released step is never edited, only followed.
 *
 * Names, not one global number, so two features (or branches) never pick the same one:
 * `<feature>/<YYYY-MM-DD>-<NN>-<what>`, e.g. `plants/2026-11-20-01-create-plants`. Across features,
 * names do not sort in merge order (a webhooks step of Monday sorts before a plants step of Sunday),
 * so the migrator allows unordered migrations: whatever is missing runs, in name order. A step that
 * needs another feature's table must be named after that table's step, or live in that feature.
 */
export interface Migration {
  readonly name: string;
  readonly sqlite: string;
  readonly postgres: string;
  /**
   * Only for steps released before named migrations: their version in those builds' integer
   * `schema_migrations`, so a database they made is carried over without running the step again.
   */
  readonly legacyVersion?: number;
}

/** `<feature>/<YYYY-MM-DD>-<NN>-<what>`, lower case, what in words joined by `-`. */
export const MIGRATION_NAME = /^([a-z][a-z0-9-]*)\/\d{4}-\d{2}-\d{2}-\d{2}-[a-z0-9]+(?:-[a-z0-9]+)*$/;

/**
 * Every feature's steps in name order (the order the migrator applies the missing ones). Throws if a
 * name is malformed, if two steps share a name (two features or branches picked the same one), or
 * if two claim the same legacy version.
 */
export function inNameOrder(migrations: readonly Migration[]): Migration[] {
  const names = new Set<string>();
  const legacy = new Map<number, string>();
  for (const { name, legacyVersion: version } of migrations) {
    if (!MIGRATION_NAME.test(name))
      throw new Error(`Migration "${name}" is not named <feature>/<YYYY-MM-DD>-<NN>-<what>`);
    if (names.has(name)) throw new Error(`Two migrations share the name "${name}"`);
    names.add(name);
    if (version === undefined) continue;
    const other = legacy.get(version);
    if (other !== undefined)
      throw new Error(`Two migrations claim legacy version ${version}: "${other}" and "${name}"`);
    legacy.set(version, name);
  }
  return [...migrations].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
