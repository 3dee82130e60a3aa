import { DynamicModule, Module } from '@nestjs/common';
import { WebhookConfig } from '../config/app-config';
import { Database } from '../database/database';
import { PostgresDatabase } from '../database/postgres-database';
import { SqliteDatabase } from '../database/sqlite-database';
import { ShutdownSignal } from '../lifecycle/shutdown-signal';
import { PlantEvents } from '../plants/plant-events';
import { BlockedNetworks } from '../common/networks/blocked-networks';
import { BlockedEndpointsCheck } from './endpoints/blocked-endpoints.check';
import { EndpointIds } from './endpoints/endpoint-ids';
import { EndpointsController } from './endpoints/endpoints.controller';
import { EndpointsService } from './endpoints/endpoints.service';
import { EndpointsStore } from './endpoints/endpoints.store';
import { OutboxWriter } from './outbox.writer';
import { DeliveriesStore } from './persistence/deliveries.store';
import { secretsCipherFor } from './persistence/secrets-cipher';
import { SecretsColumn } from './persistence/secrets-column';
import { SqlEndpointsStore } from './persistence/sql-endpoints.store';
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
        {
          provide: DeliveriesStore,
          inject: [Database, SecretsColumn],
          useFactory: async (database: Database, secrets: SecretsColumn): Promise<DeliveriesStore> => {
            if (database.kind === 'sqlite') {
              const { SqliteDeliveriesStore } = await import('./persistence/sqlite-deliveries.store');
              return new SqliteDeliveriesStore(database as SqliteDatabase, secrets);
            }
            const { PostgresDeliveriesStore } = await import('./persistence/postgres-deliveries.store');
            return new PostgresDeliveriesStore(database as PostgresDatabase, secrets);
          },
        },
        {
          provide: EndpointsStore,
          useClass: SqlEndpointsStore,
        },
        EndpointIds,
        {
          provide: WebhookSender,
          inject: [BlockedNetworks],
          useFactory: (blocked: BlockedNetworks) => new WebhookSender(config.timeoutMs, blocked),
        },
        WebhookMetrics,
        BlockedEndpointsCheck,
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
          provide: EndpointsService,
          inject: [EndpointsStore, DeliveriesStore, BlockedNetworks, WebhookDispatcher, EndpointIds],
          useFactory: (
            endpoints: EndpointsStore,
            deliveries: DeliveriesStore,
            blocked: BlockedNetworks,
            dispatcher: WebhookDispatcher,
            ids: EndpointIds,
          ) => new EndpointsService(config, endpoints, deliveries, blocked, dispatcher, ids),
        },
        {
          provide: PlantEvents,
          inject: [WebhookDispatcher],
          useFactory: (dispatcher: WebhookDispatcher) => new OutboxWriter(() => dispatcher.wake()),
        },
      ],
      exports: [PlantEvents],
    };
  }
}
