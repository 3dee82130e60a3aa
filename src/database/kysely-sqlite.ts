import BetterSqlite3 from 'better-sqlite3';
import {
  CompiledQuery,
  DatabaseConnection,
  DialectAdapter,
  Driver,
  KyselyPlugin,
  OperationNodeTransformer,
  PluginTransformQueryArgs,
  PluginTransformResultArgs,
  QueryResult,
  RootOperationNode,
  SelectModifierNode,
  SelectQueryNode,
  UnknownRow,
  SqliteAdapter,
  SqliteDialect,
  SqliteDialectConfig,
  SqliteDriver,
} from 'kysely';

/** How Kysely's transactions begin on a connection: `BEGIN IMMEDIATE`, or not at all. */
type Transactions = 'immediate' | 'refused';

class StoreSqliteDriver extends SqliteDriver {
  constructor(
    config: SqliteDialectConfig,
    private readonly transactions: Transactions,
  ) {
    super(config);
  }

  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    if (this.transactions === 'refused') {
      // The group commit runs synchronous transactions on this connection; one of Kysely's, open
      // across turns of the event loop, would take the batches' statements into it.
      throw new Error('No Kysely transaction on the shared SQLite connection: use a Database transaction');
    }
    // IMMEDIATE: the write lock at BEGIN, so two starting processes take turns (waiting up to the
    // connection's busy_timeout) instead of one failing when it upgrades a read lock.
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
}

/** SQLite does transactional DDL: a failed migration leaves nothing half done. */
class TransactionalDdlSqliteAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true;
  }
}

class StoreSqliteDialect extends SqliteDialect {
  constructor(
    private readonly settings: SqliteDialectConfig,
    private readonly transactions: Transactions,
  ) {
    super(settings);
  }

  override createDriver(): Driver {
    return new StoreSqliteDriver(this.settings, this.transactions);
  }

  override createAdapter(): DialectAdapter {
    return new TransactionalDdlSqliteAdapter();
  }
}

/** For the migrator's own connection: its transactions begin IMMEDIATE and hold DDL. */
export function migrationSqliteDialect(connection: BetterSqlite3.Database): SqliteDialect {
  return new StoreSqliteDialect({ database: connection }, 'immediate');
}

/**
 * For the query builder of the app: it compiles queries that run synchronously on `connection`
 * (opened later, hence the factory). A single statement may also run through Kysely's driver
 * (each runs within one turn); a Kysely transaction may not.
 */
export function sharedSqliteDialect(connection: () => BetterSqlite3.Database): SqliteDialect {
  return new StoreSqliteDialect({ database: async () => connection() }, 'refused');
}

/** The row-locking clauses of a SELECT (`FOR UPDATE`, `SKIP LOCKED`…), which SQLite does not have. */
const ROW_LOCKS = new Set(['ForUpdate', 'ForShare', 'ForKeyShare', 'ForNoKeyUpdate', 'NoWait', 'SkipLocked']);

class WithoutRowLocks extends OperationNodeTransformer {
  protected override transformSelectQuery(node: SelectQueryNode): SelectQueryNode {
    const query = super.transformSelectQuery(node);
    const kept = query.endModifiers?.filter(
      (modifier: SelectModifierNode) => modifier.modifier === undefined || !ROW_LOCKS.has(modifier.modifier),
    );
    return { ...query, endModifiers: kept };
  }
}

/**
 * Leaves out the row locks of a query written once for both stores (`.forUpdate()`): SQLite has none,
 * and needs none, as a transaction's BEGIN IMMEDIATE already holds the whole file against every writer.
 */
export class SqliteRowLocksPlugin implements KyselyPlugin {
  private readonly transformer = new WithoutRowLocks();

  transformQuery({ node }: PluginTransformQueryArgs): RootOperationNode {
    return this.transformer.transformNode(node);
  }

  async transformResult({ result }: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return result;
  }
}
