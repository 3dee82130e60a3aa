import { randomBytes } from 'node:crypto';
import {
  BadRequestException,
  ConflictException,
  Injectable,
  Logger,
  NotFoundException,
  OnModuleInit,
  ServiceUnavailableException,
} from '@nestjs/common';
import { WebhookConfig } from '../../config/app-config';
import { ConfigError } from '../../config/config.error';
import { endpointUrlProblem, isSecret, MAX_URL_LENGTH } from '../../config/webhook-config';
import { withoutStack } from '../../common/errors/without-stack';
import { ShutdownSignal } from '../../lifecycle/shutdown-signal';
import { hostOf } from '../../common/networks/host-of';
import { BlockedNetworks } from '../../common/networks/blocked-networks';
import { plainHttpProblem } from '../../common/networks/plain-http';
import { DeliveryPageQuery, DeliveryView } from '../deliveries';
import { DeliveryLog, EndpointDisabledError } from '../persistence/delivery-log';
import { SecretsKeyError } from '../secrets/secrets-cipher';
import { OutboxPublisher } from '../outbox.publisher';
import { newMessage } from '../outbox.writer';
import { rememberContext } from '../../tracing/trace-context';
import { WebhookDispatcher } from '../webhook.dispatcher';
import { WEBHOOK_TEST, WebhookTest } from '../webhook-test-event';
import { Endpoint, EndpointChanges, rotated, SigningSecret } from './endpoint';
import { EndpointIds } from './endpoint-ids';
import { EndpointLimitError, EndpointsStore, EndpointUrlTakenError } from './endpoints.store';
import { RECOVER_BATCH_SIZE, recoverInBatches } from './recover-in-batches';

/** A new secret in the Standard Webhooks form: `whsec_` and the base64 of 32 random bytes. */
export function newSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/**
 * The admin API's work on endpoints and their deliveries, and at start-up the reconciliation of the
 * endpoints WEBHOOK_URLS declares and the encryption of stored secrets under WEBHOOK_SECRETS_KEY.
 * `config` endpoints belong to the configuration: only their `disabled` changes here (409 otherwise),
 * and their secret, WEBHOOK_SECRET, is never served.
 */
@Injectable()
export class EndpointsService implements OnModuleInit {
  private readonly logger = new Logger('Webhooks');

  constructor(
    private readonly config: WebhookConfig,
    private readonly endpoints: EndpointsStore,
    private readonly deliveries: DeliveryLog,
    private readonly blocked: BlockedNetworks,
    private readonly dispatcher: WebhookDispatcher,
    private readonly ids: EndpointIds,
    private readonly shutdown: ShutdownSignal,
    private readonly events: OutboxPublisher,
  ) {}

  async onModuleInit(): Promise<void> {
    const { urls } = this.config.configured;
    const { added, removed } = await this.endpoints.reconcile(urls, () => this.ids.next());
    if (added > 0 || removed > 0) {
      this.logger.log(
        `WEBHOOK_URLS: ${added} endpoint(s) added, ${removed} removed with their pending deliveries ` +
          `(now ${urls.map(hostOf).join(', ') || 'none'})`,
      );
    }
    // Before the dispatcher's first claim (onApplicationBootstrap): a key that does not open a stored
    // secret stops start-up here, with one line, rather than failing sends and requests later.
    let resealed: number;
    try {
      resealed = await this.endpoints.reseal();
    } catch (error) {
      if (!(error instanceof SecretsKeyError)) throw error;
      const { secretsKey } = this.config;
      const used = secretsKey.kind === 'data-dir' ? ` (unset: the key file in ${secretsKey.dataDir} was used)` : '';
      throw new ConfigError(
        `Invalid configuration: WEBHOOK_SECRETS_KEY${used} cannot decrypt the stored webhook endpoint secrets: ${error.message}; ` +
          'give the key they were encrypted with (comma-separated keys: the first encrypts, every one decrypts)',
      );
    }
    if (resealed > 0) {
      this.logger.log(
        `Encrypted the stored secrets of ${resealed} webhook endpoint(s) with the first WEBHOOK_SECRETS_KEY`,
      );
    }
  }

