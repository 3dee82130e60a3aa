import { LookupAddress } from 'node:dns';
import { Logger } from '@nestjs/common';
import { BlockedNetworks } from '../../common/networks/blocked-networks';
import { WebhookConfig } from '../../config/app-config';
import { BlockedEndpointsCheck } from './blocked-endpoints.check';
import { Endpoint } from './endpoint';
import { EndpointsStore } from './endpoints.store';

type Answer = (error: Error | null, found: LookupAddress[]) => void;

const OPEN = 'its sends fail until an operator opens its range with WEBHOOK_ALLOWED_NETWORKS';
const DEVELOPMENT = { httpsOnly: false } as WebhookConfig;
const PRODUCTION = { httpsOnly: true } as WebhookConfig;

function endpoint(n: number, url: string): Endpoint {
  return {
    id: `ep_${String(n).padStart(4, '0')}`,
    url,
    description: '',
    disabled: false,
    eventTypes: ['plant.created'],
    source: 'api',
    createdAtMs: 0,
    updatedAtMs: 0,
  };
}

/** An EndpointsStore holding `saved`, of which only `list` is used. */
function storeOf(saved: Endpoint[]): EndpointsStore {
  const list = jest.fn((limit: number, after?: string) =>
    Promise.resolve(saved.filter((e) => after === undefined || e.id > after).slice(0, limit)),
  );
  return { list } as unknown as EndpointsStore;
}

