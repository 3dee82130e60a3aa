import { DynamicModule, Module } from '@nestjs/common';
import { EventPublisher } from '../events/event-publisher';
import { BlockedNetworks } from '../common/networks/blocked-networks';
import { ConfiguredBlockedNetworks, ConfiguredSecretsColumn } from './configured.providers';
import { BlockedEndpointsCheck } from './endpoints/blocked-endpoints.check';
import { EndpointIds } from './endpoints/endpoint-ids';
import { EndpointsController } from './endpoints/endpoints.controller';
import { EndpointsService } from './endpoints/endpoints.service';
import { EndpointsStore } from './endpoints/endpoints.store';
import { OutboxPublisher } from './outbox.publisher';
import { DeliveryLog } from './persistence/delivery-log';
import { DispatchQueue } from './persistence/dispatch-queue';
import { OutboxStore } from './persistence/outbox.store';
import { SqlDeliveryLog } from './persistence/sql-delivery-log';
import { SqlDispatchQueue } from './persistence/sql-dispatch-queue';
import { SqlOutboxStore } from './persistence/sql-outbox.store';
import { SecretsColumn } from './secrets/secrets-column';
import { SqlEndpointsStore } from './persistence/sql-endpoints.store';
import { WebhookDispatcher } from './webhook.dispatcher';
import { WebhookMetrics } from './webhook.metrics';
import { WebhookSender } from './webhook.sender';

/**
 * The webhooks: endpoints and their admin API, the outbox and its dispatcher. It knows event types,
 * not features: it exports the `EventPublisher` (the outbox), to which a feature that imports this
 * module explicitly binds its own port (`publishes(PLANT_CREATED)` in `PlantsModule.register(…)`);
 * features never see the rest.
 *
 * One wiring style: every provider is an `@Injectable()` class built by DI. Configuration comes in
 * as `WebhookConfig` (from `ConfigModule`); the store as `Database` and `Kysely` (from
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
        OutboxPublisher,
        { provide: EventPublisher, useExisting: OutboxPublisher },
      ],
      exports: [EventPublisher],
    };
  }
}
