import { describe, expect, it } from 'vitest';
import { parseRedisUrl } from './redis-url.ts';

describe('TOLLGATE_REDIS_URL forms', () => {
  it('passes a plain redis:// or rediss:// URL to the client as it is', () => {
    expect(parseRedisUrl('redis://u:p@r:6379/2')).toEqual({ mode: 'standalone', url: 'redis://u:p@r:6379/2', tls: false });
    expect(parseRedisUrl('rediss://r')).toMatchObject({ mode: 'standalone', tls: true });
  });

  it('reads sentinels, the primary name, the database and AUTH/ACL credentials', () => {
    expect(parseRedisUrl('redis+sentinel://app:s%40cret@s1:26380,s2,[::1]:26381/primary/3')).toEqual({
      mode: 'sentinel',
      sentinels: [
        { host: 's1', port: 26380 },
        { host: 's2', port: 26379 },
        { host: '::1', port: 26381 },
      ],
      name: 'primary',
      db: 3,
      username: 'app',
      password: 's@cret',
      tls: false,
    });
    expect(parseRedisUrl('rediss+sentinel://:only-password@s1/primary')).toEqual({ mode: 'sentinel', sentinels: [{ host: 's1', port: 26379 }], name: 'primary', db: 0, password: 'only-password', tls: true });
  });

  it('reads cluster seed nodes', () => {
    expect(parseRedisUrl('rediss+cluster://n1:7000,n2')).toEqual({ mode: 'cluster', nodes: [{ host: 'n1', port: 7000 }, { host: 'n2', port: 6379 }], tls: true });
  });

  it.each([
    ['http://r:6379', /must start with/],
    ['redis+sentinel://s1:26379', /names the primary/],
    ['redis+sentinel://s1/primary/x', /database number/],
    ['redis+cluster://n1:6379/0', /no path/],
    ['redis+cluster://n1:99999', /port/],
    ['redis+cluster://n1:6379,,n2', /host or host:port/],
  ])('refuses %s with a reason that does not echo the URL', (url, reason) => {
    expect(() => parseRedisUrl(url)).toThrow(reason);
    try {
      parseRedisUrl(url.replace('//', '//user:hunter2@'));
    } catch (error) {
      expect((error as Error).message).not.toContain('hunter2');
    }
  });
});