describe('BlockedEndpointsCheck', () => {
  let warnings: string[];

  beforeEach(() => {
    warnings = [];
    jest.spyOn(Logger.prototype, 'warn').mockImplementation((message: unknown) => void warnings.push(String(message)));
  });
  afterEach(() => jest.restoreAllMocks());

  const run = async (saved: Endpoint[], networks: BlockedNetworks, config = DEVELOPMENT) => {
    const check = new BlockedEndpointsCheck(storeOf(saved), networks, config);
    check.onApplicationBootstrap();
    await check.done;
    return check;
  };

  it('should warn about each saved endpoint the blocked networks refuse, by id and origin, never its path or query', async () => {
    // Past one page of the store's list.
    const saved = Array.from({ length: 230 }, (_, i) => endpoint(i, `https://8.8.${i >> 8}.${i & 255}/hook`));
    saved[3] = endpoint(3, 'http://10.0.0.7:8080/in?token=hunter2');
    saved[150] = endpoint(150, 'https://[fd00:ec2::254]/latest/meta-data');
    saved[229] = endpoint(229, 'http://[::ffff:7f00:1]:9000/x');
    await run(saved, new BlockedNetworks());
    expect(warnings.sort()).toEqual([
      `Endpoint ep_0003 (http://10.0.0.7:8080) is a private or special-purpose address: ${OPEN} (e.g. 10.0.0.7/32) or its url changes`,
      `Endpoint ep_0150 (https://[fd00:ec2::254]) is a private or special-purpose address: ${OPEN} (e.g. fd00:ec2::254/128) or its url changes`,
      `Endpoint ep_0229 (http://[::ffff:7f00:1]:9000) is a private or special-purpose address: ${OPEN} (e.g. ::ffff:7f00:1/128) or its url changes`,
    ]);
    expect(warnings.join('\n')).not.toMatch(/hunter2|\/in|meta-data/);
  });

  it('should warn about a name that resolves to a blocked address, naming what it resolves to', async () => {
    const lookup = (host: string, _options: unknown, answer: Answer) =>
      answer(
        null,
        host === 'internal.example' ? [{ address: '10.1.2.3', family: 4 }] : [{ address: '8.8.8.8', family: 4 }],
      );
    await run(
      [endpoint(1, 'https://internal.example/hooks/secret'), endpoint(2, 'https://public.example/hooks')],
      new BlockedNetworks([], [], lookup),
    );
    expect(warnings).toEqual([
      `Endpoint ep_0001 (https://internal.example) resolves to 10.1.2.3, a private or special-purpose address: ${OPEN} (e.g. 10.1.2.3/32) or its url changes`,
    ]);
  });

  it('should say nothing about endpoints that WEBHOOK_ALLOWED_NETWORKS opens, and warn about those WEBHOOK_BLOCKED_NETWORKS adds', async () => {
    const saved = [
      endpoint(1, 'http://127.0.0.1:9000/a'),
      endpoint(2, 'http://10.20.0.5/b'),
      endpoint(3, 'http://8.8.8.8/c'),
    ];
    await run(saved, new BlockedNetworks(['8.8.8.0/24'], ['127.0.0.0/8', '10.20.0.0/16', '8.8.8.8/32']));
    expect(warnings).toEqual([]);
    // Adding 10.0.0.0/8 leaves loopback blocked: the list only grows.
    await run(saved, new BlockedNetworks(['10.0.0.0/8', '8.8.8.0/24']));
    expect(warnings.sort()).toEqual([
      `Endpoint ep_0001 (http://127.0.0.1:9000) is a private or special-purpose address: ${OPEN} (e.g. 127.0.0.1/32) or its url changes`,
      `Endpoint ep_0002 (http://10.20.0.5) is a private or special-purpose address: ${OPEN} (e.g. 10.20.0.5/32) or its url changes`,
      `Endpoint ep_0003 (http://8.8.8.8) is an address in WEBHOOK_BLOCKED_NETWORKS: ${OPEN} (e.g. 8.8.8.8/32) or its url changes`,
    ]);
  });

  it('should warn once about each plain http endpoint in production, unless it names an address WEBHOOK_ALLOWED_NETWORKS opens', async () => {
    const saved = [
      endpoint(1, 'http://receiver.example:8080/hooks?token=hunter2'),
      endpoint(2, 'http://10.20.0.5/b'),
      endpoint(3, 'https://8.8.8.8/c'),
      endpoint(4, 'http://10.1.0.1/d'),
    ];
    const networks = new BlockedNetworks([], ['10.20.0.0/16'], (_host, _options, answer: Answer) =>
      answer(null, [{ address: '8.8.8.8', family: 4 }]),
    );
    await run(saved, networks);
    expect(warnings).toEqual([
      `Endpoint ep_0004 (http://10.1.0.1) is a private or special-purpose address: ${OPEN} (e.g. 10.1.0.1/32) or its url changes`,
    ]);
    warnings.length = 0;
    await run(saved, networks, PRODUCTION);
    const rule =
      'must be https when NODE_ENV=production (plain http only to an IP address inside WEBHOOK_ALLOWED_NETWORKS), so its sends fail until its url changes';
    expect(warnings.sort()).toEqual([
      `Endpoint ep_0001 (http://receiver.example:8080) is plain http: its url ${rule}`,
      `Endpoint ep_0004 (http://10.1.0.1) is plain http: its url ${rule}`,
    ]);
    expect(warnings.join('\n')).not.toMatch(/hunter2|hooks/);
  });

  it('should not hold start-up on DNS, and wait at most the lookup timeout for a name', async () => {
    const asked: string[] = [];
    const hung = new BlockedNetworks([], [], (host) => void asked.push(host), 50);
    const check = new BlockedEndpointsCheck(storeOf([endpoint(1, 'https://hung.example/x')]), hung, DEVELOPMENT);
    expect(check.onApplicationBootstrap()).toBeUndefined();
    await check.done;
    expect(asked).toEqual(['hung.example']);
    expect(warnings).toEqual([]);
  });

  it('should log nothing once the application shuts down', async () => {
    let answer: Answer | undefined;
    const slow = new BlockedNetworks([], [], (_host, _options, callback: Answer) => (answer = callback));
    const check = new BlockedEndpointsCheck(storeOf([endpoint(1, 'https://internal.example/x')]), slow, DEVELOPMENT);
    check.onApplicationBootstrap();
    while (answer === undefined) await new Promise((resolve) => setImmediate(resolve));
    await check.onModuleDestroy();
    answer(null, [{ address: '10.1.2.3', family: 4 }]);
    await check.done;
    expect(warnings).toEqual([]);
  });

  it('should warn once, without failing start-up, when the endpoints cannot be read', async () => {
    const store = { list: () => Promise.reject(new Error('the database is unavailable')) } as unknown as EndpointsStore;
    const check = new BlockedEndpointsCheck(store, new BlockedNetworks(), DEVELOPMENT);
    check.onApplicationBootstrap();
    await check.done;
    expect(warnings).toEqual([
      'Could not check the saved endpoints against the blocked networks: the database is unavailable',
    ]);
  });
});
