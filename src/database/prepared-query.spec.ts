import { Kysely, SqliteDialect } from 'kysely';
import { fixedText, NamedQuery, prepareQuery, STATEMENT_NAME, statementName } from './prepared-query';

interface Tables {
  things: { id: bigint; name: string; tag: string | null };
}

// Compiles only: the dialect's database is never opened.
const db = new Kysely<Tables>({
  dialect: new SqliteDialect({ database: () => Promise.reject(new Error('compile only')) }),
});

describe('prepareQuery', () => {
  it('should give the SQL Kysely compiles, with each value in its place', () => {
    const page = prepareQuery<{ after: bigint; limit: number }, unknown>(({ after, limit }) =>
      db.selectFrom('things').select(['id', 'name']).where('id', '>', after).orderBy('id').limit(limit).compile(),
    );
    const direct = db.selectFrom('things').select(['id', 'name']).where('id', '>', 7n).orderBy('id').limit(3).compile();
    expect(page({ after: 7n, limit: 3 })).toMatchObject({ sql: direct.sql, parameters: [7n, 3] });
    expect(page({ limit: 10, after: -(2n ** 63n) }).parameters).toEqual([-(2n ** 63n), 10]);
  });

  it('should keep the order of the values as the SQL uses them, and null as a value', () => {
    const insert = prepareQuery<{ id: bigint; name: string; tag: string | null }, never>(({ tag, name, id }) =>
      db.insertInto('things').values({ id, name, tag }).compile(),
    );
    expect(insert({ id: 1n, name: 'a', tag: null })).toMatchObject({
      sql: 'insert into "things" ("id", "name", "tag") values (?, ?, ?)',
      parameters: [1n, 'a', null],
    });
  });

  it('should refuse a query with a value that is not a placeholder', () => {
    expect(() =>
      prepareQuery<{ id: bigint }, unknown>(({ id }) =>
        db.selectFrom('things').selectAll().where('id', '=', id).where('name', '=', 'fixed').compile(),
      ),
    ).toThrow('prepareQuery: a value of "select * from "things" where "id" = ? and "name" = ?" is not a placeholder');
  });
});

describe('statement names', () => {
  const byId = prepareQuery<{ id: bigint }, unknown>(({ id }) =>
    db.selectFrom('things').select(['id', 'name']).where('id', '=', id).compile(),
  );

  it('should mark a prepared query with one name for its text, the same on every call and every compile', () => {
    const again = prepareQuery<{ id: bigint }, unknown>(({ id }) =>
      db.selectFrom('things').select(['id', 'name']).where('id', '=', id).compile(),
    );
    const name = (byId({ id: 1n }) as NamedQuery<unknown>)[STATEMENT_NAME];
    expect(name).toBe(statementName(byId({ id: 1n }).sql));
    expect(name).toMatch(/^SELECT-[\w-]{22}$/);
    expect((byId({ id: 2n }) as NamedQuery<unknown>)[STATEMENT_NAME]).toBe(name);
    expect((again({ id: 3n }) as NamedQuery<unknown>)[STATEMENT_NAME]).toBe(name);
  });

  it('should give another text another name, and leave a plain compiled query unmarked', () => {
    const other = fixedText(db.selectFrom('things').select('id').compile()) as NamedQuery<unknown>;
    expect(other[STATEMENT_NAME]).toMatch(/^SELECT-/);
    expect(other[STATEMENT_NAME]).not.toBe((byId({ id: 1n }) as NamedQuery<unknown>)[STATEMENT_NAME]);
    const plain = db.selectFrom('things').select('id').compile() as NamedQuery<unknown>;
    expect(plain[STATEMENT_NAME]).toBeUndefined();
  });

  it('should name a statement that opens with a data-modifying CTE for that command, and any other for its first', () => {
    expect(statementName('WITH w AS (INSERT INTO t VALUES (1) RETURNING id) SELECT 1')).toMatch(/^INSERT-/);
    expect(statementName('WITH e AS (SELECT 1), m AS (INSERT INTO m SELECT 1) SELECT 1')).toMatch(/^WITH-/);
  });
});
