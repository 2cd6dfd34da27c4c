// service-test's generated images (response_format=url) in the shared store: the URL one replica
// returns works on every replica, for the same hour. Each image is one key that expires with it.
import { randomBytes } from 'node:crypto';
import { IMAGE_TTL_MS, ImageStore, type StoredImage } from '../service-test/images-store.ts';
import type { SharedRedis } from './redis-client.ts';

export class RedisImageStore {
  readonly ttlMs: number;
  readonly #redis: SharedRedis;

  constructor(redis: SharedRedis, ttlMs = IMAGE_TTL_MS) {
    this.#redis = redis;
    this.ttlMs = ttlMs;
  }

  async save(png: Buffer): Promise<string> {
    const id = randomBytes(24).toString('base64url');
    await this.#redis.run((client) => client.set(this.#key(id), png, 'PX', this.ttlMs));
    return id;
  }

  /** The image, or null when the id is malformed, unknown, expired, or Redis is away. */
  async load(id: string, now = Date.now()): Promise<StoredImage | null> {
    if (!ImageStore.isValidId(id)) return null;
    try {
      const [bytes, ttl] = await this.#redis.run((client) => Promise.all([client.getBuffer(this.#key(id)), client.pttl(this.#key(id))]));
      return bytes && ttl > 0 ? { bytes, expiresAt: now + ttl } : null;
    } catch {
      return null;
    }
  }

  /** Redis expires images itself. */
  async sweep(): Promise<number> {
    return 0;
  }

  sweepSync(): number {
    return 0;
  }

  startSweeping(): () => void {
    return () => {};
  }

  #key(id: string): string {
    return this.#redis.key('image', id);
  }
}
