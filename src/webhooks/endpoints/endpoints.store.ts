import { Endpoint, EndpointChanges, NewEndpoint, SigningSecret } from './endpoint';

/** Another endpoint has this URL already. */
export class EndpointUrlTakenError extends Error {
  constructor(readonly url: string) {
    super('An endpoint with this URL exists already');
  }
}

/** There are `max` API endpoints already (WEBHOOK_MAX_ENDPOINTS). */
export class EndpointLimitError extends Error {
  constructor(readonly max: number) {
    super(`There are ${max} API endpoints already`);
  }
}

/**
 * Endpoints, for the admin API, for start-up (the `config` ones) and for the outbox writer. Deleting
 * an endpoint deletes its deliveries and their attempts with it, so nothing queued for it is sent.
 */
export abstract class EndpointsStore {
  /**
   * Stores a new `api` endpoint, unless there are `maxApiEndpoints` of them already (disabled ones
   * count): an `EndpointLimitError`. The count and the insert are one step for every instance.
   */
  abstract create(endpoint: NewEndpoint, maxApiEndpoints: number): Promise<Endpoint>;
  /** Oldest first: ids sort in creation order. */
  abstract list(limit: number, after?: string): Promise<Endpoint[]>;
  abstract get(id: string): Promise<Endpoint | undefined>;
  /** `disabled: false` also clears `disabledReason`. Undefined when there is none. */
  abstract update(id: string, changes: EndpointChanges): Promise<Endpoint | undefined>;
  abstract delete(id: string): Promise<boolean>;
  abstract secrets(id: string): Promise<readonly SigningSecret[] | undefined>;
  /**
   * Replaces the secrets by what `change` makes of them, in one transaction; false when there is no
   * such endpoint. A stored value that does not open in its row (altered, or copied from another) is
   * given to `change` as none; one whose key is missing rejects with a `SecretsKeyError`.
   */
  abstract updateSecrets(id: string, change: (secrets: readonly SigningSecret[]) => SigningSecret[]): Promise<boolean>;
  /**
   * Makes the `config` endpoints exactly `urls`, signed by WEBHOOK_SECRET (never stored: their
   * `secrets` say so, and any stored before are cleared); removes the others with their deliveries.
   * A `config` endpoint that stays keeps its `disabled` (paused through the API, or by the service);
   * a new one is enabled, and so is an `api` endpoint with one of these URLs, which becomes `config`.
   * `newId` names the endpoints it creates. Resolves with what it added and removed.
   */
  abstract reconcile(urls: readonly string[], newId: () => string): Promise<{ added: number; removed: number }>;
  /**
   * Seals for its endpoint, under the first key of WEBHOOK_SECRETS_KEY, every stored secret that is in
   * clear or of the first form (bound to no endpoint: only the first time, which it records, with a
   * key) or under another key; resolves with how many endpoints it changed. Rejects with a
   * `SecretsKeyError` naming the endpoint when the key of one is not configured; leaves a value that
   * does not open in its row (altered, copied from another, or bound to none after the first time).
   * Exact and idempotent: instances starting together take turns, and the second finds nothing to do.
   */
  abstract reseal(): Promise<number>;
}
