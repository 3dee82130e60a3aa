import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { chmodSync, linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SecretsKeyConfig } from '../../config/app-config';
import { ConfigError } from '../../config/config.error';
import { isSecretsKey } from '../../config/webhook-config';

/** The key file made in DATA_DIR when no WEBHOOK_SECRETS_KEY is given (SQLite outside production). */
export const SECRETS_KEY_FILE = 'webhook-secrets.key';
/** Bytes of an AES-256 key. */
export const SECRETS_KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
/**
 * What every sealed value starts with. Builds before the second form read the field after it as the
 * key id: the second form's `v2` is none they have, so they hold that endpoint back (a key is missing)
 * rather than failing on it.
 */
const SEALED = 'enc:v1:';
/** The second form, bound to its endpoint: `enc:v1:v2:<key id>:<base64 of iv, ciphertext and tag>`. */
const BOUND = `${SEALED}v2:`;
// The first form's associated data, the same for every value: `enc:v1:<key id>:<base64>`. Opened only
// to reseal it at start-up, since a value of that form opens in any row.
const FIRST_FORM_DATA = Buffer.from('plant-store webhook endpoint secrets v1');

/** The associated data of the second form: the value opens only for this endpoint, under this key. */
function boundData(endpointId: string, keyId: string): Buffer {
  return Buffer.from(JSON.stringify(['plant-store webhook endpoint secrets', 2, endpointId, keyId]));
}

/**
 * A stored value that none of the keys opens for its endpoint: its key is not configured (`keyMissing`),
 * or it was altered, copied from another endpoint's row, or sealed in the first form after start-up.
 */
export class SecretsKeyError extends Error {
  constructor(
    message: string,
    readonly keyMissing = false,
  ) {
    super(message);
  }
}

/**
 * AES-256-GCM under WEBHOOK_SECRETS_KEY: the first key seals, every key opens (rotation). A sealed
 * value is `enc:v1:v2:<key id>:<base64 of iv, ciphertext and tag>`, its associated data naming the
 * endpoint and the key, so it opens in its own row only; the key id (8 hex digits of the key's
 * SHA-256, which says nothing of the key) picks the key that opens it. The form tells start-up which
 * rows to reseal: those of the first form (`enc:v1:<key id>:…`, bound to nothing), and those not
 * under the first key yet.
 */
export class SecretsCipher {
  private readonly keys: ReadonlyMap<string, Buffer>;
  private readonly current: { readonly id: string; readonly key: Buffer };

  /** `keys`: base64 of 32 bytes each, the first one seals. */
  constructor(keys: readonly string[]) {
    if (keys.length === 0 || !keys.every(isSecretsKey)) {
      throw new Error('SecretsCipher needs one or more keys of 32 bytes in base64');
    }
    const entries = keys.map((key) => {
      const bytes = Buffer.from(key, 'base64');
      return [keyId(bytes), bytes] as const;
    });
    this.keys = new Map(entries);
    this.current = { id: entries[0][0], key: entries[0][1] };
  }

  /**
   * The key kept in `dataDir` (made with mode 0600 on first use, its folder 0700), so secrets stored
   * on a developer's machine still open after a restart. Two processes starting at once keep the first one's key.
   */
  static fromDataDir(dataDir: string): SecretsCipher {
    const file = join(dataDir, SECRETS_KEY_FILE);
    try {
      return new SecretsCipher([readFileSync(file, 'utf8').trim()]);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') {
        throw new ConfigError(
          `Invalid configuration: the key file ${file} cannot be used (${(error as NodeJS.ErrnoException).code ?? 'not 32 bytes in base64'}): ` +
            'restore it, or set WEBHOOK_SECRETS_KEY',
        );
      }
    }
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    // Written whole under a name of its own, then linked into place: a second process starting at
    // once never reads a half-written key, and the first link wins (EEXIST for the other).
    const draft = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
    try {
      writeFileSync(draft, `${randomBytes(SECRETS_KEY_BYTES).toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
      chmodSync(draft, 0o600); // whatever the umask
      linkSync(draft, file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    } finally {
      rmSync(draft, { force: true });
    }
    return SecretsCipher.fromDataDir(dataDir);
  }

  /** `plaintext` sealed under the first key for `endpointId`'s row. */
  seal(plaintext: string, endpointId: string): string {
    const { id, key } = this.current;
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(boundData(endpointId, id));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return `${BOUND}${id}:${Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64')}`;
  }

  /**
   * The plaintext of a value sealed for `endpointId`; a `SecretsKeyError` when no key opens it there.
   * `firstForm`: also open a value of the first form (the first start-up, to reseal it).
   */
  open(sealed: string, endpointId: string, firstForm = false): string {
    const bound = sealed.startsWith(BOUND);
    if (!bound && !(firstForm && sealed.startsWith(SEALED))) {
      throw new SecretsKeyError(
        sealed.startsWith(SEALED)
          ? 'a secret is sealed in the form of an earlier build, bound to no endpoint, and written after the first start-up of this build resealed them (or copied from another row): rotate it'
          : 'a stored secret is not in a form this build reads',
      );
    }
    const [id, data] = sealed.slice(bound ? BOUND.length : SEALED.length).split(':');
    const key = this.keys.get(id);
    if (key === undefined || data === undefined) {
      throw new SecretsKeyError('a secret is encrypted with a key that is not in WEBHOOK_SECRETS_KEY', true);
    }
    const bytes = Buffer.from(data, 'base64');
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, IV_BYTES));
      decipher.setAAD(bound ? boundData(endpointId, id) : FIRST_FORM_DATA);
      decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
      return Buffer.concat([
        decipher.update(bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES)),
        decipher.final(),
      ]).toString('utf8');
    } catch {
      throw new SecretsKeyError(
        'a secret does not decrypt with its key for this endpoint: it was altered, or copied from another endpoint',
      );
    }
  }

  /** Sealed in the bound form under the first key: nothing to do at start-up (told without opening it). */
  isCurrent(value: string): boolean {
    return value.startsWith(`${BOUND}${this.current.id}:`);
  }
}

/** The cipher WEBHOOK_SECRETS_KEY configures; undefined when there is no key (and no admin credential). */
export function secretsCipherFor(config: SecretsKeyConfig): SecretsCipher | undefined {
  switch (config.kind) {
    case 'keys':
      return new SecretsCipher(config.keys);
    case 'data-dir':
      return SecretsCipher.fromDataDir(config.dataDir);
    case 'none':
      return undefined;
  }
}

/** Whether a column value is sealed (under any key), as opposed to written in clear. */
export function isSealed(value: string): boolean {
  return value.startsWith(SEALED);
}

/** Whether a column value is sealed in the second form, bound to its endpoint (under any key). */
export function isBound(value: string): boolean {
  return value.startsWith(BOUND);
}

function keyId(key: Buffer): string {
  return createHash('sha256').update('plant-store key id').update(key).digest('hex').slice(0, 8);
}