  async create(input: {
    url: string;
    description?: string;
    disabled?: boolean;
    eventTypes?: readonly string[];
  }): Promise<Endpoint & { secret: string }> {
    const url = await this.checkedUrl(input.url);
    const eventTypes = input.eventTypes === undefined ? undefined : this.checkedEventTypes(input.eventTypes);
    const secret = newSecret();
    try {
      const endpoint = await this.endpoints.create(
        {
          id: this.ids.next(),
          url,
          description: input.description ?? '',
          disabled: input.disabled ?? false,
          secret,
          ...(eventTypes === undefined ? {} : { eventTypes }),
        },
        this.config.maxEndpoints,
      );
      return { ...endpoint, secret };
    } catch (error) {
      if (error instanceof EndpointLimitError) {
        throw withoutStack(
          () =>
            new ConflictException(
              `There are ${error.max} API endpoints already, the most WEBHOOK_MAX_ENDPOINTS allows: delete one, or raise WEBHOOK_MAX_ENDPOINTS`,
            ),
        );
      }
      throw urlTaken(error);
    }
  }

  list(limit: number, after?: string): Promise<Endpoint[]> {
    return this.endpoints.list(limit, after);
  }

  async get(id: string): Promise<Endpoint> {
    return (await this.endpoints.get(id)) ?? notFound(id);
  }

  async update(id: string, changes: EndpointChanges): Promise<Endpoint> {
    // An operator pauses and resumes a config endpoint here; its url and description are the configuration's.
    if (changes.url !== undefined || changes.description !== undefined || changes.eventTypes !== undefined) {
      await this.writable(id, 'changed');
    }
    const url = changes.url === undefined ? undefined : await this.checkedUrl(changes.url);
    const eventTypes = changes.eventTypes === undefined ? undefined : this.checkedEventTypes(changes.eventTypes);
    try {
      return (await this.endpoints.update(id, { ...changes, url, eventTypes })) ?? notFound(id);
    } catch (error) {
      throw urlTaken(error);
    }
  }

  async delete(id: string): Promise<void> {
    await this.writable(id, 'deleted');
    if (!(await this.endpoints.delete(id))) notFound(id);
  }

  async secret(id: string): Promise<string> {
    await this.withOwnSecret(id);
    try {
      const secrets = (await this.endpoints.secrets(id)) ?? notFound(id);
      return secrets[0].secret;
    } catch (error) {
      throw unopened(id, error);
    }
  }

  async rotate(id: string, given?: string): Promise<string> {
    if (given !== undefined && !isSecret(given)) {
      throw withoutStack(
        () => new BadRequestException('secret must be whsec_ followed by the base64 of 24 to 64 bytes'),
      );
    }
    await this.withOwnSecret(id);
    const next = given ?? newSecret();
    const now = Date.now();
    const change = (secrets: readonly SigningSecret[]) => rotated(secrets, next, now, this.config.secretOverlapMs);
    try {
      if (!(await this.endpoints.updateSecrets(id, change))) notFound(id);
    } catch (error) {
      throw unopened(id, error);
    }
    return next;
  }

  async deliveriesOf(id: string, query: DeliveryPageQuery): Promise<DeliveryView[]> {
    await this.get(id);
    return this.deliveries.list(id, query);
  }

  async delivery(id: string, webhookId: string) {
    await this.get(id);
    return (await this.deliveries.get(id, webhookId)) ?? deliveryNotFound(id, webhookId);
  }

  async resend(id: string, webhookId: string): Promise<DeliveryView> {
    await this.get(id);
    const delivery = (await this.deliveries.resend(id, webhookId)) ?? deliveryNotFound(id, webhookId);
    this.dispatcher.wake();
    return delivery;
  }

  /**
   * Commits one `webhook.test` event for this endpoint alone, whatever its event types, through the
   * outbox like any event: its delivery, pending. 404 when there is no such endpoint; 409 while it is
   * disabled, as the write itself finds it.
   */
  async sendTest(id: string): Promise<DeliveryView> {
    const test: WebhookTest = { endpointId: id };
    // The request's trace continues into the delivery, as a create's does.
    rememberContext(test);
    let delivery: DeliveryView | undefined;
    try {
      delivery = await this.deliveries.sendTo(id, newMessage(WEBHOOK_TEST, test));
    } catch (error) {
      throw disabled(error);
    }
    if (delivery === undefined) notFound(id);
    this.dispatcher.wake();
    return delivery;
  }

