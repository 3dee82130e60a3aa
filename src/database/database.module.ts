import { DynamicModule, Global, Module } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { Database } from './database';
import { Migration } from './migration';

/**
 * The one home of the database: the connection, every feature's migrations, readiness and shutdown.
 * Global, so its distance from the root is the largest: it is initialised before every feature
 * (migrations done before any repository prepares a statement), and closed last, in
 * `onApplicationShutdown`, after the HTTP server and the features have stopped.
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
          // Each driver is loaded only when chosen: `pg` alone holds about 1.5 MiB of heap that an
          // SQLite instance never uses.
          useFactory: async (config: AppConfig): Promise<Database> => {
            switch (config.database.kind) {
              case 'sqlite': {
                const { SqliteDatabase } = await import('./sqlite-database');
                return new SqliteDatabase(config.database.path, migrations);
              }
              case 'postgres': {
                const { PostgresDatabase } = await import('./postgres-database');
                return new PostgresDatabase(config.database, migrations);
              }
            }
          },
        },
      ],
      exports: [Database],
    };
  }
}
