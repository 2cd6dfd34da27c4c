// Sessions as sealed cookies: the session's facts (who signed in, the CSRF token, when it ends) are
// encrypted and authenticated with one key (JWE, dir + A256GCM, by `jose`), so nothing is kept on the
// server, every replica reads any replica's cookie, and a restart keeps people signed in as long as
// the key stays. The key comes from TOLLGATE_CONSOLE_SESSION_SECRET (the chart makes it a Secret), or
// is made once and kept in the data directory (standalone). ADR 0035.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { EncryptJWT, jwtDecrypt } from 'jose';

/** Who is signed in. `grants` is set by a one-time link: those accounts, as owner, whatever spec.members says. */
export interface Session {
  subject: string;
  email: string | null;
  emailVerified: boolean;
  name: string | null;
  /** The synchronizer token every state-changing form carries back (`_csrf`). */
  csrf: string;
  /** Milliseconds since the epoch. */
  expiresAt: number;
  grants?: string[];
}

/** What the sign-in redirect must remember until the IdP sends the user back (PKCE, state, nonce). */
export interface PendingLogin {
  state: string;
  nonce: string;
  codeVerifier: string;
  expiresAt: number;
}

const SEAL = { alg: 'dir', enc: 'A256GCM' } as const;

export class SessionSealer {
  readonly #key: Uint8Array;

  private constructor(key: Uint8Array) {
    this.#key = key;
  }

  /** The key: SHA-256 of the configured secret, or 32 random bytes kept in `${dataDir}/console-session.key`. */
  static async create(secret: string | null, dataDir: string): Promise<SessionSealer> {
    if (secret) return new SessionSealer(createHash('sha256').update(secret).digest());
    const file = path.join(dataDir, 'console-session.key');
    try {
      const kept = await readFile(file);
      if (kept.length === 32) return new SessionSealer(kept);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    const key = randomBytes(32);
    await mkdir(dataDir, { recursive: true });
    await writeFile(file, key, { mode: 0o600 });
    return new SessionSealer(key);
  }

  async seal(purpose: string, value: object, expiresAt: number): Promise<string> {
    return new EncryptJWT({ v: value }).setProtectedHeader(SEAL).setAudience(purpose).setExpirationTime(Math.floor(expiresAt / 1000)).encrypt(this.#key);
  }

  /** The value, or null when the token is absent, forged, for another purpose or expired. */
  async open<T>(purpose: string, token: string | undefined): Promise<T | null> {
    if (!token || token.length > 8192) return null;
    try {
      const { payload } = await jwtDecrypt(token, this.#key, { audience: purpose, keyManagementAlgorithms: ['dir'], contentEncryptionAlgorithms: ['A256GCM'] });
      return (payload.v as T) ?? null;
    } catch {
      return null;
    }
  }
}

export function newToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

/** Constant-time comparison of two tokens (a CSRF token against the session's). */
export function sameToken(a: string | undefined, b: string): boolean {
  if (typeof a !== 'string') return false;
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