  /**
   * Answered once every batch has run, so `queued` is exact and durable; a shutdown stops it between
   * two batches (503: what is left stays failed, and a recover again queues it).
   */
  async recover(id: string, sinceMs: number, untilMs?: number): Promise<number> {
    await this.get(id);
    const range = untilMs === undefined ? { sinceMs } : { sinceMs, untilMs };
    const { queued, stopped } = await recoverInBatches(this.deliveries, id, range, {
      batchSize: RECOVER_BATCH_SIZE,
      stop: this.shutdown.signal,
      queued: () => this.dispatcher.wake(),
    });
    if (stopped) {
      const what = `the recover of webhook endpoint ${id} stopped after making ${queued} failed deliveries pending`;
      this.logger.warn(`Shutting down: ${what}; the rest stay failed until it is called again`);
      throw withoutStack(
        () =>
          new ServiceUnavailableException(
            `The service is shutting down: ${what}. Call recover again (on another instance, or after the restart) to queue the rest`,
          ),
      );
    }
    return queued;
  }

  /** The URL as stored (normalised), or a 400 naming what is wrong with it. */
  private async checkedUrl(value: string): Promise<string> {
    const problem =
      endpointUrlProblem(value) ??
      plainHttpProblem(value, this.config.httpsOnly, this.blocked) ??
      (await this.blocked.problemWith(value));
    if (problem !== undefined) {
      throw withoutStack(() => new BadRequestException(problem.startsWith('url ') ? problem : `url ${problem}`));
    }
    const href = new URL(value).href;
    // Normalising (percent-encoding, punycode) can lengthen it: the stored form is held to the limit too.
    if (href.length > MAX_URL_LENGTH) {
      throw withoutStack(
        () => new BadRequestException(`url must be at most ${MAX_URL_LENGTH} characters once normalised`),
      );
    }
    return href;
  }

  /**
   * The event types as given, or a 400: for `webhook.test`, which only a test send sends; else naming
   * the first one that no feature publishes, and those that are.
   */
  private checkedEventTypes(names: readonly string[]): readonly string[] {
    if (names.includes(WEBHOOK_TEST.name)) {
      throw withoutStack(
        () =>
          new BadRequestException(
            `eventTypes holds "${WEBHOOK_TEST.name}", which no endpoint subscribes to: POST /webhooks/endpoints/{id}/test sends it to that endpoint alone`,
          ),
      );
    }
    const declared = this.events.names();
    const unknown = names.find((name) => !declared.includes(name));
    if (unknown !== undefined) {
      throw withoutStack(
        () =>
          new BadRequestException(
            `eventTypes holds ${JSON.stringify(unknown)}, which is not an event type of this service (${declared.join(', ')})`,
          ),
      );
    }
    return names;
  }

  /** 404 when there is no such endpoint; 409 for a config endpoint, whose secret is WEBHOOK_SECRET. */
  private async withOwnSecret(id: string): Promise<void> {
    const endpoint = await this.get(id);
    if (endpoint.source === 'config') {
      throw withoutStack(
        () =>
          new ConflictException(
            `Endpoint ${id} is declared in WEBHOOK_URLS: its secret is the operator's WEBHOOK_SECRET and is not served`,
          ),
      );
    }
  }

  /** 404 when there is no such endpoint; 409 when the configuration owns it. */
  private async writable(id: string, what: string): Promise<void> {
    const endpoint = await this.get(id);
    if (endpoint.source === 'config') {
      throw withoutStack(
        () =>
          new ConflictException(
            `Endpoint ${id} is declared in WEBHOOK_URLS: it can only be ${what} by changing the configuration`,
          ),
      );
    }
  }
}

function notFound(id: string): never {
  throw withoutStack(() => new NotFoundException(`No webhook endpoint with id ${id}`));
}

function deliveryNotFound(id: string, webhookId: string): never {
  throw withoutStack(() => new NotFoundException(`No delivery ${webhookId} for webhook endpoint ${id}`));
}

/** 409 for a stored secret that does not open (its key is missing, or the row was altered or copied); other errors as they are. */
function unopened(id: string, error: unknown): unknown {
  if (!(error instanceof SecretsKeyError)) return error;
  return withoutStack(
    () => new ConflictException(`The stored secret of endpoint ${id} cannot be used: ${error.message}`),
  );
}

/** 409 for a disabled endpoint, which receives nothing; other errors as they are. */
function disabled(error: unknown): unknown {
  if (!(error instanceof EndpointDisabledError)) return error;
  const id = error.endpointId;
  return withoutStack(
    () =>
      new ConflictException(
        `Webhook endpoint ${id} is disabled and receives nothing: enable it first (PATCH /webhooks/endpoints/${id} with {"disabled": false}), then send the test`,
      ),
  );
}

function urlTaken(error: unknown): unknown {
  if (!(error instanceof EndpointUrlTakenError)) return error;
  return withoutStack(() => new ConflictException('An endpoint with this url exists already'));
}
