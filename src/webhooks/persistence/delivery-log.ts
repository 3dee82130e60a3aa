import { AttemptRecord, DeliveryPageQuery, DeliveryView } from './deliveries';

/** The delivery log, as the admin API reads and acts on it: an endpoint's deliveries and their attempts. */
export abstract class DeliveryLog {
  /** An endpoint's deliveries, newest first. */
  abstract list(endpointId: string, query: DeliveryPageQuery): Promise<DeliveryView[]>;

  /** One delivery with every attempt, oldest first; undefined when there is none. */
  abstract get(
    endpointId: string,
    webhookId: string,
  ): Promise<(DeliveryView & { attemptLog: AttemptRecord[] }) | undefined>;

  /** Makes a delivery pending with its next attempt now (same webhook-id); undefined when there is none. */
  abstract resend(endpointId: string, webhookId: string): Promise<DeliveryView | undefined>;

  /** Makes every failed delivery of the endpoint created in [sinceMs, untilMs) pending, due now; resolves with how many. */
  abstract recover(endpointId: string, sinceMs: number, untilMs?: number): Promise<number>;
}
