import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { Database } from '../src/database/database';
import { PostgresDatabase } from '../src/database/postgres-database';
import { SqliteDatabase } from '../src/database/sqlite-database';
import { StorageError } from '../src/database/storage.error';
import { PLANTS_MIGRATIONS } from '../src/plants/persistence/plants.migrations';
import { Endpoint } from '../src/webhooks/endpoints/endpoint';
import { EndpointIds } from '../src/webhooks/endpoints/endpoint-ids';
import { newSecret } from '../src/webhooks/endpoints/endpoints.service';
import { EndpointLimitError, EndpointsStore, EndpointUrlTakenError } from '../src/webhooks/endpoints/endpoints.store';
import { isSealed, SecretsCipher, SecretsKeyError } from '../src/webhooks/secrets/secrets-cipher';
import { CONFIGURED_SECRETS, SecretsColumn } from '../src/webhooks/secrets/secrets-column';
import { SqlEndpointsStore } from '../src/webhooks/persistence/sql-endpoints.store';
import { WEBHOOK_MIGRATIONS } from '../src/webhooks/persistence/webhooks.migrations';
import { sealInFirstForm } from './support/first-form-seal';
import { createTestSchema, describeOnEachStore, TestSchema } from './support/postgres';

const MIGRATIONS = [...PLANTS_MIGRATIONS, ...WEBHOOK_MIGRATIONS];
const KEY = Buffer.alloc(32, 7).toString('base64');
const OTHER_KEY = Buffer.alloc(32, 9).toString('base64');
const CONFIGURED = 'whsec_' + Buffer.alloc(32, 1).toString('base64');
const columnWith = (keys = [KEY]) => new SecretsColumn(new SecretsCipher(keys), [CONFIGURED]);

/**
 * The endpoints store's behaviour, written once and run on each store: keyset pages, one endpoint
 * per URL, the cap on API endpoints settled in the database (also across instances), the reconcile of
 * the `config` endpoints, secrets sealed at rest and resealed at start-up, the reset of a re-enabled
 * endpoint, and each store's own clock.
 */
