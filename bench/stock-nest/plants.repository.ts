import { FactoryProvider } from '@nestjs/common';
import Database from 'better-sqlite3';
import { Pool, types } from 'pg';

export type Plant = { id: number; name: string; tag?: string };
type Row = { id: number; name: string; tag: string | null };
const toPlant = ({ id, name, tag }: Row): Plant => (tag === null ? { id, name } : { id, name, tag });

export abstract class PlantsRepository {
  /** False, writing nothing, when the id is stored already. */
  abstract insert(id: number, name: string, tag?: string): Promise<boolean>;
  abstract find(id: number): Promise<Plant | undefined>;
  abstract list(limit: number, after?: number): Promise<Plant[]>;
}

/** better-sqlite3 in WAL at synchronous=FULL: one durable commit a create. */
class SqlitePlantsRepository extends PlantsRepository {
  private readonly inserts: Database.Statement<[number, string, string | null]>;
  private readonly byId: Database.Statement<[number], Row>;
  private readonly first: Database.Statement<[number], Row>;
  private readonly after: Database.Statement<[number, number], Row>;

  constructor(db: Database.Database) {
    super();
    this.inserts = db.prepare('INSERT INTO plants VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING');
    this.byId = db.prepare('SELECT id, name, tag FROM plants WHERE id = ?');
    this.first = db.prepare('SELECT id, name, tag FROM plants ORDER BY id LIMIT ?');
    this.after = db.prepare('SELECT id, name, tag FROM plants WHERE id > ? ORDER BY id LIMIT ?');
  }

  async insert(id: number, name: string, tag?: string) {
    return this.inserts.run(id, name, tag ?? null).changes === 1;
  }

  async find(id: number) {
    const row = this.byId.get(id);
    return row && toPlant(row);
  }

  async list(limit: number, after?: number) {
    return (after === undefined ? this.first.all(limit) : this.after.all(after, limit)).map(toPlant);
  }
}

// BIGINT as a JavaScript number, the usual fix for pg's strings: exact up to 2^53 only.
types.setTypeParser(types.builtins.INT8, Number);

/** A pg Pool, one statement a request (a replay or a conflict reads once more). */
class PostgresPlantsRepository extends PlantsRepository {
  constructor(private readonly pool: Pool) {
    super();
  }

  async insert(id: number, name: string, tag?: string) {
    const sql = 'INSERT INTO plants (id, name, tag) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING';
    return (await this.pool.query(sql, [id, name, tag ?? null])).rowCount === 1;
  }

  async find(id: number) {
    const { rows } = await this.pool.query<Row>('SELECT id, name, tag FROM plants WHERE id = $1', [id]);
    return rows[0] && toPlant(rows[0]);
  }

  async list(limit: number, after?: number) {
    const { rows } =
      after === undefined
        ? await this.pool.query<Row>('SELECT id, name, tag FROM plants ORDER BY id LIMIT $1', [limit])
        : await this.pool.query<Row>('SELECT id, name, tag FROM plants WHERE id > $1 ORDER BY id LIMIT $2', [
            after,
            limit,
          ]);
    return rows.map(toPlant);
  }
}

/** The store from DATABASE_URL: `sqlite:<path>` or a PostgreSQL URL; the table made at start. */
export const plantsRepositoryProvider: FactoryProvider<PlantsRepository> = {
  provide: PlantsRepository,
  useFactory: async () => {
    const url = process.env.DATABASE_URL ?? 'sqlite:plants.db';
    if (url.startsWith('sqlite:')) {
      const db = new Database(url.slice('sqlite:'.length));
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = FULL');
      db.exec('CREATE TABLE IF NOT EXISTS plants (id INTEGER PRIMARY KEY, name TEXT NOT NULL, tag TEXT) STRICT');
      return new SqlitePlantsRepository(db);
    }
    const pool = new Pool({ connectionString: url });
    await pool.query('CREATE TABLE IF NOT EXISTS plants (id BIGINT PRIMARY KEY, name TEXT NOT NULL, tag TEXT)');
    return new PostgresPlantsRepository(pool);
  },
};
