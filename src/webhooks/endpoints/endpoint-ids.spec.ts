import { EndpointIds } from './endpoint-ids';

describe('EndpointIds', () => {
  afterEach(() => jest.restoreAllMocks());

  it('should make ids that sort in creation order, also many within one millisecond', () => {
    const ids = new EndpointIds();
    const now = Date.now();
    const clock = jest.spyOn(Date, 'now').mockReturnValue(now);
    const made = Array.from({ length: 300 }, () => ids.next());
    clock.mockReturnValue(now + 1);
    made.push(ids.next());
    expect(new Set(made).size).toBe(made.length);
    expect([...made].sort()).toEqual(made);
    for (const id of made) expect(id).toMatch(/^ep_[0-9a-f]{28}$/);
  });

  it('should keep two sources apart within the same millisecond', () => {
    jest.spyOn(Date, 'now').mockReturnValue(1_800_000_000_000);
    const [a, b] = [new EndpointIds(), new EndpointIds()];
    expect(a.next()).not.toBe(b.next());
  });
});
