import { Webhook } from 'standardwebhooks';
import { signature as sign } from './webhook.signer';

const one = `whsec_${Buffer.alloc(32, 1).toString('base64')}`;
const two = `whsec_${Buffer.alloc(48, 2).toString('base64')}`;

describe('the webhook signature', () => {
  const payload = '{"id":9223372036854775807,"name":"max"}';
  const timestamp = Math.floor(Date.now() / 1000);

  it('should sign with every secret, space-separated, each verifiable by standardwebhooks alone', () => {
    const signature = sign([one, two], 'msg_1', timestamp, payload);
    expect(signature).toMatch(/^v1,[A-Za-z0-9+/]+=* v1,[A-Za-z0-9+/]+=*$/);
    const headers = { 'webhook-id': 'msg_1', 'webhook-timestamp': String(timestamp), 'webhook-signature': signature };
    for (const secret of [one, two]) {
      expect(new Webhook(secret).verify(payload, headers, { jsonParse: false })).toBeUndefined();
    }
  });

  it('should sign the exact body, id and timestamp: any change fails verification', () => {
    const signature = sign([one], 'msg_1', timestamp, payload);
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
});
