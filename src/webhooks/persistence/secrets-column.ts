import { SigningSecret } from '../endpoints/endpoint';

/** The `secrets` column: a JSON array of `{"secret", "expiresAt"?}`, current first. */
export function serializeSecrets(secrets: readonly SigningSecret[]): string {
  return JSON.stringify(
    secrets.map(({ secret, expiresAtMs }) =>
      expiresAtMs === undefined ? { secret } : { secret, expiresAt: expiresAtMs },
    ),
  );
}

export function parseSecrets(column: string): SigningSecret[] {
  return (JSON.parse(column) as { secret: string; expiresAt?: number }[]).map(({ secret, expiresAt }) =>
    expiresAt === undefined ? { secret } : { secret, expiresAtMs: expiresAt },
  );
}
