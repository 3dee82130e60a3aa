import { DynamicModule, Global, Module } from '@nestjs/common';
import { Kysely } from 'kysely';
import { AppConfig } from '../config/app-config';
import { Database } from './database';
import { Migration } from './migration';

/**
 * The one home of the database: it chooses the store once, from the validated `DATABASE_URL`, and
 * provides `Database` and its typed query builder (`Kysely<Tables>`). Global, so it is the farthest
 * from the root: initialised before every feature (migrated before any repository prepares a
 * statement), and closed last, in `onApplicationShutdown`, after the HTTP server and the features.
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
          // Each store's module is imported only here, once chosen: features never ask which it is.
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
