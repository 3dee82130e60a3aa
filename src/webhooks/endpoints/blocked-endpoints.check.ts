import { isIP } from 'node:net';
import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { WebhookConfig } from '../../config/app-config';
import { originOf } from '../../common/networks/host-of';
import { BlockedNetworks } from '../../common/networks/blocked-networks';
import { plainHttpProblem } from '../../common/networks/plain-http';
import { Endpoint } from './endpoint';
import { EndpointsStore } from './endpoints.store';

const PAGE = 100;
/** Names resolved at once: getaddrinfo holds a thread of libuv's small pool while it waits. */
const LOOKUPS_AT_ONCE = 2;

/**
 * At start-up, warns once about each saved endpoint that the network rules now refuse: plain http in
 * production (saved outside production, or before the rule), or an address the blocked networks
 * refuse (saved before its range was blocked, or under a wider WEBHOOK_ALLOWED_NETWORKS). Its sends
 * fail, naming the rule, until an operator opens its range or its url changes; the log says so now
 * rather than leaving it to fail quietly until WEBHOOK_DISABLE_AFTER disables it. Nothing is deleted.
 * It runs in the background: start-up never waits on DNS, and each name waits at most the save-time
 * lookup timeout.
 */
@Injectable()
export class BlockedEndpointsCheck implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('Webhooks');
  private stopped = false;
  /** The read of the endpoints, which needs the database (awaited at shutdown, before it closes). */
  private reading?: Promise<unknown>;
  /** The whole check, for tests. */
  done?: Promise<void>;

  constructor(
    private readonly endpoints: EndpointsStore,
    private readonly blocked: BlockedNetworks,
    private readonly config: WebhookConfig,
  ) {}

  onApplicationBootstrap(): void {
    this.done = this.check().catch((error: Error) => {
      if (!this.stopped) {
        this.logger.warn(`Could not check the saved endpoints against the blocked networks: ${error.message}`);
      }
    });
  }

  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    await this.reading?.catch(() => undefined);
  }

  private async check(): Promise<void> {
    const reading = this.all();
    this.reading = reading;
    const queue = [...(await reading)];
    const worker = async () => {
      for (let endpoint = queue.shift(); endpoint !== undefined && !this.stopped; endpoint = queue.shift()) {
        const problem = await this.problemWith(endpoint);
        if (problem !== undefined && !this.stopped) this.logger.warn(problem);
      }
    };
    await Promise.all(Array.from({ length: LOOKUPS_AT_ONCE }, worker));
  }

  private async all(): Promise<Endpoint[]> {
    const found: Endpoint[] = [];
    for (let page = await this.endpoints.list(PAGE); ; page = await this.endpoints.list(PAGE, page.at(-1)!.id)) {
      found.push(...page);
      if (page.length < PAGE || this.stopped) return found;
    }
  }

  /**
   * The warning for an endpoint that is plain http in production, or whose host is, or resolves to,
   * a blocked address (the rule its sends fail on first); its id and origin, never its path or query.
   */
  private async problemWith(endpoint: Endpoint): Promise<string | undefined> {
    const plainHttp = plainHttpProblem(endpoint.url, this.config.httpsOnly, this.blocked);
    if (plainHttp !== undefined) {
      return (
        `Endpoint ${endpoint.id} (${originOf(endpoint.url)}) is plain http: its url ${plainHttp}, ` +
        'so its sends fail until its url changes'
      );
    }
    const host = new URL(endpoint.url).hostname;
    const literal = isIP(host.replace(/^\[|\]$/g, '')) !== 0;
    const addresses = literal ? [host.replace(/^\[|\]$/g, '')] : await this.blocked.resolve(host);
    const blocked = addresses.filter((address) => this.blocked.blocks(address));
    if (blocked.length === 0) return undefined;
    const is = literal ? 'is' : `resolves to ${blocked.join(', ')},`;
    const range = `${blocked[0]}/${isIP(blocked[0]) === 4 ? 32 : 128}`;
    return (
      `Endpoint ${endpoint.id} (${originOf(endpoint.url)}) ${is} ${this.blocked.blockedAs(blocked[0])}: its sends fail ` +
      `until an operator opens its range with WEBHOOK_ALLOWED_NETWORKS (e.g. ${range}) or its url changes`
    );
  }
}