describeOnEachStore('the webhook endpoints store (contract, on %s)', (postgres) => {
  const ids = new EndpointIds();
  let dir: string | undefined;
  let schema: TestSchema | undefined;
  const opened: Database[] = [];
  let database: Database;
  let store: EndpointsStore;

  /** Another instance over the same store (a second process on the file, a second instance on PostgreSQL). */
  const open = async (): Promise<Database> => {
    const next = postgres
      ? new PostgresDatabase({ url: schema!.url, poolMax: 4, connectAttempts: 1, queryTimeoutMs: 10_000 }, MIGRATIONS)
      : new SqliteDatabase(join(dir!, 'plants.db'), MIGRATIONS);
    await next.onModuleInit();
    opened.push(next);
    return next;
  };
  const storeOn = (on: Database, column = columnWith()) => new SqlEndpointsStore(on, on.kysely, column);
  const db = () => database.kysely;
  /** A time as this store writes it: Unix ms on SQLite, a timestamptz on PostgreSQL. */
  const time = (ms: number) => (postgres ? sql<number>`to_timestamp(${ms / 1000})` : sql<number>`${ms}`);
  const newEndpoint = (url: string, disabled = false) => ({
    id: ids.next(),
    url,
    description: '',
    disabled,
    secret: newSecret(),
  });
  const rawSecrets = async (id: string) =>
    (
      await database.execute(
        'test',
        db().selectFrom('webhook_endpoints').select('secrets').where('id', '=', id).compile(),
      )
    ).rows[0].secrets;
  const setRaw = async (id: string, values: Record<string, unknown>) =>
    database.execute(
      'test',
      db()
        .updateTable('webhook_endpoints')
        .set(values as never)
        .where('id', '=', id)
        .compile(),
    );
  const count = async (table: 'webhook_deliveries' | 'webhook_attempts' | 'webhook_endpoints') =>
    Number(
      (
        await database.execute(
          'test',
          db()
            .selectFrom(table)
            .select((eb) => eb.fn.countAll().as('n'))
            .compile(),
        )
      ).rows[0].n,
    );

  beforeEach(async () => {
    if (postgres) schema = await createTestSchema();
    else dir = mkdtempSync(join(tmpdir(), 'plant-store-endpoints-'));
    database = await open();
    store = storeOn(database);
  });
  afterEach(async () => {
    jest.restoreAllMocks();
    for (const each of opened.splice(0)) await (each as SqliteDatabase | PostgresDatabase).onApplicationShutdown();
    await schema?.drop();
    schema = undefined;
    if (dir) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });

  describe('create and get', () => {
    it('should store an api endpoint and read it back as it was made', async () => {
      const before = Date.now();
      const made = newEndpoint('https://receiver.example/hook?token=abc');
      const endpoint = await store.create({ ...made, description: 'Inventory sync' }, 100);
      expect(endpoint).toEqual({
        id: made.id,
        url: 'https://receiver.example/hook?token=abc',
        description: 'Inventory sync',
        disabled: false,
        eventTypes: ['plant.created'],
        source: 'api',
        createdAtMs: expect.any(Number),
        updatedAtMs: endpoint.createdAtMs,
      });
      // The PostgreSQL server's clock is another machine's in production, but this one's here.
      expect(endpoint.createdAtMs).toBeGreaterThanOrEqual(before - 1000);
      expect(endpoint.createdAtMs).toBeLessThanOrEqual(Date.now() + 1000);
      await expect(store.get(made.id)).resolves.toEqual(endpoint);
      await expect(store.create(newEndpoint('http://127.0.0.1:1/off', true), 100)).resolves.toMatchObject({
        disabled: true,
      });
    });

    it('should answer undefined for an endpoint that does not exist', async () => {
      await expect(store.get('ep_missing')).resolves.toBeUndefined();
      await expect(store.secrets('ep_missing')).resolves.toBeUndefined();
    });

    it('should refuse a second endpoint with the same url, and keep the first', async () => {
      const first = await store.create(newEndpoint('http://127.0.0.1:1/same'), 100);
      await expect(store.create(newEndpoint('http://127.0.0.1:1/same'), 100)).rejects.toThrow(EndpointUrlTakenError);
      await expect(store.list(10)).resolves.toEqual([first]);
    });

    it('should keep the secret sealed at rest, and give it back in clear', async () => {
      const made = newEndpoint('http://127.0.0.1:1/a');
      await store.create(made, 100);
      const raw = await rawSecrets(made.id);
      expect(isSealed(raw)).toBe(true);
      expect(raw).not.toContain(made.secret.slice(6));
      await expect(store.secrets(made.id)).resolves.toEqual([{ secret: made.secret }]);
    });

    it("should write times with each store's own clock: the process's on SQLite, the server's on PostgreSQL", async () => {
      const yearAgo = Date.now() - 365 * 86_400_000;
      jest.spyOn(Date, 'now').mockReturnValue(yearAgo);
      const endpoint = await store.create(newEndpoint('http://127.0.0.1:1/clock'), 100);
      jest.restoreAllMocks();
      if (postgres) expect(endpoint.createdAtMs).toBeGreaterThan(yearAgo + 300 * 86_400_000);
      else expect(endpoint.createdAtMs).toBe(yearAgo);
    });
  });

  describe('the cap on api endpoints (WEBHOOK_MAX_ENDPOINTS)', () => {
    it('should count disabled api endpoints, not config ones, and refuse one more at the cap', async () => {
      await store.reconcile(['http://127.0.0.1:1/config'], () => ids.next());
      await store.create(newEndpoint('http://127.0.0.1:1/a'), 2);
      await store.create(newEndpoint('http://127.0.0.1:1/b', true), 2);
      const refused = store.create(newEndpoint('http://127.0.0.1:1/c'), 2);
      await expect(refused).rejects.toThrow(EndpointLimitError);
      await expect(refused).rejects.toMatchObject({ max: 2 });
      expect(await count('webhook_endpoints')).toBe(3);
      await expect(store.create(newEndpoint('http://127.0.0.1:1/c'), 3)).resolves.toMatchObject({ source: 'api' });
    });

    it('should hold across instances creating at once: exactly the cap is stored', async () => {
      const others = [storeOn(await open()), storeOn(await open())];
      const stores = [store, ...others];
      const results = await Promise.allSettled(
        Array.from({ length: 12 }, (_, i) => stores[i % 3].create(newEndpoint(`http://127.0.0.1:1/${i}`), 5)),
      );
      const refused = results.filter((result) => result.status === 'rejected');
      expect(refused).toHaveLength(7);
      for (const result of refused) expect(result.reason).toBeInstanceOf(EndpointLimitError);
      expect(await count('webhook_endpoints')).toBe(5);
    });
  });

  describe('list', () => {
    it('should page oldest first by id, after the last id of the previous page', async () => {
      const made: Endpoint[] = [];
      for (let i = 0; i < 5; i++) made.push(await store.create(newEndpoint(`http://127.0.0.1:1/${i}`), 100));
      await expect(store.list(2)).resolves.toEqual(made.slice(0, 2));
      await expect(store.list(2, made[1].id)).resolves.toEqual(made.slice(2, 4));
      await expect(store.list(2, made[3].id)).resolves.toEqual(made.slice(4));
      await expect(store.list(2, made[4].id)).resolves.toEqual([]);
    });
  });

  describe('event types', () => {
    it('should keep the event types an endpoint subscribes to, plant.created unless given, and change them', async () => {
      const endpoint = await store.create(
        { ...newEndpoint('http://127.0.0.1:1/a'), eventTypes: ['x.made', 'y.made'] },
        100,
      );
      expect(endpoint.eventTypes).toEqual(['x.made', 'y.made']);
      await expect(store.get(endpoint.id)).resolves.toMatchObject({ eventTypes: ['x.made', 'y.made'] });
      await expect(store.update(endpoint.id, { eventTypes: ['plant.created'] })).resolves.toMatchObject({
        eventTypes: ['plant.created'],
      });
      await expect(store.update(endpoint.id, { description: 'kept' })).resolves.toMatchObject({
        eventTypes: ['plant.created'],
      });
      await store.reconcile(['http://127.0.0.1:1/c'], () => ids.next());
      const listed = await store.list(10);
      expect(listed.map(({ url, eventTypes }) => ({ url, eventTypes }))).toEqual([
        { url: 'http://127.0.0.1:1/a', eventTypes: ['plant.created'] },
        { url: 'http://127.0.0.1:1/c', eventTypes: ['plant.created'] },
      ]);
    });
  });

  describe('update', () => {
    it('should change only what is given, and answer undefined for a missing endpoint', async () => {
      const endpoint = await store.create({ ...newEndpoint('http://127.0.0.1:1/a'), description: 'first' }, 100);
      const changed = await store.update(endpoint.id, { url: 'http://127.0.0.1:1/b' });
      expect(changed).toEqual({
        ...endpoint,
        url: 'http://127.0.0.1:1/b',
        updatedAtMs: expect.any(Number),
      });
      expect(changed!.updatedAtMs).toBeGreaterThanOrEqual(endpoint.updatedAtMs);
      await expect(store.update(endpoint.id, { description: 'second', disabled: true })).resolves.toMatchObject({
        url: 'http://127.0.0.1:1/b',
        description: 'second',
        disabled: true,
      });
      await expect(store.update('ep_missing', { disabled: true })).resolves.toBeUndefined();
    });

    it('should refuse a url another endpoint has', async () => {
      await store.create(newEndpoint('http://127.0.0.1:1/a'), 100);
      const other = await store.create(newEndpoint('http://127.0.0.1:1/b'), 100);
      await expect(store.update(other.id, { url: 'http://127.0.0.1:1/a' })).rejects.toThrow(EndpointUrlTakenError);
      await expect(store.get(other.id)).resolves.toEqual(other);
    });

    it('should start a re-enabled endpoint afresh: no reason, failures, signals, throttle, backoff or cap', async () => {
      const endpoint = await store.create(newEndpoint('http://127.0.0.1:1/a'), 100);
      const troubled = {
        disabled: postgres ? true : 1,
        disabled_reason: 'the receiver answered 410 Gone',
        failures: 3,
        failing_since: time(Date.now() - 60_000),
        paused_until: time(Date.now() + 60_000),
        signals: 5,
        throttled: postgres ? true : 1,
        backoffs: 2,
        in_flight_cap: 1,
      };
      await setRaw(endpoint.id, troubled);
      // Disabled again through the API: the service's reason stays.
      await expect(store.update(endpoint.id, { disabled: true })).resolves.toMatchObject({
        disabled: true,
        disabledReason: 'the receiver answered 410 Gone',
      });
      const enabled = await store.update(endpoint.id, { disabled: false });
      expect(enabled).toEqual({ ...endpoint, updatedAtMs: expect.any(Number) });
      const { rows } = await database.execute(
        'test',
        db()
          .selectFrom('webhook_endpoints')
          .select([
            'failures',
            'failing_since',
            'paused_until',
            'signals',
            sql<number>`CASE WHEN throttled THEN 1 ELSE 0 END`.as('throttled'),
            'backoffs',
            'in_flight_cap',
          ])
          .where('id', '=', endpoint.id)
          .compile(),
      );
      expect(
        Object.fromEntries(Object.entries(rows[0]).map(([key, value]) => [key, value === null ? null : Number(value)])),
      ).toEqual({
        failures: 0,
        failing_since: null,
        paused_until: null,
        signals: 0,
        throttled: 0,
        backoffs: 0,
        in_flight_cap: null,
      });
    });
  });

  describe('delete', () => {
    it('should delete the endpoint with its deliveries and their attempts, and nothing of another', async () => {
      const gone = await store.create(newEndpoint('http://127.0.0.1:1/gone'), 100);
      const kept = await store.create(newEndpoint('http://127.0.0.1:1/kept'), 100);
      const now = time(Date.now());
      await database.execute(
        'test',
        db()
          .insertInto('webhook_messages')
          .values({ id: 'msg_1', event_type: 'plant.created', payload: '{}', created_at: now })
          .compile(),
      );
      for (const endpoint of [gone, kept]) {
        const { rows } = await database.execute(
          'test',
          db()
            .insertInto('webhook_deliveries')
            .values({ message_id: 'msg_1', endpoint_id: endpoint.id, created_at: now, next_attempt_at: now })
            .returning('id')
            .compile(),
        );
        await database.execute(
          'test',
          db()
            .insertInto('webhook_attempts')
            .values({ delivery_id: BigInt(rows[0].id), at: now, duration_ms: 3 })
            .compile(),
        );
      }
      await expect(store.delete(gone.id)).resolves.toBe(true);
      await expect(store.get(gone.id)).resolves.toBeUndefined();
      expect([await count('webhook_deliveries'), await count('webhook_attempts')]).toEqual([1, 1]);
      await expect(store.delete(gone.id)).resolves.toBe(false);
      await expect(store.get(kept.id)).resolves.toEqual(kept);
    });
  });

  describe('secrets', () => {
    it('should replace the secrets by what the change makes of them, sealed', async () => {
      const made = newEndpoint('http://127.0.0.1:1/a');
      await store.create(made, 100);
      const next = newSecret();
      const seen: unknown[] = [];
      await expect(
        store.updateSecrets(made.id, (secrets) => {
          seen.push(secrets);
          return [{ secret: next }, { secret: secrets[0].secret, expiresAtMs: 1_900_000_000_000 }];
        }),
      ).resolves.toBe(true);
      expect(seen).toEqual([[{ secret: made.secret }]]);
      await expect(store.secrets(made.id)).resolves.toEqual([
        { secret: next },
        { secret: made.secret, expiresAtMs: 1_900_000_000_000 },
      ]);
      expect(isSealed(await rawSecrets(made.id))).toBe(true);
      await expect(store.updateSecrets('ep_missing', () => [])).resolves.toBe(false);
    });

    it("should open WEBHOOK_SECRET's place in a config row only, and nothing else there; a reconcile or a rotation puts each back", async () => {
      const api = newEndpoint('http://127.0.0.1:1/api');
      await store.create(api, 100);
      await store.reconcile(['http://127.0.0.1:1/config'], () => ids.next());
      const config = (await store.list(10)).find((endpoint) => endpoint.source === 'config')!;
      // Written in by someone with access to the database: the operator's place into the API's row, and
      // a value sealed for the config row itself (as it was when it belonged to the API) into the config row.
      await setRaw(api.id, { secrets: CONFIGURED_SECRETS });
      await setRaw(config.id, { secrets: columnWith().write([{ secret: api.secret }], config.id) });

      await expect(store.secrets(api.id)).rejects.toThrow(
        new SecretsKeyError(
          'an endpoint of the API holds the place of WEBHOOK_SECRET, which signs only the endpoints declared in WEBHOOK_URLS',
        ),
      );
      await expect(store.secrets(config.id)).rejects.toThrow(
        new SecretsKeyError(
          'an endpoint declared in WEBHOOK_URLS holds a stored secret, and it signs with WEBHOOK_SECRET only',
        ),
      );
      // Start-up leaves both as they are (held back), and stops for neither.
      await expect(store.reseal()).resolves.toBe(0);
      expect(await rawSecrets(api.id)).toBe(CONFIGURED_SECRETS);

      const next = newSecret();
      await expect(store.updateSecrets(api.id, (secrets) => [{ secret: next }, ...secrets])).resolves.toBe(true);
      await expect(store.secrets(api.id)).resolves.toEqual([{ secret: next }]);
      await store.reconcile(['http://127.0.0.1:1/config'], () => ids.next());
      expect(await rawSecrets(config.id)).toBe(CONFIGURED_SECRETS);
      await expect(store.secrets(config.id)).resolves.toEqual([{ secret: CONFIGURED }]);
    });
  });

  describe('reconcile (WEBHOOK_URLS)', () => {
    it('should add config endpoints signed with WEBHOOK_SECRET, never stored, and remove those no longer listed', async () => {
      await expect(
        store.reconcile(['http://127.0.0.1:1/a', 'http://127.0.0.1:1/b'], () => ids.next()),
      ).resolves.toEqual({ added: 2, removed: 0 });
      const [a, b] = await store.list(10);
      expect([a, b]).toEqual([
        expect.objectContaining({ url: 'http://127.0.0.1:1/a', source: 'config', disabled: false, description: '' }),
        expect.objectContaining({ url: 'http://127.0.0.1:1/b', source: 'config', disabled: false }),
      ]);
      expect(await rawSecrets(a.id)).toBe(CONFIGURED_SECRETS);
      await expect(store.secrets(a.id)).resolves.toEqual([{ secret: CONFIGURED }]);
      await expect(store.reconcile(['http://127.0.0.1:1/a'], () => ids.next())).resolves.toEqual({
        added: 0,
        removed: 1,
      });
      await expect(store.list(10)).resolves.toEqual([a]);
      await expect(store.reconcile([], () => ids.next())).resolves.toEqual({ added: 0, removed: 1 });
      await expect(store.list(10)).resolves.toEqual([]);
    });

    it("should keep a staying config endpoint's disabled state and reason, and make a listed api endpoint config, enabled", async () => {
      await store.reconcile(['http://127.0.0.1:1/paused', 'http://127.0.0.1:1/gone'], () => ids.next());
      const [paused, gone] = await store.list(10);
      await store.update(paused.id, { disabled: true });
      await setRaw(gone.id, { disabled: postgres ? true : 1, disabled_reason: 'the receiver answered 410 Gone' });
      const api = await store.create(newEndpoint('http://127.0.0.1:1/api', true), 100);
      await expect(
        store.reconcile(['http://127.0.0.1:1/paused', 'http://127.0.0.1:1/gone', 'http://127.0.0.1:1/api'], () =>
          ids.next(),
        ),
      ).resolves.toEqual({ added: 0, removed: 0 });
      await expect(store.get(paused.id)).resolves.toMatchObject({ disabled: true, source: 'config' });
      await expect(store.get(gone.id)).resolves.toMatchObject({
        disabled: true,
        disabledReason: 'the receiver answered 410 Gone',
      });
      await expect(store.get(api.id)).resolves.toMatchObject({ disabled: false, source: 'config' });
      expect(await rawSecrets(api.id)).toBe(CONFIGURED_SECRETS);
    });

    it('should make each url one endpoint when instances start together', async () => {
      const urls = ['http://127.0.0.1:1/a', 'http://127.0.0.1:1/b', 'http://127.0.0.1:1/c'];
      const others = [storeOn(await open()), storeOn(await open())];
      const results = await Promise.all([store, ...others].map((each) => each.reconcile(urls, () => ids.next())));
      expect(results.reduce((sum, { added }) => sum + added, 0)).toBe(3);
      expect((await store.list(10)).map((endpoint) => endpoint.url)).toEqual(urls);
    });
  });

  describe('reseal (start-up)', () => {
    it('should seal secrets stored in clear or under an older key, and leave the rest', async () => {
      const clear = newEndpoint('http://127.0.0.1:1/clear');
      const old = newEndpoint('http://127.0.0.1:1/old');
      await store.create(clear, 100);
      await storeOn(database, columnWith([OTHER_KEY])).create(old, 100);
      await store.reconcile(['http://127.0.0.1:1/config'], () => ids.next());
      await setRaw(clear.id, { secrets: JSON.stringify([{ secret: clear.secret }]) });
      const before = await store.get(clear.id);

      const rotated = storeOn(database, columnWith([KEY, OTHER_KEY]));
      await expect(rotated.reseal()).resolves.toBe(2);
      await expect(rotated.reseal()).resolves.toBe(0);
      // Under the first key now: a store with that key alone opens both.
      await expect(store.secrets(clear.id)).resolves.toEqual([{ secret: clear.secret }]);
      await expect(store.secrets(old.id)).resolves.toEqual([{ secret: old.secret }]);
      // Not a change anyone made.
      await expect(store.get(clear.id)).resolves.toEqual(before);
    });

    it('should bind rows of the first form to their endpoint, once: a value copied to another row then does not open there', async () => {
      const a = newEndpoint('http://127.0.0.1:1/a');
      const b = newEndpoint('http://127.0.0.1:1/b');
      await store.create(a, 100);
      await store.create(b, 100);
      // As the build before left them: sealed under the same key, bound to nothing.
      const firstForm = (secret: string) => sealInFirstForm(KEY, JSON.stringify([{ secret }]));
      await setRaw(a.id, { secrets: firstForm(a.secret) });
      await setRaw(b.id, { secrets: firstForm(b.secret) });
      await expect(store.secrets(a.id)).rejects.toThrow(SecretsKeyError);

      await expect(store.reseal()).resolves.toBe(2);
      await expect(store.reseal()).resolves.toBe(0);
      expect(await rawSecrets(a.id)).toMatch(/^enc:v1:v2:[0-9a-f]{8}:/);
      await expect(store.secrets(a.id)).resolves.toEqual([{ secret: a.secret }]);
      await expect(store.secrets(b.id)).resolves.toEqual([{ secret: b.secret }]);

      // A's sealed value copied into B's row: it does not open there, and start-up leaves it (B is held back).
      await setRaw(b.id, { secrets: await rawSecrets(a.id) });
      await expect(store.secrets(b.id)).rejects.toThrow(
        'a secret does not decrypt with its key for this endpoint: it was altered, or copied from another endpoint',
      );
      await expect(store.reseal()).resolves.toBe(0);
      // Under a new first key too: A moves under it, B's copy stays as it is.
      const rotated = storeOn(database, columnWith([OTHER_KEY, KEY]));
      await expect(rotated.reseal()).resolves.toBe(1);
      await expect(rotated.secrets(a.id)).resolves.toEqual([{ secret: a.secret }]);
      await expect(rotated.secrets(b.id)).rejects.toThrow(SecretsKeyError);

      // A rotation replaces what does not open.
      const next = newSecret();
      await expect(store.updateSecrets(b.id, (secrets) => [{ secret: next }, ...secrets])).resolves.toBe(true);
      await expect(store.secrets(b.id)).resolves.toEqual([{ secret: next }]);
    });

    it('should open values bound to no endpoint at the first reseal only: one copied in later is left, held back, and a rotation replaces it', async () => {
      const a = newEndpoint('http://127.0.0.1:1/a');
      const b = newEndpoint('http://127.0.0.1:1/b');
      const c = newEndpoint('http://127.0.0.1:1/c');
      await store.create(a, 100);
      await store.create(b, 100);
      await store.create(c, 100);
      // A's value of the first form, as a backup from before the upgrade holds it.
      const aFirstForm = sealInFirstForm(KEY, JSON.stringify([{ secret: a.secret }]));
      await setRaw(a.id, { secrets: aFirstForm });
      await expect(store.reseal()).resolves.toBe(1);

      // Copied into B's row, and a secret in clear written into C's: the next start-ups leave both.
      await setRaw(b.id, { secrets: aFirstForm });
      await setRaw(c.id, { secrets: JSON.stringify([{ secret: a.secret }]) });
      const next = storeOn(await open());
      await expect(next.reseal()).resolves.toBe(0);
      await expect(storeOn(database, columnWith([OTHER_KEY, KEY])).reseal()).resolves.toBe(1); // A only
      expect(await rawSecrets(b.id)).toBe(aFirstForm);
      expect(await rawSecrets(c.id)).toBe(JSON.stringify([{ secret: a.secret }]));
      await expect(next.secrets(b.id)).rejects.toThrow(SecretsKeyError);
      await expect(next.secrets(c.id)).rejects.toThrow(SecretsKeyError);

      const rotated = newSecret();
      await expect(next.updateSecrets(b.id, (secrets) => [{ secret: rotated }, ...secrets])).resolves.toBe(true);
      await expect(next.secrets(b.id)).resolves.toEqual([{ secret: rotated }]);
    });

    it('should reseal each row exactly once when instances start together', async () => {
      const made = Array.from({ length: 6 }, (_, i) => newEndpoint(`http://127.0.0.1:1/${i}`));
      for (const endpoint of made) {
        await store.create(endpoint, 100);
        await setRaw(endpoint.id, { secrets: sealInFirstForm(KEY, JSON.stringify([{ secret: endpoint.secret }])) });
      }
      const instances = [store, storeOn(await open()), storeOn(await open())];
      const counts = await Promise.all(instances.map((each) => each.reseal()));
      expect(counts.reduce((sum, count) => sum + count, 0)).toBe(made.length);
      for (const endpoint of made) {
        await expect(store.secrets(endpoint.id)).resolves.toEqual([{ secret: endpoint.secret }]);
      }
    });

    it('should reject with a SecretsKeyError naming the endpoint when no key opens its secrets', async () => {
      const made = newEndpoint('http://127.0.0.1:1/a');
      await storeOn(database, columnWith([OTHER_KEY])).create(made, 100);
      const reseal = store.reseal();
      await expect(reseal).rejects.toThrow(SecretsKeyError);
      await expect(reseal).rejects.toThrow(made.id);
    });
  });

  describe('NUL in text', () => {
    it(
      postgres
        ? 'should refuse it with a StorageError (PostgreSQL text cannot hold it) and store nothing'
        : 'should keep it exactly (SQLite text holds it)',
      async () => {
        const made = { ...newEndpoint('http://127.0.0.1:1/a'), description: 'a\u0000b' };
        if (postgres) {
          await expect(store.create(made, 100)).rejects.toThrow(StorageError);
          expect(await count('webhook_endpoints')).toBe(0);
        } else {
          await expect(store.create(made, 100)).resolves.toMatchObject({ description: 'a\u0000b' });
        }
      },
    );
  });
});
