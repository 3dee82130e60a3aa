/**
 * One versioned step of the schema, in each dialect. Every feature owns its steps; `AppModule` hands
 * them all to `DatabaseModule`, which applies the missing ones in version order at start-up and
 * records them in `schema_migrations`. Versions are global (one sequence for all features), so a new
 * step takes the next free number; a released step is never edited, only followed.
 */
export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sqlite: string;
  readonly postgres: string;
}

/** The steps in version order; throws if two share a version (two features picked the same number). */
export function inVersionOrder(migrations: readonly Migration[]): Migration[] {
  const sorted = [...migrations].sort((a, b) => a.version - b.version);
  sorted.forEach((migration, i) => {
    if (i > 0 && sorted[i - 1].version === migration.version) {
      throw new Error(
        `Two migrations share version ${migration.version}: "${sorted[i - 1].name}" and "${migration.name}"`,
      );
    }
  });
  return sorted;
}

/** The error for a database whose schema is newer than this build. */
export function newerSchemaError(store: string, newest: number, latest: number): Error {
  return new Error(`The ${store} database has schema version ${newest}, newer than this build knows (${latest})`);
}
