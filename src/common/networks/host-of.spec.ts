import { hostOf, originAttributes, originOf, withoutUrl } from './host-of';

const SLACK_STYLE = 'https://hooks.example.com/services/T000/B000/secretpart?token=abc';

describe('hostOf', () => {
  it.each([
    [SLACK_STYLE, 'hooks.example.com'],
    ['http://user:password@127.0.0.1:8080/hooks?token=abc', '127.0.0.1:8080'],
    ['not a url', '(invalid URL)'],
  ])('should show %s as %s', (url, expected) => {
    expect(hostOf(url)).toBe(expected);
  });
});

describe('originOf', () => {
  it.each([
    [SLACK_STYLE, 'https://hooks.example.com'],
    ['http://user:password@127.0.0.1:8080/hooks?token=abc', 'http://127.0.0.1:8080'],
    ['http://[::1]:9000/secretpart', 'http://[::1]:9000'],
    ['https://hooks.example.com:443/x', 'https://hooks.example.com'],
    ['redis://:password@cache:6379/0', 'redis://cache:6379'],
    ['not a url', '(invalid URL)'],
  ])('should show %s as %s', (url, expected) => {
    expect(originOf(url)).toBe(expected);
  });
});

describe('originAttributes', () => {
  it.each([
    [SLACK_STYLE, { 'url.scheme': 'https', 'server.address': 'hooks.example.com', 'server.port': 443 }],
    ['http://127.0.0.1:8080/a?b=c', { 'url.scheme': 'http', 'server.address': '127.0.0.1', 'server.port': 8080 }],
    ['http://[::1]/secretpart', { 'url.scheme': 'http', 'server.address': '::1', 'server.port': 80 }],
    ['not a url', {}],
  ])('should describe %s by its origin', (url, expected) => {
    expect(originAttributes(url)).toEqual(expected);
  });
});

describe('withoutUrl', () => {
  it.each([
    [`request to ${SLACK_STYLE} failed`, 'request to https://hooks.example.com failed'],
    ['bad path /services/T000/B000/secretpart?token=abc', 'bad path …'],
    ['bad path /services/T000/B000/secretpart', 'bad path …'],
    ['bad query token=abc', 'bad query …'],
    ['connect ECONNREFUSED 10.0.0.1:443', 'connect ECONNREFUSED 10.0.0.1:443'],
  ])('should turn %j into %j', (message, expected) => {
    expect(withoutUrl(message, SLACK_STYLE)).toBe(expected);
  });

  it('should leave a message alone when the URL has no path or query', () => {
    expect(withoutUrl('timed out at /', 'https://hooks.example.com/')).toBe('timed out at /');
  });

  it('should find the path written undecoded or decoded', () => {
    const url = 'https://hooks.example.com/a%20secret/part';
    expect(withoutUrl('no route /a%20secret/part, nor /a secret/part', url)).toBe('no route …, nor …');
  });
});
