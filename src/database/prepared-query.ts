import { createHash } from 'node:crypto';
import { CompiledQuery } from 'kysely';

const PLACEHOLDER = '\u0000plant-store-parameter:';

/**
 * Where a compiled query whose SQL text is fixed by construction carries the name PostgreSQL may
 * prepare it under. Only such queries get one: a statement whose text varies (an `IN (…)` list of
 * variable length, say) would grow each connection's statement cache without bound.
 */
export const STATEMENT_NAME = Symbol('plant-store statement name');

/** A compiled query marked as fixed-text: `STATEMENT_NAME` holds its name. */
export type NamedQuery<Row> = CompiledQuery<Row> & { readonly [STATEMENT_NAME]?: string };

/**
 * A stable name for `sql`: its command, then a short hash of the text, so one text has one name on
 * every instance. The command first keeps pg's trace spans, named after it, readable (`pg.query:SELECT-…`);
 * a statement that opens with a data-modifying CTE is named for that (a create with its events: `INSERT`).
 */
export function statementName(sql: string): string {
  const command =
    (/^\s*WITH\s+\w+\s+AS\s+\(\s*(INSERT|UPDATE|DELETE)\b/i.exec(sql) ??
      /^\s*([A-Za-z]+)/.exec(sql))?.[1]?.toUpperCase() ?? 'SQL';
  return `${command}-${createHash('sha256').update(sql).digest('base64url').slice(0, 22)}`;
}

/**
 * `query`, marked as fixed-text (at most a few texts for the process's life): for a statement built per
 * call whose text is nonetheless fixed for a given wiring (the plants' batch insert with its outbox CTEs).
 */
export function fixedText<Row>(query: CompiledQuery<Row>): CompiledQuery<Row> {
  const named: NamedQuery<Row> = { ...query, [STATEMENT_NAME]: nameOf(query.sql) };
  return named;
}

const names = new Map<string, string>();

function nameOf(sql: string): string {
  let name = names.get(sql);
  if (name === undefined) names.set(sql, (name = statementName(sql)));
  return name;
}

/**
 * A query built and compiled once, then run with other values each time: Kysely builds and compiles on
 * every call, a cost a hot path such as the group commit should not pay per item. `build` gets one
 * placeholder per named value, and every value of the query must be one: so only queries of a fixed
 * shape qualify (no list of varying length), and each is marked fixed-text.
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
  const parameters = (values: Values) => slots.map((key) => values[key]);
  return (values) => new PreparedCall<Row>(sql, query, queryId, name, parameters(values));
}

// One call of a prepared query, made by a constructor: spreading the compiled query (it holds a symbol
// key) takes V8's slow generic copy, and a literal with a computed key calls into V8's runtime until
// optimised; either cost a share of a read by id.
class PreparedCall<Row> implements NamedQuery<Row> {
  readonly [STATEMENT_NAME]: string;

  constructor(
    readonly sql: string,
    readonly query: CompiledQuery<Row>['query'],
    readonly queryId: CompiledQuery<Row>['queryId'],
    name: string,
    readonly parameters: readonly unknown[],
  ) {
    this[STATEMENT_NAME] = name;
  }
}
