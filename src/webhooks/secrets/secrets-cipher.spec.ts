import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Logger } from '@nestjs/common';
import { ConfigError } from '../../config/config.error';
import { isSealed, SECRETS_KEY_FILE, SecretsCipher, SecretsKeyError } from './secrets-cipher';
import { sealInFirstForm } from '../../../test/support/first-form-seal';
import { CONFIGURED_SECRETS, SecretsColumn } from './secrets-column';

const KEY = Buffer.alloc(32, 1).toString('base64');
const OTHER = Buffer.alloc(32, 2).toString('base64');
const SECRET = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;

describe('SecretsCipher', () => {
  it('should seal with AES-256-GCM under a fresh IV each time, and open what it sealed for the same endpoint', () => {
    const cipher = new SecretsCipher([KEY]);
    const a = cipher.seal(SECRET, 'ep_a');
    const b = cipher.seal(SECRET, 'ep_a');
    expect(a).toMatch(/^enc:v1:v2:[0-9a-f]{8}:[A-Za-z0-9+/]+=*$/);
    expect(a).not.toBe(b);
    expect(a).not.toContain(SECRET.slice(6));
    expect(cipher.open(a, 'ep_a')).toBe(SECRET);
    expect(cipher.open(b, 'ep_a')).toBe(SECRET);
  });

  it("should not open a value in another endpoint's row", () => {
    const cipher = new SecretsCipher([KEY]);
    const sealed = cipher.seal(SECRET, 'ep_a');
    expect(() => cipher.open(sealed, 'ep_b')).toThrow(
      new SecretsKeyError(
        'a secret does not decrypt with its key for this endpoint: it was altered, or copied from another endpoint',
      ),
    );
    // Nor with its key id changed to another configured key's.
    const rotating = new SecretsCipher([OTHER, KEY]);
    const otherId = rotating.seal(SECRET, 'ep_a').split(':')[3];
    const relabelled = sealed
      .split(':')
      .map((part, i) => (i === 3 ? otherId : part))
      .join(':');
    expect(() => rotating.open(relabelled, 'ep_a')).toThrow(SecretsKeyError);
  });

  it('should seal with the first key and open with any, saying which values are not under the first yet', () => {
    const old = new SecretsCipher([OTHER]);
    const rotating = new SecretsCipher([KEY, OTHER]);
    const sealedBefore = old.seal(SECRET, 'ep_a');
    expect(rotating.open(sealedBefore, 'ep_a')).toBe(SECRET);
    expect(rotating.isCurrent(sealedBefore)).toBe(false);
    const sealedNow = rotating.seal(SECRET, 'ep_a');
    expect(rotating.isCurrent(sealedNow)).toBe(true);
    expect(new SecretsCipher([KEY]).open(sealedNow, 'ep_a')).toBe(SECRET);
    expect(() => old.open(sealedNow, 'ep_a')).toThrow(
      new SecretsKeyError('a secret is encrypted with a key that is not in WEBHOOK_SECRETS_KEY', true),
    );
  });

  it('should open a value of the first form (bound to nothing) only when asked to, to reseal it', () => {
    const cipher = new SecretsCipher([KEY]);
    const first = sealInFirstForm(KEY, SECRET);
    expect(cipher.isCurrent(first)).toBe(false);
    expect(cipher.open(first, 'ep_a', true)).toBe(SECRET);
    expect(() => cipher.open(first, 'ep_a')).toThrow(
      new SecretsKeyError(
        'a secret is sealed in the form of an earlier build, bound to no endpoint, and written after the first start-up of this build resealed them (or copied from another row): rotate it',
      ),
    );
  });

  it('should refuse a value that was altered', () => {
    const cipher = new SecretsCipher([KEY]);
    const sealed = cipher.seal(SECRET, 'ep_a');
    const parts = sealed.split(':');
    const bytes = Buffer.from(parts[4], 'base64');
    bytes[14] ^= 1;
    const altered = `${parts.slice(0, 4).join(':')}:${bytes.toString('base64')}`;
    expect(() => cipher.open(altered, 'ep_a')).toThrow(
      new SecretsKeyError(
        'a secret does not decrypt with its key for this endpoint: it was altered, or copied from another endpoint',
      ),
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
      expect(SecretsCipher.fromDataDir(dir).open(first.seal(SECRET, 'ep_a'), 'ep_a')).toBe(SECRET);
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

  it("should write sealed for the endpoint's row and read back, current first with the expiry of a rotated-out one", () => {
    const column = new SecretsColumn(new SecretsCipher([KEY]), []);
    const written = column.write(secrets, 'ep_1');
    expect(isSealed(written)).toBe(true);
    expect(column.read(written, 'ep_1', 'api')).toEqual(secrets);
    // Read once in its own row (and remembered), it still does not open in another.
    expect(() => column.read(written, 'ep_2', 'api')).toThrow(SecretsKeyError);
  });

  it('should read rows written in clear before, and reseal them, rows of the first form and rows under an older key; leave current ones', () => {
    const column = new SecretsColumn(new SecretsCipher([KEY, OTHER]), []);
    expect(column.read(clear, 'ep_1', 'api')).toEqual(secrets);
    const fromClear = column.resealed(clear, 'ep_1', 'api', true)!;
    expect(column.read(fromClear, 'ep_1', 'api')).toEqual(secrets);
    expect(column.resealed(fromClear, 'ep_1', 'api', true)).toBeUndefined();
    const underOld = new SecretsColumn(new SecretsCipher([OTHER]), []).write(secrets, 'ep_2');
    const moved = column.resealed(underOld, 'ep_2', 'api', true)!;
    expect(new SecretsColumn(new SecretsCipher([KEY]), []).read(moved, 'ep_2', 'api')).toEqual(secrets);
    const first = sealInFirstForm(OTHER, clear);
    expect(() => column.read(first, 'ep_3', 'api')).toThrow(SecretsKeyError);
    const bound = column.resealed(first, 'ep_3', 'api', true)!;
    expect(bound).toMatch(/^enc:v1:v2:/);
    expect(column.read(bound, 'ep_3', 'api')).toEqual(secrets);
    expect(column.resealed(bound, 'ep_3', 'api', true)).toBeUndefined();
  });

  it('should leave a value copied from another row as it is at start-up: it does not open there', () => {
    const column = new SecretsColumn(new SecretsCipher([KEY, OTHER]), []);
    const current = column.write(secrets, 'ep_1');
    const underOld = new SecretsColumn(new SecretsCipher([OTHER]), []).write(secrets, 'ep_1');
    expect(column.resealed(current, 'ep_2', 'api', true)).toBeUndefined();
    expect(column.resealed(underOld, 'ep_2', 'api', true)).toBeUndefined();
    expect(() => column.read(current, 'ep_2', 'api')).toThrow(SecretsKeyError);
  });

  it('should leave values bound to no endpoint as they are once the first reseal is recorded, and not read them', () => {
    const column = new SecretsColumn(new SecretsCipher([KEY, OTHER]), []);
    const first = sealInFirstForm(KEY, clear);
    const underOld = new SecretsColumn(new SecretsCipher([OTHER]), []).write(secrets, 'ep_1');
    expect(column.resealed(clear, 'ep_1', 'api', false)).toBeUndefined();
    expect(column.resealed(first, 'ep_1', 'api', false)).toBeUndefined();
    expect(column.resealed(underOld, 'ep_1', 'api', false)).toMatch(/^enc:v1:v2:/); // bound: still moved to the first key
    column.unboundClosed();
    expect(() => column.read(clear, 'ep_1', 'api')).toThrow(SecretsKeyError);
    expect(() => column.read(first, 'ep_1', 'api')).toThrow(SecretsKeyError);
  });

  it('should read a config endpoint as the configured secrets, never stored', () => {
    const column = new SecretsColumn(new SecretsCipher([KEY]), [SECRET, 'whsec_b']);
    expect(column.read(CONFIGURED_SECRETS, 'ep_1', 'config')).toEqual([{ secret: SECRET }, { secret: 'whsec_b' }]);
    expect(column.resealed(CONFIGURED_SECRETS, 'ep_1', 'config', true)).toBeUndefined();
  });

  it("should open the configured secrets' place in a config row only, and nothing else there", () => {
    const column = new SecretsColumn(new SecretsCipher([KEY]), [SECRET]);
    expect(() => column.read(CONFIGURED_SECRETS, 'ep_1', 'api')).toThrow(
      new SecretsKeyError(
        'an endpoint of the API holds the place of WEBHOOK_SECRET, which signs only the endpoints declared in WEBHOOK_URLS',
      ),
    );
    // Sealed for this very row (as when it was an endpoint of the API), or in clear: a config row signs with WEBHOOK_SECRET only.
    for (const stored of [column.write([{ secret: 'whsec_b' }], 'ep_1'), JSON.stringify([{ secret: 'whsec_b' }])]) {
      expect(() => column.read(stored, 'ep_1', 'config')).toThrow(
        new SecretsKeyError(
          'an endpoint declared in WEBHOOK_URLS holds a stored secret, and it signs with WEBHOOK_SECRET only',
        ),
      );
      // Start-up seals nothing for a config row (its reconcile has given it WEBHOOK_SECRET's place).
      expect(column.resealed(stored, 'ep_1', 'config', true)).toBeUndefined();
    }
    // An api row holding the configured secrets' place is left for a rotation to replace.
    expect(column.resealed(CONFIGURED_SECRETS, 'ep_2', 'api', true)).toBeUndefined();
  });

  it('should name the endpoint whose secrets no key opens, and refuse to write without a key', () => {
    const sealed = new SecretsColumn(new SecretsCipher([OTHER]), []).write(secrets, 'ep_9');
    expect(() => new SecretsColumn(new SecretsCipher([KEY]), []).resealed(sealed, 'ep_9', 'api', true)).toThrow(
      new SecretsKeyError('a secret is encrypted with a key that is not in WEBHOOK_SECRETS_KEY (endpoint ep_9)'),
    );
    const keyless = new SecretsColumn(undefined, []);
    expect(() => keyless.resealed(sealed, 'ep_9', 'api', true)).toThrow(
      new SecretsKeyError('secrets are stored encrypted, and WEBHOOK_SECRETS_KEY is not set (endpoint ep_9)'),
    );
    expect(keyless.read(clear, 'ep_1', 'api')).toEqual(secrets);
    expect(keyless.resealed(clear, 'ep_1', 'api', true)).toBeUndefined();
    expect(() => keyless.write(secrets, 'ep_1')).toThrow(SecretsKeyError);
  });

  describe('when secrets are opened to sign', () => {
    afterEach(() => jest.restoreAllMocks());

    it('should hold back an endpoint whose secrets no key opens for a minute, saying so once, never the secret', () => {
      const logged = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
      let now = 1_000_000;
      jest.spyOn(Date, 'now').mockImplementation(() => now);
      const lost = new SecretsColumn(new SecretsCipher([OTHER]), []).write(secrets, 'ep_lost');
      const column = new SecretsColumn(new SecretsCipher([KEY]), []);
      expect(column.forSigning(column.write(secrets, 'ep_ok'), 'ep_ok', 'api')).toEqual(secrets);
      expect(column.heldBack()).toEqual([]);
      expect(column.forSigning(lost, 'ep_lost', 'api')).toBeUndefined();
      expect(column.heldBack()).toEqual(['ep_lost']);
      expect(logged).toHaveBeenCalledTimes(1);
      expect(logged.mock.calls[0][0]).toBe(
        'Cannot sign for webhook endpoint ep_lost: a secret is encrypted with a key that is not in WEBHOOK_SECRETS_KEY. ' +
          'Its deliveries stay pending, unsent and uncounted, until WEBHOOK_SECRETS_KEY holds the key again ' +
          '(tried again every minute); other endpoints are not held up',
      );
      expect(JSON.stringify(logged.mock.calls)).not.toContain(SECRET.slice(6));
      now += 59_999;
      expect(column.heldBack()).toEqual(['ep_lost']);
      now += 1;
      expect(column.heldBack()).toEqual([]);
      // Tried again after the minute, said again.
      expect(column.forSigning(lost, 'ep_lost', 'api')).toBeUndefined();
      expect(column.heldBack()).toEqual(['ep_lost']);
      // Once its secret opens (rotated with a new one), it is no longer held back.
      expect(column.forSigning(column.write(secrets, 'ep_lost'), 'ep_lost', 'api')).toEqual(secrets);
      expect(column.heldBack()).toEqual([]);
      expect(logged).toHaveBeenCalledTimes(2);
    });

    it('should hold back a config endpoint whose row holds a stored secret, and an api endpoint holding the configured place', () => {
      const logged = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
      const column = new SecretsColumn(new SecretsCipher([KEY]), [SECRET]);
      expect(column.forSigning(CONFIGURED_SECRETS, 'ep_config', 'config')).toEqual([{ secret: SECRET }]);
      expect(column.forSigning(column.write(secrets, 'ep_config'), 'ep_config', 'config')).toBeUndefined();
      expect(column.forSigning(CONFIGURED_SECRETS, 'ep_api', 'api')).toBeUndefined();
      expect(column.heldBack()).toEqual(['ep_config', 'ep_api']);
      expect(logged.mock.calls.map(([line]) => line as string)).toEqual([
        'Cannot sign for webhook endpoint ep_config: an endpoint declared in WEBHOOK_URLS holds a stored secret, and it signs with WEBHOOK_SECRET only. ' +
          'Its deliveries stay pending, unsent and uncounted, until the service restarts, which gives it WEBHOOK_SECRET back ' +
          '(tried again every minute); other endpoints are not held up',
        'Cannot sign for webhook endpoint ep_api: an endpoint of the API holds the place of WEBHOOK_SECRET, which signs only the endpoints declared in WEBHOOK_URLS. ' +
          'Its deliveries stay pending, unsent and uncounted, until its secret opens, or is rotated with a new one ' +
          '(tried again every minute); other endpoints are not held up',
      ]);
      expect(JSON.stringify(logged.mock.calls)).not.toContain(SECRET.slice(6));
    });
  });
});
