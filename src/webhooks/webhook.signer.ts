import { Webhook } from 'standardwebhooks';

// Keys decoded once per secret; bounded, since rotated and deleted endpoints leave theirs behind.
const MAX_CACHED = 1000;
const signers = new Map<string, Webhook>();

function signerOf(secret: string): Webhook {
  let signer = signers.get(secret);
  if (signer === undefined) {
    if (signers.size >= MAX_CACHED) signers.clear();
    // The library strips the `whsec_` prefix and decodes the base64 key itself.
    signer = new Webhook(secret);
    signers.set(secret, signer);
  }
  return signer;
}

/**
 * The `webhook-signature` header per Standard Webhooks: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`
 * for each of `secrets` (an endpoint's current secret, and during a rotation's overlap its previous
 * one), space-separated, so the receiver verifies with either and rotation has no gap.
 */
export function signature(
  secrets: readonly string[],
  webhookId: string,
  timestampSeconds: number,
  payload: string,
): string {
  const at = new Date(timestampSeconds * 1000);
  return secrets.map((secret) => signerOf(secret).sign(webhookId, at, payload)).join(' ');
}
