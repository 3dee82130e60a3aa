import { Logger } from '@nestjs/common';
import { Endpoint, SigningSecret } from '../endpoints/endpoint';
import { isBound, isSealed, SecretsCipher, SecretsKeyError } from './secrets-cipher';

/**
 * The `secrets` value of a `config` endpoint: its secrets are WEBHOOK_SECRET's, never stored.
 * Reading it in a `config` row gives the configured ones; in an `api` row it does not open.
 */
export const CONFIGURED_SECRETS = 'config:WEBHOOK_SECRET';

/** Whose row a `secrets` value was read from: an endpoint of the API, or one WEBHOOK_URLS declares. */
export type SecretsSource = Endpoint['source'];

/**
 * How long an endpoint whose stored secrets no configured key opens is left out of the claims, and
 * so how often it is logged: its deliveries wait, pending and uncounted, and the others flow.
 */
const UNREADABLE_SECRETS_RETRY_MS = 60_000;

/**
 * The `secrets` column of `webhook_endpoints`, the one place that reads and writes it: a JSON array of
 * `{"secret", "expiresAt"?}`, current first, sealed by the `SecretsCipher` for its endpoint's row, so
 * a value copied into another row does not open there. Values bound to no endpoint (in clear, or of
 * the cipher's first form) are sealed for their row by the first start-up that finds them (`resealed`,
 * recorded by the store); after that record such a value was written or copied in by hand: it does not
 * open, and a rotation replaces it (`unboundClosed`). The operator's secret and the API's never mix:
 * `CONFIGURED_SECRETS` opens in a `config` row only, as WEBHOOK_SECRET's, and a `config` row opens
 * nothing else (a value written there is held back until a restart writes `CONFIGURED_SECRETS` back).
 */
export class SecretsColumn {
  // The claims read the same few rows again and again: each sealed value is opened once.
  private readonly opened = new Map<string, SigningSecret[]>();
  // Set once the first reseal is recorded: from then on a value bound to no endpoint does not open.
  private unboundOpen = true;
  /** Endpoints whose stored secrets no configured key opens, and until when claims leave them out. */
  private readonly unreadable = new Map<string, number>();
  private readonly logger = new Logger('Webhooks');

  /**
   * @param cipher undefined when no key is configured: then nothing can be written (nothing can be:
   *   without a key there is no admin credential), and only rows in clear read.
   * @param configured WEBHOOK_SECRET's secrets, which sign every `config` endpoint.
   */
  constructor(
    private readonly cipher: SecretsCipher | undefined,
    private readonly configured: readonly string[],
  ) {}

  /** Whether this column can seal (a key is configured): only then is the first reseal recorded. */
  get seals(): boolean {
    return this.cipher !== undefined;
  }

  /** The first reseal is recorded: values in clear or of the first form do not open from now on. */
  unboundClosed(): void {
    this.unboundOpen = false;
  }

  /** `secrets` sealed for `endpointId`'s row. */
  write(secrets: readonly SigningSecret[], endpointId: string): string {
    if (this.cipher === undefined) {
      throw new SecretsKeyError('WEBHOOK_SECRETS_KEY is not set: endpoint secrets cannot be stored');
    }
    return this.cipher.seal(
      JSON.stringify(
        secrets.map(({ secret, expiresAtMs }) =>
          expiresAtMs === undefined ? { secret } : { secret, expiresAt: expiresAtMs },
        ),
      ),
      endpointId,
    );
  }

  /**
   * The secrets of `endpointId`'s row, current first; a `SecretsKeyError` when the value does not open
   * there (a key we do not have, a value altered or sealed for another row, or of the first form; or in
   * clear after the first reseal; or the operator's secret in an `api` row, or anything else in a
   * `config` row).
   */
  read(column: string, endpointId: string, source: SecretsSource): SigningSecret[] {
    if (source === 'config') {
      if (column === CONFIGURED_SECRETS) return this.configured.map((secret) => ({ secret }));
      throw new SecretsKeyError(
        'an endpoint declared in WEBHOOK_URLS holds a stored secret, and it signs with WEBHOOK_SECRET only',
      );
    }
    if (column === CONFIGURED_SECRETS) {
      throw new SecretsKeyError(
        'an endpoint of the API holds the place of WEBHOOK_SECRET, which signs only the endpoints declared in WEBHOOK_URLS',
      );
    }
    if (!isSealed(column)) {
      if (!this.unboundOpen) {
        throw new SecretsKeyError(
          'a secret is stored in clear, bound to no endpoint, after the first start-up of this build sealed them: rotate it',
        );
      }
      return parse(column);
    }
    // Remembered by row and value: the same value in another row is opened (and refused) there.
    const remembered = `${endpointId} ${column}`;
    const known = this.opened.get(remembered);
    if (known !== undefined) return known;
    const secrets = parse(this.cipherOrThrow().open(column, endpointId));
    if (this.opened.size >= 10_000) this.opened.clear();
    this.opened.set(remembered, secrets);
    return secrets;
  }

