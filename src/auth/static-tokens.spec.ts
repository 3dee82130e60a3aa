import { StaticTokens } from './static-tokens';

describe('StaticTokens', () => {
  const tokens = new StaticTokens(['first-token-0123456789', 'second-token=']);

  it('should accept each token in a Bearer header, the scheme in any case', () => {
    expect(tokens.accepts('Bearer first-token-0123456789')).toBe(true);
    expect(tokens.accepts('bearer   second-token= ')).toBe(true);
    expect(tokens.accepts('BEARER second-token=')).toBe(true);
  });

  it('should refuse anything else: another token, a part of one, another scheme, a malformed or missing header', () => {
    for (const header of [
      'Bearer third-token',
      'Bearer first-token',
      'Bearer first-token-0123456789x',
      'Basic first-token-0123456789',
      'first-token-0123456789',
      'Bearer first-token-0123456789 second-token=',
      '',
      undefined,
    ]) {
      expect(tokens.accepts(header)).toBe(false);
    }
  });

  it('should accept nothing when no token is configured', () => {
    expect(new StaticTokens([]).accepts('Bearer ')).toBe(false);
    expect(new StaticTokens([]).accepts('Bearer first-token-0123456789')).toBe(false);
  });
});
