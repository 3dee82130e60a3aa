import { Injectable } from '@nestjs/common';
import { BlockedNetworks } from '../common/networks/blocked-networks';
import { WebhookConfig } from '../config/app-config';
import { secretsCipherFor } from './secrets/secrets-cipher';
import { SecretsColumn } from './secrets/secrets-column';

/**
 * The webhook providers whose values the configuration decides, as classes built by DI from
 * `WebhookConfig` (provided as `BlockedNetworks` and `SecretsColumn`). Tests build the base classes
 * with whatever values they need.
 */

/** Every special-purpose range and WEBHOOK_BLOCKED_NETWORKS', with WEBHOOK_ALLOWED_NETWORKS opened inside. */
@Injectable()
export class ConfiguredBlockedNetworks extends BlockedNetworks {
  constructor(config: WebhookConfig) {
    super(config.blockedNetworks, config.allowedNetworks);
  }
}

/** Endpoint secrets sealed with WEBHOOK_SECRETS_KEY; `config` endpoints read as WEBHOOK_SECRET's. */
@Injectable()
export class ConfiguredSecretsColumn extends SecretsColumn {
  constructor(config: WebhookConfig) {
    super(secretsCipherFor(config.secretsKey), config.configured.secrets);
  }
}
