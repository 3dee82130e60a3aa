import { DynamicModule, Module } from '@nestjs/common';
import { WebhookConfig } from '../config/app-config';
import { Database } from '../database/database';
import { PostgresDatabase } from '../database/postgres-database';
import { SqliteDatabase } from '../database/sqlite-database';
import { ShutdownSignal } from '../lifecycle/shutdown-signal';
import { PlantEvents } from '../plants/plant-events';
import { BlockedNetworks } from '../common/networks/blocked-networks';
import { BlockedEndpointsCheck } from './endpoints/blocked-endpoints.check';
import { EndpointsController } from './endpoints/endpoints.controller';
import { EndpointsService } from './endpoints/endpoints.service';
import { EndpointsStore } from './endpoints/endpoints.store';
import { OutboxWriter } from './outbox.writer';
import { DeliveryLog } from './persistence/delivery-log';
import { DispatchQueue } from './persistence/dispatch-queue';
import { OutboxStore } from './persistence/outbox.store';
import { SqlDeliveryLog } from './persistence/sql-delivery-log';
import { SqlDispatchQueue } from './persistence/sql-dispatch-queue';
import { SqlOutboxStore } from './persistence/sql-outbox.store';
import { secretsCipherFor } from './persistence/secrets-cipher';
import { SecretsColumn } from './persistence/secrets-column';
import { WebhookDispatcher } from './webhook.dispatcher';
import { WebhookMetrics } from './webhook.metrics';
import { WebhookSender } from './webhook.sender';

/**
 * The new-plant webhook: endpoints and their admin API, the outbox and its dispatcher. It exports
 * `PlantEvents` (the outbox writer), which `PlantsModule.register(…)` imports explicitly; plants
 * never sees the rest. Each store adapter, and its driver, is loaded only when chosen.
 */
@Module({})
export class WebhooksModule {
  static forRoot(config: WebhookConfig): DynamicModule {
    return {
      module: WebhooksModule,
      controllers: [EndpointsController],
      providers: [
        {
          provide: BlockedNetworks,
          useFactory: () => new BlockedNetworks(config.blockedNetworks, config.allowedNetworks),
        },
        // Endpoint secrets, sealed at rest; config endpoints read as WEBHOOK_SECRET's.
        {
          provide: SecretsColumn,
          useFactory: () => new SecretsColumn(secretsCipherFor(config.secretsKey), config.configured.secrets),
        },
        { provide: OutboxStore, useClass: SqlOutboxStore },
        { provide: DispatchQueue, useClass: SqlDispatchQueue },
        { provide: DeliveryLog, useClass: SqlDeliveryLog },
        {
          provide: EndpointsStore,
          inject: [Database, SecretsColumn],
          useFactory: async (database: Database, secrets: SecretsColumn): Promise<EndpointsStore> => {
            if (database.kind === 'sqlite') {
              const { SqliteEndpointsStore } = await import('./persistence/sqlite-endpoints.store');
              return new SqliteEndpointsStore(database as SqliteDatabase, secrets);
            }
            const { PostgresEndpointsStore } = await import('./persistence/postgres-endpoints.store');
            return new PostgresEndpointsStore(database as PostgresDatabase, secrets);
          },
        },
        {
          provide: WebhookSender,
          inject: [BlockedNetworks],
          useFactory: (blocked: BlockedNetworks) => new WebhookSender(config.timeoutMs, blocked),
        },
        WebhookMetrics,
        BlockedEndpointsCheck,
        {
          provide: WebhookDispatcher,
          inject: [DispatchQueue, WebhookSender, WebhookMetrics, ShutdownSignal],
          useFactory: (
            store: DispatchQueue,
            sender: WebhookSender,
            metrics: WebhookMetrics,
            shutdown: ShutdownSignal,
          ) => new WebhookDispatcher(config, store, sender, metrics, shutdown.signal),
        },
        {
          provide: EndpointsService,
          inject: [EndpointsStore, DeliveryLog, BlockedNetworks, WebhookDispatcher],
          useFactory: (
            endpoints: EndpointsStore,
            deliveries: DeliveryLog,
            blocked: BlockedNetworks,
            dispatcher: WebhookDispatcher,
          ) => new EndpointsService(config, endpoints, deliveries, blocked, dispatcher),
        },
        {
          provide: PlantEvents,
          inject: [OutboxStore, WebhookDispatcher],
          useFactory: (outbox: OutboxStore, dispatcher: WebhookDispatcher) =>
            new OutboxWriter(outbox, () => dispatcher.wake()),
        },
      ],
      exports: [PlantEvents],
    };
  }
}
