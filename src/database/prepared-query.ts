import { createHash } from 'node:crypto';
import { CompiledQuery } from 'kysely';

const PLACEHOLDER = '\u0000plant-store-parameter:';

/**
 * Where a compiled query whose SQL text is fixed by construction carries the name PostgreSQL may
 * prepare it under (`statementName`). Only such queries get one: a statement whose text varies (an
 * `IN (…)` list of variable length, say) would grow each connection's statement cache without bound.
 */
export const STATEMENT_NAME = Symbol('plant-store statement name');

/** A compiled query marked as fixed-text: `STATEMENT_NAME` holds its name. */
export type NamedQuery<Row> = CompiledQuery<Row> & { readonly [STATEMENT_NAME]?: string };

/**
 * A stable name for `sql`: its command, then a short hash of the text, so one text has one name on
 * every instance. The command first keeps pg's trace spans readable (the pg instrumentation names a
 * named statement's span after its name: `pg.query:WITH-…`, `pg.query:SELECT-…`).
 */
export function statementName(sql: string): string {
  const command = /^\s*([A-Za-z]+)/.exec(sql)?.[1]?.toUpperCase() ?? 'SQL';
  return `${command}-${createHash('sha256').update(sql).digest('base64url').slice(0, 22)}`;
}

/**
 * `query`, marked as one whose text never varies (at most a few texts for the process's life), so
 * PostgreSQL may run it as a named prepared statement. For a statement built per call whose text is
 * nonetheless fixed for a given wiring (the plants' batch insert with its outbox CTEs).
 */
export function fixedText<Row>(query: CompiledQuery<Row>): CompiledQuery<Row> {
  const named: NamedQuery<Row> = { ...query, [STATEMENT_NAME]: nameOf(query.sql) };
  return named;
}

const names = new Map<string, string>();

function nameOf(sql: string): string {
  let name = names.get(sql);
  if (name === undefined) {
    name = statementName(sql);
    names.set(sql, name);
  }
  return name;
}

/**
 * A query built and compiled once, then run with other values each time. Kysely builds and compiles
 * a query on every call (about 17 µs for a small INSERT on our machine), which a hot path such as
 * the group commit (one statement per plant) should not pay again and again. `build` receives one
 * placeholder per named value and returns the compiled query; the result gives the same SQL with the
 * values in the placeholders' places. Every value of the query must be a placeholder, so only
 * queries of a fixed shape qualify (no list whose length varies): their text never changes, so each
 * is marked fixed-text (`STATEMENT_NAME`) and PostgreSQL runs it as a named prepared statement.
 */
export function prepareQuery<Values extends Record<string, unknown>, Row>(
  build: (values: Values) => CompiledQuery<Row>,
): (values: Values) => CompiledQuery<Row> {
  const placeholders = new Proxy({} as Values, { get: (_target, key) => `${PLACEHOLDER}${String(key)}` });
  const compiled = build(placeholders);
  const slots = compiled.parameters.map((parameter) => {
    if (typeof parameter !== 'string' || !parameter.startsWith(PLACEHOLDER)) {
      throw new Error(`prepareQuery: a value of "${compiled.sql}" is not a placeholder`);
    }
    return parameter.slice(PLACEHOLDER.length);
  });
  const { sql, query, queryId } = compiled;
  const name = nameOf(sql);
  return (values) =>
    new PreparedCall<Row>(
      sql,
      query,
      queryId,
      slots.map((key) => values[key]),
      name,
    );
}

/**
 * One call of a prepared query: objects of one shape, made by a constructor. Spreading the compiled
 * query (it holds a symbol key) took V8's slow generic copy, and an object literal with a computed
 * key calls into V8's runtime until its code is optimised: a share of a read by id either way.
 */
class PreparedCall<Row> implements NamedQuery<Row> {
  readonly [STATEMENT_NAME]: string;

  constructor(
    readonly sql: string,
    readonly query: CompiledQuery<Row>['query'],
    readonly queryId: CompiledQuery<Row>['queryId'],
    readonly parameters: readonly unknown[],
    name: string,
  ) {
    this[STATEMENT_NAME] = name;
  }
}
