import { BlockedNetworks } from './blocked-networks';
import { HTTPS_RULE, plainHttpProblem } from './plain-http';

describe('plainHttpProblem', () => {
  const networks = new BlockedNetworks([], ['10.20.0.0/16', 'fd00:20::/48', '8.8.8.8/32']);

  describe('in production', () => {
    it.each([
      'http://10.20.0.5:8080/hooks',
      'http://[fd00:20::5]/hooks',
      'http://[::ffff:10.20.0.5]/hooks',
      'http://8.8.8.8/hooks',
      'https://receiver.example/hooks',
      'https://10.1.0.1/hooks',
    ])('should accept %s (https, or http to an IP address inside WEBHOOK_ALLOWED_NETWORKS)', (url) => {
      expect(plainHttpProblem(url, true, networks)).toBeUndefined();
    });

    it.each([
      'http://receiver.example/hooks',
      'http://10.21.0.5/hooks',
      'http://8.8.4.4/hooks',
      'http://[fd00:21::5]/hooks',
      'HTTP://10.20.0.5.nip.io/hooks',
    ])('should refuse %s, naming the rule', (url) => {
      expect(plainHttpProblem(url, true, networks)).toBe(HTTPS_RULE);
    });

    it('should say what the rule is and how to open it', () => {
      expect(HTTPS_RULE).toBe(
        'must be https when NODE_ENV=production (plain http only to an IP address inside WEBHOOK_ALLOWED_NETWORKS)',
      );
    });
  });

  it('should allow plain http anywhere outside production', () => {
    expect(plainHttpProblem('http://receiver.example/hooks', false, networks)).toBeUndefined();
    expect(plainHttpProblem('http://8.8.4.4/hooks', false, new BlockedNetworks())).toBeUndefined();
  });
});
