import { createCipheriv, createHash, randomBytes } from 'node:crypto';

/**
 * `plaintext` sealed as the builds before secrets were bound to their endpoint sealed it
 * (`enc:v1:<key id>:…`, one associated data for every row): what their databases hold.
 */
export function sealInFirstForm(key: string, plaintext: string): string {
  const bytes = Buffer.from(key, 'base64');
  const id = createHash('sha256').update('plant-store key id').update(bytes).digest('hex').slice(0, 8);
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', bytes, iv);
  cipher.setAAD(Buffer.from('plant-store webhook endpoint secrets v1'));
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return `enc:v1:${id}:${Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64')}`;
}
