import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../../config/config.error';
import { isSealed, SECRETS_KEY_FILE, SecretsCipher, SecretsKeyError } from './secrets-cipher';
import { CONFIGURED_SECRETS, SecretsColumn } from './secrets-column';

const KEY = Buffer.alloc(32, 1).toString('base64');
const OTHER = Buffer.alloc(32, 2).toString('base64');
const SECRET = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;

describe('SecretsCipher', () => {
  it('should seal with AES-256-GCM under a fresh IV each time, and open what it sealed', () => {
    const cipher = new SecretsCipher([KEY]);
    const a = cipher.seal(SECRET);
    const b = cipher.seal(SECRET);
    expect(a).toMatch(/^enc:v1:[0-9a-f]{8}:[A-Za-z0-9+/]+=*$/);
    expect(a).not.toBe(b);
    expect(a).not.toContain(SECRET.slice(6));
    expect(cipher.open(a)).toBe(SECRET);
    expect(cipher.open(b)).toBe(SECRET);
  });

  it('should seal with the first key and open with any, saying which values are not under the first yet', () => {
    const old = new SecretsCipher([OTHER]);
    const rotating = new SecretsCipher([KEY, OTHER]);
    const sealedBefore = old.seal(SECRET);
    expect(rotating.open(sealedBefore)).toBe(SECRET);
    expect(rotating.isCurrent(sealedBefore)).toBe(false);
    const sealedNow = rotating.seal(SECRET);
    expect(rotating.isCurrent(sealedNow)).toBe(true);
    expect(new SecretsCipher([KEY]).open(sealedNow)).toBe(SECRET);
    expect(() => old.open(sealedNow)).toThrow(
      new SecretsKeyError('a secret is encrypted with a key that is not in WEBHOOK_SECRETS_KEY'),
    );
  });

  it('should refuse a value that was altered', () => {
    const cipher = new SecretsCipher([KEY]);
    const sealed = cipher.seal(SECRET);
    const bytes = Buffer.from(sealed.split(':')[3], 'base64');
    bytes[14] ^= 1;
    const altered = `${sealed.split(':').slice(0, 3).join(':')}:${bytes.toString('base64')}`;
    expect(() => cipher.open(altered)).toThrow(
      new SecretsKeyError('a secret does not decrypt with its key: it was altered'),
    );
  });

  it('should make a key in DATA_DIR with mode 0600 (folder 0700), and read the same one back', () => {
    const parent = mkdtempSync(join(tmpdir(), 'plant-store-key-'));
    const dir = join(parent, 'data');
    try {
      const first = SecretsCipher.fromDataDir(dir);
      const file = join(dir, SECRETS_KEY_FILE);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(statSync(dir).mode & 0o777).toBe(0o700);
      expect(Buffer.from(readFileSync(file, 'utf8').trim(), 'base64')).toHaveLength(32);
      expect(SecretsCipher.fromDataDir(dir).open(first.seal(SECRET))).toBe(SECRET);
      writeFileSync(file, 'not a key\n');
      expect(() => SecretsCipher.fromDataDir(dir)).toThrow(ConfigError);
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  });
});

describe('SecretsColumn', () => {
  const clear = JSON.stringify([{ secret: SECRET }, { secret: 'whsec_old', expiresAt: 5 }]);
  const secrets = [{ secret: SECRET }, { secret: 'whsec_old', expiresAtMs: 5 }];

  it('should write sealed and read back, current first with the expiry of a rotated-out one', () => {
    const column = new SecretsColumn(new SecretsCipher([KEY]), []);
    const written = column.write(secrets);
    expect(isSealed(written)).toBe(true);
    expect(column.read(written)).toEqual(secrets);
  });

  it('should read rows written in clear before, and reseal them and rows under an older key; leave current ones', () => {
    const column = new SecretsColumn(new SecretsCipher([KEY, OTHER]), []);
    expect(column.read(clear)).toEqual(secrets);
    const fromClear = column.resealed(clear, 'ep_1')!;
    expect(column.read(fromClear)).toEqual(secrets);
    expect(column.resealed(fromClear, 'ep_1')).toBeUndefined();
    const underOld = new SecretsColumn(new SecretsCipher([OTHER]), []).write(secrets);
    const moved = column.resealed(underOld, 'ep_2')!;
    expect(new SecretsColumn(new SecretsCipher([KEY]), []).read(moved)).toEqual(secrets);
  });

  it('should read a config endpoint as the configured secrets, never stored', () => {
    const column = new SecretsColumn(new SecretsCipher([KEY]), [SECRET, 'whsec_b']);
    expect(column.read(CONFIGURED_SECRETS)).toEqual([{ secret: SECRET }, { secret: 'whsec_b' }]);
    expect(column.resealed(CONFIGURED_SECRETS, 'ep_1')).toBeUndefined();
  });

  it('should name the endpoint whose secrets no key opens, and refuse to write without a key', () => {
    const sealed = new SecretsColumn(new SecretsCipher([OTHER]), []).write(secrets);
    expect(() => new SecretsColumn(new SecretsCipher([KEY]), []).resealed(sealed, 'ep_9')).toThrow(
      new SecretsKeyError('a secret is encrypted with a key that is not in WEBHOOK_SECRETS_KEY (endpoint ep_9)'),
    );
    const keyless = new SecretsColumn(undefined, []);
    expect(() => keyless.resealed(sealed, 'ep_9')).toThrow(
      new SecretsKeyError('secrets are stored encrypted, and WEBHOOK_SECRETS_KEY is not set (endpoint ep_9)'),
    );
    expect(keyless.read(clear)).toEqual(secrets);
    expect(keyless.resealed(clear, 'ep_1')).toBeUndefined();
    expect(() => keyless.write(secrets)).toThrow(SecretsKeyError);
  });
});
