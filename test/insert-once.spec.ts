import { ResourceConflictError } from '../src/common/errors/resource-conflict.error';
import { insertOnce } from '../src/database/insert-once';
import { PLANTS_MIGRATIONS } from '../src/plants/persistence/plants.migrations';
import { plantQueries } from '../src/plants/persistence/sql-plants.repository';
import { describeOnEachDatabase } from './support/stores';

/**
 * The shared create rule (a new resource's repository starts with it), on each store, over a real
 * table: plants'. Stored once; the same row again is a replay; other content is a 409; concurrent
 * creates of one key store it once.
 */
describeOnEachDatabase('insertOnce on %s', PLANTS_MIGRATIONS, (database) => {
  const queries = () => plantQueries(database().kysely);
  const create = (id: bigint, name: string) =>
    insertOnce(
      database(),
      'a plant',
      { insert: queries().insert({ id, name, tag: null }), stored: queries().byId({ id }) },
      (stored) => stored.name === name && stored.tag === null,
      `A plant with id ${id} already exists with a different name or tag`,
    );
  const names = async (id: bigint) =>
    (await database().execute('read', queries().byId({ id }))).rows.map((row) => row.name);

  it('should store a new key, then answer the same content as a replay', async () => {
    await expect(create(9007199254740993n, 'Monstera')).resolves.toEqual({ created: true });
    await expect(create(9007199254740993n, 'Monstera')).resolves.toEqual({ created: false });
    expect(await names(9007199254740993n)).toEqual(['Monstera']);
  });

  it('should refuse other content for a stored key with ResourceConflictError, and change nothing', async () => {
    await create(-4n, 'Aloe');
    const conflict = create(-4n, 'Pothos');
    await expect(conflict).rejects.toThrow(ResourceConflictError);
    await expect(conflict).rejects.toThrow('A plant with id -4 already exists with a different name or tag');
    expect(await names(-4n)).toEqual(['Aloe']);
  });

  it('should store a key once when many create it at once, the rest being replays or conflicts', async () => {
    const outcomes = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) => create(77n, i % 2 === 0 ? 'Fern' : 'Ivy')),
    );
    expect(outcomes.filter((o) => o.status === 'fulfilled' && o.value.created)).toHaveLength(1);
    const rejected = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
    expect(rejected).toHaveLength(10);
    for (const o of rejected) expect(o.reason).toBeInstanceOf(ResourceConflictError);
  });
});
