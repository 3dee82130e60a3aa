import { DynamicModule, Module } from '@nestjs/common';
import { WebhookConfig } from '../config/app-config';
import { Database } from '../database/database';
import { PostgresDatabase } from '../database/postgres-database';
import { SqliteDatabase } from '../database/sqlite-database';
import { ShutdownSignal } from '../lifecycle/shutdown-signal';
import { PlantsCreatedHook } from '../plants/persistence/plants-created.hook';
import { OutboxWriter } from './outbox.writer';
import { DeliveriesStore } from './persistence/deliveries.store';
import { WebhookDispatcher } from './webhook.dispatcher';
import { WebhookMetrics } from './webhook.metrics';
import { WebhookSender } from './webhook.sender';
import { WebhookSigner } from './webhook.signer';

/**
 * The new-plant webhook, when WEBHOOK_URLS is set (otherwise an empty module: nothing is recorded).
 * It provides `PlantsCreatedHook` (the outbox writer) globally, which the plants adapters pick up
 * and call inside their transactions; plants never sees the dispatcher.
 */
@Module({})
export class WebhooksModule {
  static forRoot(config: WebhookConfig | undefined): DynamicModule {
    if (config === undefined) return { module: WebhooksModule };
    return {
      module: WebhooksModule,
      global: true,
      providers: [
        {
          provide: DeliveriesStore,
          inject: [Database],
          useFactory: async (database: Database): Promise<DeliveriesStore> => {
            if (database.kind === 'sqlite') {
              const { SqliteDeliveriesStore } = await import('./persistence/sqlite-deliveries.store');
              return new SqliteDeliveriesStore(database as SqliteDatabase);
            }
            const { PostgresDeliveriesStore } = await import('./persistence/postgres-deliveries.store');
            return new PostgresDeliveriesStore(database as PostgresDatabase);
          },
        },
        {
          provide: WebhookSender,
          useFactory: () => new WebhookSender(new WebhookSigner(config.secrets), config.timeoutMs),
        },
        WebhookMetrics,
        {
          provide: WebhookDispatcher,
          inject: [DeliveriesStore, WebhookSender, WebhookMetrics, ShutdownSignal],
          useFactory: (
            store: DeliveriesStore,
            sender: WebhookSender,
            metrics: WebhookMetrics,
            shutdown: ShutdownSignal,
          ) => new WebhookDispatcher(config, store, sender, metrics, shutdown.signal),
        },
        {
          provide: PlantsCreatedHook,
          inject: [Database, WebhookDispatcher],
          useFactory: (database: Database, dispatcher: WebhookDispatcher) =>
            new OutboxWriter(
              config.urls,
              database.kind === 'postgres' ? (database as PostgresDatabase) : undefined,
              () => dispatcher.wake(),
            ),
        },
      ],
      exports: [PlantsCreatedHook],
    };
  }
}
