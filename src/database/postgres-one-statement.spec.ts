import { CompiledQuery } from 'kysely';
import { fuseStatements } from './postgres-one-statement';
import { STATEMENT_NAME } from './prepared-query';

const write = CompiledQuery.raw('INSERT INTO t (id) SELECT * FROM unnest($1::bigint[]) RETURNING id', [[1, 2]]);

describe('fuseStatements', () => {
  it('should hoist the published WITH list beside the write, renumber its placeholders after the write’s, and count the rows last', () => {
    const published = CompiledQuery.raw(
      `WITH a (x) AS (SELECT $1::text), b AS MATERIALIZED (INSERT INTO m SELECT x, 'it''s $1 (' FROM a RETURNING 1)
       SELECT count(*) AS n FROM b WHERE $2`,
      ['x', true],
    );
    const fused = fuseStatements(write, 2, published)!;
    expect(fused.sql).toBe(
      'WITH insert_once_written AS (INSERT INTO t (id) SELECT * FROM unnest($1::bigint[]) RETURNING id), ' +
        "a (x) AS (SELECT $2::text), b AS MATERIALIZED (INSERT INTO m SELECT x, 'it''s $1 (' FROM a RETURNING 1) " +
        'SELECT (SELECT 1 / ((SELECT count(*) FROM insert_once_written) = $4::bigint)::int) AS guard, ' +
        '(SELECT json_agg(t) FROM (SELECT count(*) AS n FROM b WHERE $3) t) AS published',
    );
    expect(fused.parameters).toEqual([[1, 2], 'x', true, 2]);
    // Named for its write, so its trace span reads `pg.query:INSERT-…`.
    expect((fused as { [STATEMENT_NAME]?: string })[STATEMENT_NAME]).toMatch(/^INSERT-/);
  });

  it('should renumber a placeholder, never a `$` inside an unquoted name', () => {
    const published = CompiledQuery.raw('SELECT a$1, $1 FROM m', ['x']);
    expect(fuseStatements(write, 1, published)?.sql).toContain('FROM (SELECT a$1, $2 FROM m) t');
  });

  it('should fuse the write alone when nothing is published', () => {
    expect(fuseStatements(write, 1)?.sql).toMatch(
      /\) SELECT \(SELECT 1 \/ .*= \$2::bigint\)::int\) AS guard, NULL AS published$/,
    );
  });

  it.each([
    ['a statement other than a SELECT', 'INSERT INTO m VALUES ($1)'],
    ['a WITH RECURSIVE', 'WITH RECURSIVE a AS (SELECT 1) SELECT * FROM a'],
    ['dollar quoting', 'SELECT $$x$$'],
    ['a comment', 'SELECT 1 -- (\n'],
    ['an unbalanced parenthesis', 'WITH a AS (SELECT 1 SELECT 2'],
    ['a CTE of the same name', 'WITH insert_once_written AS (SELECT 1) SELECT 1'],
  ])('should not fuse %s', (_what, text) => {
    expect(fuseStatements(write, 1, CompiledQuery.raw(text, []))).toBeUndefined();
  });
});
