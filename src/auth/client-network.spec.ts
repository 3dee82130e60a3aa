import { clientNetwork } from './client-network';

describe('clientNetwork', () => {
  it('should count an IPv4 address as itself', () => {
    expect(clientNetwork('198.51.100.7')).toBe('198.51.100.7');
  });

  it('should count an IPv6 address by its /64, however it is spelled', () => {
    expect(clientNetwork('2001:db8:1:2::a')).toBe('2001:db8:1:2::/64');
    expect(clientNetwork('2001:DB8:1:2:ffff:ffff:ffff:ffff')).toBe('2001:db8:1:2::/64');
    expect(clientNetwork('2001:0db8:0001:0002:0:0:0:1')).toBe('2001:db8:1:2::/64');
    expect(clientNetwork('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    expect(clientNetwork('2001:db8:1:3::a')).toBe('2001:db8:1:3::/64');
  });

  it('should count an IPv4-mapped IPv6 address as its IPv4 address', () => {
    expect(clientNetwork('::ffff:198.51.100.7')).toBe('198.51.100.7');
    expect(clientNetwork('::ffff:c633:6407')).toBe('198.51.100.7');
  });

  it('should count anything that is not an address as one unknown client', () => {
    for (const value of [undefined, '', 'unknown', '198.51.100.07', '198.51.100.7 ', 'x'.repeat(10_000)]) {
      expect(clientNetwork(value)).toBe('unknown');
    }
  });
});
