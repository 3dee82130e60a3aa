import { CompiledQuery } from 'kysely';

const PLACEHOLDER = '\u0000plant-store-parameter:';

/**
 * A query built and compiled once, then run with other values each time. Kysely builds and compiles
 * a query on every call (about 17 µs for a small INSERT on our machine), which a hot path such as
 * the group commit (one statement per plant) should not pay again and again. `build` receives one
 * placeholder per named value and returns the compiled query; the result gives the same SQL with the
 * values in the placeholders' places. Every value of the query must be a placeholder, so only
 * queries of a fixed shape qualify (no list whose length varies).
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
  return (values) => ({ ...compiled, parameters: slots.map((key) => values[key]) });
}
