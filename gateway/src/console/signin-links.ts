// One-time sign-in links for the embedded default (`npm start`): a newcomer opens the console for
// the demo account without an IdP, as notebook servers print a token URL. A link works once, for a
// few minutes, in this process only; only the token's hash is kept.
import { createHash } from 'node:crypto';
import { newToken } from './session.ts';

const LINK_TTL_MS = 15 * 60_000;
const MAX_LINKS = 100;

const digest = (token: string) => createHash('sha256').update(token).digest('base64url');

export class SignInLinks {
  readonly #clock: () => number;
  readonly #links = new Map<string, { account: string; expiresAt: number }>();

  constructor(clock: () => number) {
    this.#clock = clock;
  }

  /** A new token for `account`; the caller builds the URL and shows it to the operator only. */
  issue(account: string): string {
    this.#sweep();
    if (this.#links.size >= MAX_LINKS) this.#links.delete(this.#links.keys().next().value!);
    const token = newToken();
    this.#links.set(digest(token), { account, expiresAt: this.#clock() + LINK_TTL_MS });
    return token;
  }

  /** The account the token signs in to, once; null when unknown, used or expired. */
  redeem(token: string): string | null {
    if (token.length > 100) return null;
    const key = digest(token);
    const link = this.#links.get(key);
    this.#links.delete(key);
    if (!link || link.expiresAt <= this.#clock()) return null;
    return link.account;
  }

  #sweep(): void {
    const now = this.#clock();
    for (const [key, link] of this.#links) if (link.expiresAt <= now) this.#links.delete(key);
  }
}
