import { Kysely, SqliteDialect } from 'kysely';
import { prepareQuery } from './prepared-query';

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
