import { MAX_RETRY_AFTER_MS, retryAfterMs } from './retry-after';

const NOW = Date.parse('2026-11-25T12:00:00Z');

describe('retryAfterMs', () => {
  describe('when a 429 or a 503 carries Retry-After', () => {
    it('should read delta-seconds', () => {
      expect(retryAfterMs(429, '120', NOW)).toBe(120_000);
      expect(retryAfterMs(503, ' 0 ', NOW)).toBe(0);
      expect(retryAfterMs(503, ['7', '9'], NOW)).toBe(7000);
    });

    it('should read an HTTP date in each of its three forms, relative to now', () => {
      expect(retryAfterMs(429, 'Wed, 25 Nov 2026 12:00:30 GMT', NOW)).toBe(30_000);
      expect(retryAfterMs(429, 'Wednesday, 25-Nov-26 12:01:00 GMT', NOW)).toBe(60_000);
      expect(retryAfterMs(503, 'Wed Nov 25 12:02:00 2026', NOW)).toBe(120_000);
    });

    it('should clamp to an hour, and a date in the past to now', () => {
      expect(retryAfterMs(429, '86400', NOW)).toBe(MAX_RETRY_AFTER_MS);
      expect(retryAfterMs(429, '9'.repeat(400), NOW)).toBe(MAX_RETRY_AFTER_MS);
      expect(retryAfterMs(429, 'Thu, 26 Nov 2026 12:00:00 GMT', NOW)).toBe(MAX_RETRY_AFTER_MS);
      expect(retryAfterMs(503, 'Tue, 24 Nov 2026 12:00:00 GMT', NOW)).toBe(0);
    });

    it('should ignore a value that is neither form', () => {
      for (const value of ['', '-5', '1.5', '5s', 'soon', 'Wed, 99 Foo 2026 12:00:00 GMT', '0x10']) {
        expect(retryAfterMs(429, value, NOW)).toBeUndefined();
      }
      expect(retryAfterMs(429, undefined, NOW)).toBeUndefined();
    });
  });

  describe('when another status carries it', () => {
    it('should ignore it', () => {
      for (const status of [200, 301, 410, 500, 502, 504]) expect(retryAfterMs(status, '60', NOW)).toBeUndefined();
    });
  });
});
