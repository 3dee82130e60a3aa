import { Webhook } from 'standardwebhooks';
import { WebhookSigner } from './webhook.signer';

const one = `whsec_${Buffer.alloc(32, 1).toString('base64')}`;
const two = `whsec_${Buffer.alloc(48, 2).toString('base64')}`;

describe('WebhookSigner', () => {
  const payload = '{"id":9223372036854775807,"name":"max"}';
  const timestamp = Math.floor(Date.now() / 1000);

  it('should sign with every secret, space-separated, each verifiable by standardwebhooks alone', () => {
    const signature = new WebhookSigner([one, two]).sign('msg_1', timestamp, payload);
    expect(signature).toMatch(/^v1,[A-Za-z0-9+/]+=* v1,[A-Za-z0-9+/]+=*$/);
    const headers = { 'webhook-id': 'msg_1', 'webhook-timestamp': String(timestamp), 'webhook-signature': signature };
    for (const secret of [one, two]) {
      expect(new Webhook(secret).verify(payload, headers, { jsonParse: false })).toBeUndefined();
    }
  });

  it('should sign the exact body, id and timestamp: any change fails verification', () => {
    const signature = new WebhookSigner([one]).sign('msg_1', timestamp, payload);
    const verify = (id: string, at: number, body: string) =>
      new Webhook(one).verify(body, {
        'webhook-id': id,
        'webhook-timestamp': String(at),
        'webhook-signature': signature,
      });
    expect(() => verify('msg_2', timestamp, payload)).toThrow('No matching signature found');
    expect(() => verify('msg_1', timestamp - 1, payload)).toThrow('No matching signature found');
    expect(() => verify('msg_1', timestamp, payload.replace('807', '806'))).toThrow('No matching signature found');
  });

  it('should not show its secrets when printed', () => {
    const signer = new WebhookSigner([one]);
    expect(JSON.stringify({ signer })).toBe('{"signer":"[WebhookSigner]"}');
  });
});