  /**
   * The secrets to sign `endpointId`'s deliveries with; undefined when no configured key opens them (a
   * key left out of WEBHOOK_SECRETS_KEY, an altered row). Then the endpoint is held back from the
   * claims for a while (`heldBack`) and said once (its id, never a secret): one such row must not stop
   * every other endpoint.
   */
  forSigning(column: string, endpointId: string, source: SecretsSource): readonly SigningSecret[] | undefined {
    try {
      const secrets = this.read(column, endpointId, source);
      if (this.unreadable.size > 0) this.unreadable.delete(endpointId);
      return secrets;
    } catch (error) {
      if (!(error instanceof SecretsKeyError)) throw error;
      this.unreadable.set(endpointId, Date.now() + UNREADABLE_SECRETS_RETRY_MS);
      this.logger.error(
        `Cannot sign for webhook endpoint ${endpointId}: ${error.message}. Its deliveries stay pending, ` +
          `unsent and uncounted, until ${remedy(error, source)} ` +
          '(tried again every minute); other endpoints are not held up',
      );
      return undefined;
    }
  }

  /** The endpoints the claims leave out now: their secrets did not open within the last interval. */
  heldBack(): string[] {
    if (this.unreadable.size === 0) return [];
    const now = Date.now();
    for (const [id, until] of this.unreadable) if (until <= now) this.unreadable.delete(id);
    return [...this.unreadable.keys()];
  }

  /**
   * What start-up writes in place of `column`: sealed for `endpointId` under the first key when it is
   * in clear or of the first form (only while `unbound`: the first reseal is not recorded yet), or under
   * another key; undefined when it is right as it is (told by its form, without opening it), or cannot
   * be sealed (no key). Throws a `SecretsKeyError` naming `endpointId` when its key is not configured,
   * so a wrong key stops start-up. A value that does not open for this row (altered, copied from
   * another, or bound to none after the first reseal; `CONFIGURED_SECRETS` in an `api` row) is left as
   * it is: its endpoint's deliveries are held back, and every other endpoint's go. A `config` row
   * stores no secret: nothing of it is sealed.
   */
  resealed(column: string, endpointId: string, source: SecretsSource, unbound: boolean): string | undefined {
    if (source === 'config' || column === CONFIGURED_SECRETS || this.cipher?.isCurrent(column)) return undefined;
    if (!unbound && !isBound(column)) return undefined;
    let secrets: SigningSecret[];
    try {
      secrets = isSealed(column) ? parse(this.cipherOrThrow().open(column, endpointId, true)) : parse(column);
    } catch (error) {
      if (!(error instanceof SecretsKeyError)) throw error;
      if (!error.keyMissing) return undefined;
      throw new SecretsKeyError(`${error.message} (endpoint ${endpointId})`, true);
    }
    return this.cipher === undefined ? undefined : this.write(secrets, endpointId);
  }

  private cipherOrThrow(): SecretsCipher {
    if (this.cipher === undefined) {
      throw new SecretsKeyError('secrets are stored encrypted, and WEBHOOK_SECRETS_KEY is not set', true);
    }
    return this.cipher;
  }
}

/** What lets a held-back endpoint sign again, for its warning. */
function remedy(error: SecretsKeyError, source: SecretsSource): string {
  if (error.keyMissing) return 'WEBHOOK_SECRETS_KEY holds the key again';
  // Start-up's reconcile writes CONFIGURED_SECRETS into every row WEBHOOK_URLS declares.
  if (source === 'config') return 'the service restarts, which gives it WEBHOOK_SECRET back';
  return 'its secret opens, or is rotated with a new one';
}

function parse(json: string): SigningSecret[] {
  return (JSON.parse(json) as { secret: string; expiresAt?: number }[]).map(({ secret, expiresAt }) =>
    expiresAt === undefined ? { secret } : { secret, expiresAtMs: expiresAt },
  );
}
