import { Migration } from './database/migration';
import { PLANTS_MIGRATIONS } from './plants/persistence/plants.migrations';
import { WEBHOOK_MIGRATIONS } from './webhooks/persistence/webhooks.migrations';

/**
 * The migration registry: every feature's steps, handed to `DatabaseModule` by `AppModule`. A new
 * feature adds its list here (its names carry its prefix, so they cannot collide with another's;
 * `inNameOrder` refuses a duplicate at start-up, and a test does it before).
 */
export const APP_MIGRATIONS: readonly Migration[] = [...PLANTS_MIGRATIONS, ...WEBHOOK_MIGRATIONS];
