/**
 * An open transaction of the store, handed by a feature's repository to what must commit together
 * with its writes (the plants' new-plant events, say). It does not depend on the store: features
 * pass it on without looking inside; only a store's own adapters unwrap it (`SqliteTransaction`,
 * `PostgresTransaction`).
 *
 * On SQLite a transaction is synchronous: work done in it must finish before the call returns.
 */
export abstract class Transaction {
  abstract readonly kind: 'sqlite' | 'postgres';
}
