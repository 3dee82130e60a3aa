import { DynamicModule, Global, Module } from '@nestjs/common';
import { Kysely } from 'kysely';
import { AppConfig } from '../config/app-config';
import { Database } from './database';
import { Migration } from './migration';

/**
 * The one home of the database: the connection, every feature's migrations, readiness and shutdown.
 * It chooses the store once, from the validated `DATABASE_URL`, and provides `Database`, the typed
 * query builder (`Kysely<Tables>`, each feature adding its tables by declaration merging). Global,
 * so its distance from the root is the largest: it is initialised before every feature (migrations
 * done before any repository prepares a statement), and closed last, in `onApplicationShutdown`,
 * after the HTTP server and the features have stopped.
 */
@Global()
@Module({})
export class DatabaseModule {
  static forRoot(migrations: readonly Migration[]): DynamicModule {
    return {
      module: DatabaseModule,
      providers: [
        {
          provide: Database,
          inject: [AppConfig],
          // The store is chosen here, once; features never ask which one it is. (Both drivers are
          // loaded either way: the repositories' named dialect paths import their store's module.)
          useFactory: async (config: AppConfig): Promise<Database> => {
            switch (config.database.kind) {
              case 'sqlite': {
                const { SqliteDatabase } = await import('./sqlite-database.js');
                return new SqliteDatabase(config.database.path, migrations);
              }
              case 'postgres': {
                const { PostgresDatabase } = await import('./postgres-database.js');
                return new PostgresDatabase(config.database, migrations);
              }
            }
          },
        },
        { provide: Kysely, inject: [Database], useFactory: (database: Database) => database.kysely },
      ],
      exports: [Database, Kysely],
    };
  }
}
