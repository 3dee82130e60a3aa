import { SigningSecret } from '../endpoints/endpoint';
import { isSealed, SecretsCipher, SecretsKeyError } from './secrets-cipher';

/**
 * The `secrets` value of a `config` endpoint: its secrets are WEBHOOK_SECRET's, never stored.
 * Reading it gives the configured ones.
 */
export const CONFIGURED_SECRETS = 'config:WEBHOOK_SECRET';

/**
 * The `secrets` column of `webhook_endpoints`. Inside, a JSON array of `{"secret", "expiresAt"?}`,
 * current first; stored sealed by the `SecretsCipher` (`enc:v1:…`). Rows written in clear before
 * (a bare JSON array) still read, until start-up seals them (`resealed`). A `config` endpoint holds
 * `CONFIGURED_SECRETS` and reads as WEBHOOK_SECRET's secrets.
 *
 * Every store reads and writes the column through this one class, so the claims sign with what it
 * gives, and no other code sees how it is stored.
 */
export class SecretsColumn {
  // The claims read the same few rows again and again: each sealed value is opened once.
  private readonly opened = new Map<string, SigningSecret[]>();

  /**
   * @param cipher undefined when no key is configured: then nothing can be written (nothing can be:
   *   without a key there is no admin credential), and only rows in clear read.
   * @param configured WEBHOOK_SECRET's secrets, which sign every `config` endpoint.
   */
  constructor(
    private readonly cipher: SecretsCipher | undefined,
    private readonly configured: readonly string[],
  ) {}

  write(secrets: readonly SigningSecret[]): string {
    if (this.cipher === undefined) {
      throw new SecretsKeyError('WEBHOOK_SECRETS_KEY is not set: endpoint secrets cannot be stored');
    }
    return this.cipher.seal(
      JSON.stringify(
        secrets.map(({ secret, expiresAtMs }) =>
          expiresAtMs === undefined ? { secret } : { secret, expiresAt: expiresAtMs },
        ),
      ),
    );
  }

  /** The secrets, current first; a `SecretsKeyError` when the value is sealed with a key we do not have. */
  read(column: string): SigningSecret[] {
    if (column === CONFIGURED_SECRETS) return this.configured.map((secret) => ({ secret }));
    if (!isSealed(column)) return parse(column);
    const known = this.opened.get(column);
    if (known !== undefined) return known;
    if (this.cipher === undefined) {
      throw new SecretsKeyError('secrets are stored encrypted, and WEBHOOK_SECRETS_KEY is not set');
    }
    const secrets = parse(this.cipher.open(column));
    if (this.opened.size >= 10_000) this.opened.clear();
    this.opened.set(column, secrets);
    return secrets;
  }

  /**
   * What start-up writes in place of `column`: sealed under the first key when it is in clear or
   * under another key; undefined when it is right as it is (or cannot be sealed: no key). Throws a
   * `SecretsKeyError` naming `endpointId` when it cannot be opened, so a wrong key stops start-up.
   */
  resealed(column: string, endpointId: string): string | undefined {
    let secrets: SigningSecret[];
    try {
      secrets = this.read(column);
    } catch (error) {
      if (!(error instanceof SecretsKeyError)) throw error;
      throw new SecretsKeyError(`${error.message} (endpoint ${endpointId})`);
    }
    if (column === CONFIGURED_SECRETS || this.cipher === undefined || this.cipher.isCurrent(column)) return undefined;
    return this.write(secrets);
  }
}

function parse(json: string): SigningSecret[] {
  return (JSON.parse(json) as { secret: string; expiresAt?: number }[]).map(({ secret, expiresAt }) =>
    expiresAt === undefined ? { secret } : { secret, expiresAtMs: expiresAt },
  );
}
