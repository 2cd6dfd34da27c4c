// TOLLGATE_REDIS_URL in its three forms, one per way ioredis connects:
//
//   redis://[user:password@]host:6379[/db]                       one server (rediss:// for TLS)
//   redis+sentinel://[user:password@]s1:26379,s2:26379/master[/db]  Sentinel: ask the sentinels where the
//                                                                  primary named `master` is, follow failovers
//   redis+cluster://[user:password@]n1:6379,n2:6379               Cluster: any reachable nodes as seeds
//
// The `rediss+…` forms use TLS to every server (sentinels included). User and password are Redis
// AUTH / ACL for the data servers; sentinels that require their own come from separate settings.
// Nothing parsed here is ever logged: the password is in it.

export interface HostPort {
  host: string;
  port: number;
}

interface Credentials {
  username?: string;
  password?: string;
  tls: boolean;
}

export type RedisTarget =
  | ({ mode: 'standalone'; url: string } & Credentials)
  | ({ mode: 'sentinel'; sentinels: HostPort[]; name: string; db: number } & Credentials)
  | ({ mode: 'cluster'; nodes: HostPort[] } & Credentials);

const SCHEME = /^(rediss?)(\+sentinel|\+cluster)?:\/\/(.*)$/;

/** Parses TOLLGATE_REDIS_URL; throws an Error naming what is wrong (never echoing the URL). */
export function parseRedisUrl(url: string): RedisTarget {
  const match = SCHEME.exec(url);
  if (!match) throw new Error('TOLLGATE_REDIS_URL must start with redis://, rediss://, redis+sentinel://, rediss+sentinel://, redis+cluster:// or rediss+cluster://');
  const tls = match[1] === 'rediss';
  const kind = match[2];
  if (!kind) return { mode: 'standalone', url, tls };
  const rest = match[3].replace(/[?#].*$/, '');
  const slash = rest.indexOf('/');
  const authority = slash < 0 ? rest : rest.slice(0, slash);
  const path = slash < 0 ? '' : rest.slice(slash + 1);
  const at = authority.lastIndexOf('@');
  const credentials: Credentials = { tls, ...userInfo(at < 0 ? '' : authority.slice(0, at)) };
  const hosts = hostList(at < 0 ? authority : authority.slice(at + 1), kind === '+sentinel' ? 26379 : 6379);
  if (kind === '+cluster') {
    if (path !== '') throw new Error('TOLLGATE_REDIS_URL: a redis+cluster:// URL has no path (a cluster has only database 0)');
    return { mode: 'cluster', nodes: hosts, ...credentials };
  }
  const [name, db, extra] = path.split('/');
  if (!name) throw new Error('TOLLGATE_REDIS_URL: a redis+sentinel:// URL names the primary after the hosts: redis+sentinel://host:26379/mymaster');
  if (extra !== undefined || (db !== undefined && !/^\d+$/.test(db))) throw new Error('TOLLGATE_REDIS_URL: after the primary name only a database number may follow (…/mymaster/0)');
  return { mode: 'sentinel', sentinels: hosts, name: decodeURIComponent(name), db: db ? Number(db) : 0, ...credentials };
}

function userInfo(text: string): { username?: string; password?: string } {
  if (text === '') return {};
  const colon = text.indexOf(':');
  const username = decodeURIComponent(colon < 0 ? text : text.slice(0, colon));
  const password = colon < 0 ? undefined : decodeURIComponent(text.slice(colon + 1));
  // "redis://:secret@host" is a password alone (the default user), as in redis:// URLs.
  return { ...(username ? { username } : {}), ...(password !== undefined ? { password } : {}) };
}

function hostList(text: string, defaultPort: number): HostPort[] {
  const hosts = text.split(',').map((entry) => {
    // [::1]:26379 for IPv6, host:port otherwise; the port may be left out.
    const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry);
    const plain = /^([^:[\]]+)(?::(\d+))?$/.exec(entry);
    const found = bracketed ?? plain;
    if (!found) throw new Error('TOLLGATE_REDIS_URL: each host must be host or host:port, separated by commas');
    const port = found[2] === undefined ? defaultPort : Number(found[2]);
    if (!(port >= 1 && port <= 65535)) throw new Error('TOLLGATE_REDIS_URL: a port must be from 1 to 65535');
    return { host: found[1], port };
  });
  if (hosts.length === 0 || hosts.some((h) => h.host === '')) throw new Error('TOLLGATE_REDIS_URL: name at least one host');
  return hosts;
}
