import { withoutStack } from './without-stack';

describe('withoutStack', () => {
  it('should build the error with its message but no stack frames', () => {
    const error = withoutStack(() => new Error('Bearer token is invalid'));
    expect(error.message).toBe('Bearer token is invalid');
    expect(error.stack).not.toMatch(/\n\s+at /);
  });

  it('should leave stack traces on for every other error, even when building throws', () => {
    expect(() =>
      withoutStack(() => {
        throw new Error('boom');
      }),
    ).toThrow('boom');
    expect(new Error('later').stack).toMatch(/\n\s+at /);
  });
});
