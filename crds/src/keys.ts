// API keys: `<prefix>_sk_<secret>`, secret = 32 random bytes in base64url. Part of the API contract (the
// ApiKey keyHash format), shared by the gateway, its CLI and the operator that issues keys into Secrets.
// Only the SHA-256 hash of the whole key is ever stored or compared, so a leaked manifest or snapshot reveals no key.
import { hash, randomBytes } from 'node:crypto';

const SECRET_PATTERN = /^[A-Za-z0-9_-]{32,256}$/;

export function generateKey(prefix: string): string {
  return `${prefix}_sk_${randomBytes(32).toString('base64url')}`;
}

export function hashKey(key: string): string {
  // One-shot hash(): no Hash object per request, as createHash().update().digest() makes.
  return `sha256:${hash('sha256', key, 'hex')}`;
}

/** True when the key has the configured shape; says nothing about whether it exists. */
export function isWellFormedKey(key: string, prefix: string): boolean {
  const head = `${prefix}_sk_`;
  return key.startsWith(head) && SECRET_PATTERN.test(key.slice(head.length));
}

/** What may be shown of a key in an error or a log line: its prefix and last four characters. */
export function maskKey(key: string): string {
  if (key.length <= 12) return '****';
  return `${key.slice(0, Math.min(8, key.indexOf('_sk_') + 4))}****${key.slice(-4)}`;
}
