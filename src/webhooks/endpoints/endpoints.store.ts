import { Endpoint, EndpointChanges, NewEndpoint, SigningSecret } from './endpoint';

/** Another endpoint has this URL already. */
export class EndpointUrlTakenError extends Error {
  constructor(readonly url: string) {
    super('An endpoint with this URL exists already');
  }
}

/**
 * Endpoints, for the admin API, for start-up (the `config` ones) and for the outbox writer. Deleting
 * an endpoint deletes its deliveries and their attempts with it, so nothing queued for it is sent.
 */
export abstract class EndpointsStore {
  abstract create(endpoint: NewEndpoint): Promise<Endpoint>;
  /** Oldest first: ids sort in creation order. */
  abstract list(limit: number, after?: string): Promise<Endpoint[]>;
  abstract get(id: string): Promise<Endpoint | undefined>;
  /** `disabled: false` also clears `disabledReason`. Undefined when there is none. */
  abstract update(id: string, changes: EndpointChanges): Promise<Endpoint | undefined>;
  abstract delete(id: string): Promise<boolean>;
  abstract secrets(id: string): Promise<readonly SigningSecret[] | undefined>;
  /** Replaces the secrets by what `change` makes of them, in one transaction; false when there is no such endpoint. */
  abstract updateSecrets(id: string, change: (secrets: readonly SigningSecret[]) => SigningSecret[]): Promise<boolean>;
  /**
   * Makes the `config` endpoints exactly `urls`, each enabled and signed by every one of `secrets`
   * (an `api` endpoint with one of these URLs becomes `config`); removes the others with their
   * deliveries. `newId` names the endpoints it creates. Resolves with what it added and removed.
   */
  abstract reconcile(
    urls: readonly string[],
    secrets: readonly string[],
    newId: () => string,
  ): Promise<{ added: number; removed: number }>;
}
