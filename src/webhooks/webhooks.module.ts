import { DynamicModule, Module } from '@nestjs/common';
import { PlantEvents } from '../plants/plant-events';
import { BlockedNetworks } from '../common/networks/blocked-networks';
import { ConfiguredBlockedNetworks, ConfiguredSecretsColumn } from './configured.providers';
import { BlockedEndpointsCheck } from './endpoints/blocked-endpoints.check';
import { EndpointIds } from './endpoints/endpoint-ids';
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
import { SecretsColumn } from './persistence/secrets-column';
import { SqlEndpointsStore } from './persistence/sql-endpoints.store';
import { WebhookDispatcher } from './webhook.dispatcher';
import { WebhookMetrics } from './webhook.metrics';
import { WebhookSender } from './webhook.sender';

/**
 * The new-plant webhook: endpoints and their admin API, the outbox and its dispatcher. It exports
 * `PlantEvents` (the outbox writer), which `PlantsModule.register(…)` imports explicitly; plants
 * never sees the rest.
 *
 * One wiring style: every provider is an `@Injectable()` class built by DI. Configuration comes in
 * as `WebhookConfig` (from `ConfigModule`); the store as `Database`, `Kysely` and `SqlDialect` (from
 * `DatabaseModule`, which chose it once); metrics go to prom-client's `Registry` (from
 * `MetricsModule`). Values the configuration decides (the blocked networks, the secrets column) are
 * classes of their own (`configured.providers.ts`), never closures over the configuration.
 */
@Module({})
export class WebhooksModule {
  static forRoot(): DynamicModule {
    return {
      module: WebhooksModule,
      controllers: [EndpointsController],
      providers: [
        { provide: BlockedNetworks, useClass: ConfiguredBlockedNetworks },
        // Endpoint secrets, sealed at rest; config endpoints read as WEBHOOK_SECRET's.
        {
          provide: SecretsColumn,
          useClass: ConfiguredSecretsColumn,
        },
        { provide: OutboxStore, useClass: SqlOutboxStore },
        { provide: DispatchQueue, useClass: SqlDispatchQueue },
        { provide: DeliveryLog, useClass: SqlDeliveryLog },
        {
          provide: EndpointsStore,
          useClass: SqlEndpointsStore,
        },
        EndpointIds,
        WebhookSender,
        WebhookMetrics,
        BlockedEndpointsCheck,
        WebhookDispatcher,
        EndpointsService,
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
