import { LookupAddress } from 'node:dns';
import { Logger } from '@nestjs/common';
import { BlockedNetworks, SPECIAL_PURPOSE } from '../../common/networks/blocked-networks';
import { BlockedEndpointsCheck } from './blocked-endpoints.check';
import { Endpoint } from './endpoint';
import { EndpointsStore } from './endpoints.store';

type Answer = (error: Error | null, found: LookupAddress[]) => void;

const OPEN = 'its sends fail until an operator opens its range with WEBHOOK_ALLOWED_NETWORKS';

function endpoint(n: number, url: string): Endpoint {
  return {
    id: `ep_${String(n).padStart(4, '0')}`,
    url,
    description: '',
    disabled: false,
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

  const run = async (saved: Endpoint[], networks: BlockedNetworks) => {
    const check = new BlockedEndpointsCheck(storeOf(saved), networks);
    check.onApplicationBootstrap();
    await check.done;
    return check;
  };

  it('should warn about each saved endpoint the blocked networks refuse, by id and host, never its path or query', async () => {
    // Past one page of the store's list.
    const saved = Array.from({ length: 230 }, (_, i) => endpoint(i, `https://8.8.${i >> 8}.${i & 255}/hook`));
    saved[3] = endpoint(3, 'http://10.0.0.7:8080/in?token=hunter2');
    saved[150] = endpoint(150, 'https://[fd00:ec2::254]/latest/meta-data');
    saved[229] = endpoint(229, 'http://[::ffff:7f00:1]:9000/x');
    await run(saved, new BlockedNetworks(SPECIAL_PURPOSE));
    expect(warnings.sort()).toEqual([
      `Endpoint ep_0003 (10.0.0.7:8080) is a private or special-purpose address: ${OPEN} (e.g. 10.0.0.7/32) or its url changes`,
      `Endpoint ep_0150 ([fd00:ec2::254]) is a private or special-purpose address: ${OPEN} (e.g. fd00:ec2::254/128) or its url changes`,
      `Endpoint ep_0229 ([::ffff:7f00:1]:9000) is a private or special-purpose address: ${OPEN} (e.g. ::ffff:7f00:1/128) or its url changes`,
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
      new BlockedNetworks(SPECIAL_PURPOSE, [], lookup),
    );
    expect(warnings).toEqual([
      `Endpoint ep_0001 (internal.example) resolves to 10.1.2.3, a private or special-purpose address: ${OPEN} (e.g. 10.1.2.3/32) or its url changes`,
    ]);
  });

  it('should say nothing about endpoints that WEBHOOK_ALLOWED_NETWORKS opens, or that WEBHOOK_BLOCKED_NETWORKS does not list', async () => {
    const saved = [endpoint(1, 'http://127.0.0.1:9000/a'), endpoint(2, 'http://10.20.0.5/b')];
    await run(saved, new BlockedNetworks(SPECIAL_PURPOSE, ['127.0.0.0/8', '10.20.0.0/16']));
    await run(saved, new BlockedNetworks(['192.168.0.0/16']));
    expect(warnings).toEqual([]);
    await run(saved, new BlockedNetworks(['10.0.0.0/8']));
    expect(warnings).toEqual([
      `Endpoint ep_0002 (10.20.0.5) is an address in WEBHOOK_BLOCKED_NETWORKS: ${OPEN} (e.g. 10.20.0.5/32) or its url changes`,
    ]);
  });

  it('should not hold start-up on DNS, and wait at most the lookup timeout for a name', async () => {
    const asked: string[] = [];
    const hung = new BlockedNetworks(SPECIAL_PURPOSE, [], (host) => void asked.push(host), 50);
    const check = new BlockedEndpointsCheck(storeOf([endpoint(1, 'https://hung.example/x')]), hung);
    expect(check.onApplicationBootstrap()).toBeUndefined();
    await check.done;
    expect(asked).toEqual(['hung.example']);
    expect(warnings).toEqual([]);
  });

  it('should log nothing once the application shuts down', async () => {
    let answer: Answer | undefined;
    const slow = new BlockedNetworks(SPECIAL_PURPOSE, [], (_host, _options, callback: Answer) => (answer = callback));
    const check = new BlockedEndpointsCheck(storeOf([endpoint(1, 'https://internal.example/x')]), slow);
    check.onApplicationBootstrap();
    while (answer === undefined) await new Promise((resolve) => setImmediate(resolve));
    await check.onModuleDestroy();
    answer(null, [{ address: '10.1.2.3', family: 4 }]);
    await check.done;
    expect(warnings).toEqual([]);
  });

  it('should warn once, without failing start-up, when the endpoints cannot be read', async () => {
    const store = { list: () => Promise.reject(new Error('the database is unavailable')) } as unknown as EndpointsStore;
    const check = new BlockedEndpointsCheck(store, new BlockedNetworks(SPECIAL_PURPOSE));
    check.onApplicationBootstrap();
    await check.done;
    expect(warnings).toEqual([
      'Could not check the saved endpoints against the blocked networks: the database is unavailable',
    ]);
  });
});
