import { LookupAddress } from 'node:dns';
import { BlockedNetworks } from './blocked-networks';

type Answer = (error: Error | null, found: LookupAddress[]) => void;

describe('BlockedNetworks, the check when an endpoint is saved', () => {
  const ranges = ['169.254.0.0/16', 'fe80::/10'];

  it('should refuse a name that resolves into a blocked range, and a blocked literal address', async () => {
    const networks = new BlockedNetworks(ranges, (_host, _options, answer: Answer) =>
      answer(null, [{ address: '169.254.169.254', family: 4 }]),
    );
    await expect(networks.problemWith('http://metadata.internal/x')).resolves.toBe(
      'url must not resolve into WEBHOOK_BLOCKED_NETWORKS (metadata.internal does)',
    );
    await expect(networks.problemWith('http://[fe80::1]/x')).resolves.toBe(
      'url must not point into WEBHOOK_BLOCKED_NETWORKS',
    );
  });

  it('should let a name that does not resolve be saved (the send checks it again)', async () => {
    const networks = new BlockedNetworks(ranges, (_host, _options, answer: Answer) =>
      answer(Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' }), []),
    );
    await expect(networks.problemWith('http://not-yet.example/x')).resolves.toBeUndefined();
  });

  it('should not wait on a resolver that never answers past its timeout', async () => {
    const asked: string[] = [];
    const networks = new BlockedNetworks(ranges, (host) => void asked.push(host), 50);
    await expect(networks.problemWith('https://hung.example/x')).resolves.toBeUndefined();
    expect(asked).toEqual(['hung.example']);
  });
});
