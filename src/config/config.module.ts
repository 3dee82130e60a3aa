import { DynamicModule, Global, Module, Provider } from '@nestjs/common';
import { AppConfig, RateLimitConfig, WebhookConfig } from './app-config';

/**
 * Provides the validated `AppConfig` to every module, and the parts a feature takes alone under
 * their own classes (`WebhookConfig`; `RateLimitConfig` when the rate limit is on), so a provider
 * is a plain `@Injectable()` class that names what it needs in its constructor.
 */
@Global()
@Module({})
export class ConfigModule {
  static forRoot(config: AppConfig): DynamicModule {
    const providers: Provider[] = [
      { provide: AppConfig, useValue: config },
      { provide: WebhookConfig, useValue: config.webhooks },
      ...(config.rateLimit === undefined ? [] : [{ provide: RateLimitConfig, useValue: config.rateLimit }]),
    ];
    return { module: ConfigModule, providers, exports: providers };
  }
}
