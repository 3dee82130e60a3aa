import {
  AttemptRecord,
  DeliveryPageQuery,
  DeliveryView,
  NewMessage,
  RecoverCursor,
  RecoveredBatch,
  RecoverRange,
} from '../deliveries';

/** The endpoint is disabled: it receives nothing until it is enabled again. */
export class EndpointDisabledError extends Error {
  constructor(readonly endpointId: string) {
    super(`Webhook endpoint ${endpointId} is disabled`);
  }
}

/** The delivery log, as the admin API reads and acts on it: an endpoint's deliveries and their attempts. */
export abstract class DeliveryLog {
  /** An endpoint's deliveries, newest first. */
  abstract list(endpointId: string, query: DeliveryPageQuery): Promise<DeliveryView[]>;

  /** One delivery with every attempt, oldest first; undefined when there is none. */
  abstract get(
    endpointId: string,
    webhookId: string,
  ): Promise<(DeliveryView & { attemptLog: AttemptRecord[] }) | undefined>;

  /**
   * Commits `message` for this endpoint alone, whatever its event types (a test send), through the
   * outbox like any event, and resolves with its delivery, pending; undefined when there is no such
   * endpoint. Rejects with an `EndpointDisabledError`, writing nothing, while it is disabled.
   */
  abstract sendTo(endpointId: string, message: NewMessage): Promise<DeliveryView | undefined>;

  /**
   * Makes a delivery pending with its next attempt now (same webhook-id) and the whole retry
   * schedule ahead of it; undefined when there is none.
   */
  abstract resend(endpointId: string, webhookId: string): Promise<DeliveryView | undefined>;

  /**
   * One batch of a recover, in one short statement: up to `limit` of the endpoint's failed deliveries
   * in `range`, after `from` (the first batch has none), made pending, due now, with the whole retry
   * schedule ahead of them (`attempts` stays their total). Resolves with how many, and where the
   * next batch starts unless none is left. Safe to repeat: only a failed delivery changes.
   */
  abstract recoverBatch(
    endpointId: string,
    range: RecoverRange,
    limit: number,
    from?: RecoverCursor,
  ): Promise<RecoveredBatch>;
}
