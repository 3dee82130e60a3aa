import { webhookBody } from './webhook-body';

describe('webhookBody', () => {
  const data = '{"id":-9223372036854775808,"name":"Fern \\"🌿\\"","tag":"shade"}';

  it('should send a bare message’s data as the whole body, byte for byte', () => {
    expect(webhookBody({ eventType: 'plant.created', data, enveloped: false, createdAtMs: 0 })).toBe(data);
  });

  it('should wrap any other in the Standard Webhooks envelope: its type, its createdAt in RFC 3339 UTC ms, the data exact', () => {
    const body = webhookBody({ eventType: 'plant.deleted', data, enveloped: true, createdAtMs: 1795430400007 });
    expect(body).toBe(
      '{"type":"plant.deleted","timestamp":"2026-11-23T10:40:00.007Z",' +
        '"data":{"id":-9223372036854775808,"name":"Fern \\"🌿\\"","tag":"shade"}}',
    );
  });
});
