import { Webhook } from 'standardwebhooks';

/**
 * Signs deliveries per Standard Webhooks: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, one
 * signature per configured secret, space-separated, so a receiver that knows any of them verifies
 * the delivery and secrets can be rotated without a gap. Holds the secrets; never prints them.
 */
export class WebhookSigner {
  private readonly signers: Webhook[];

  constructor(secrets: readonly string[]) {
    // The library strips the `whsec_` prefix and decodes the base64 key itself.
    this.signers = secrets.map((secret) => new Webhook(secret));
  }

  /** The `webhook-signature` header for this id, timestamp (whole seconds) and exact body. */
  sign(webhookId: string, timestampSeconds: number, payload: string): string {
    const at = new Date(timestampSeconds * 1000);
    return this.signers.map((signer) => signer.sign(webhookId, at, payload)).join(' ');
  }

  toJSON(): string {
    return '[WebhookSigner]';
  }
}
