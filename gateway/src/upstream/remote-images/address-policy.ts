// Which addresses the gateway may fetch a client's image from. The fetch runs inside the operator's
// network, so a URL must never reach what only the gateway can reach: loopback, private ranges
// (RFC 1918, IPv6 unique-local), link-local (169.254.169.254, the cloud metadata address, and
// fe80::/10), CGNAT, multicast, unspecified, reserved and documentation ranges. IPv4 carried inside
// IPv6 (mapped ::ffff:a.b.c.d, NAT64 64:ff9b::/96, 6to4 2002::/16) is judged as the IPv4 it carries.
// IPv6 outside global unicast (2000::/3) is refused whole. An operator may open named hosts or CIDR
// ranges (TOLLGATE_FETCH_IMAGE_PRIVATE_HOSTS): images on an internal server, and tests on loopback.
import { BlockList, isIP } from 'node:net';

const NOT_PUBLIC_V4: Array<[string, number]> = [
  ['0.0.0.0', 8], // "this network", the unspecified address
  ['10.0.0.0', 8], // RFC 1918
  ['100.64.0.0', 10], // CGNAT (RFC 6598)
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, cloud metadata
  ['172.16.0.0', 12], // RFC 1918
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // TEST-NET-1
  ['192.88.99.0', 24], // 6to4 relay anycast
  ['192.168.0.0', 16], // RFC 1918
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // TEST-NET-2
  ['203.0.113.0', 24], // TEST-NET-3
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
];

const NOT_PUBLIC_V6: Array<[string, number]> = [
  ['64:ff9b:1::', 48], // local-use NAT64
  ['2001::', 23], // IETF protocol assignments (Teredo among them)
  ['2001:db8::', 32], // documentation
];

const notPublicV4 = new BlockList();
for (const [network, prefix] of NOT_PUBLIC_V4) notPublicV4.addSubnet(network, prefix, 'ipv4');
const notPublicV6 = new BlockList();
for (const [network, prefix] of NOT_PUBLIC_V6) notPublicV6.addSubnet(network, prefix, 'ipv6');
const globalUnicastV6 = new BlockList();
globalUnicastV6.addSubnet('2000::', 3, 'ipv6');

/** An address without brackets or zone (`[fe80::1%eth0]` → `fe80::1`). */
function bare(address: string): string {
  const unbracketed = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  const zone = unbracketed.indexOf('%');
  return zone === -1 ? unbracketed : unbracketed.slice(0, zone);
}

/** The sixteen bytes of an IPv6 address, or null when it is not one. */
function v6Bytes(address: string): number[] | null {
  if (isIP(address) !== 6) return null;
  let text = address.toLowerCase();
  // A dotted tail (::ffff:127.0.0.1) as two groups.
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted[1].split('.').map(Number);
    text = `${text.slice(0, -dotted[1].length)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, null];
  const headGroups = head ? head.split(':') : [];
  const tailGroups = tail ? tail.split(':') : [];
  const zeros = tail === null ? 0 : 8 - headGroups.length - tailGroups.length;
  const groups = [...headGroups, ...Array(zeros).fill('0'), ...tailGroups].map((group) => parseInt(group, 16));
  return groups.flatMap((group) => [group >> 8, group & 0xff]);
}

/** The IPv4 address an IPv6 one carries (mapped, NAT64, 6to4), or null. */
export function embeddedV4(address: string): string | null {
  const bytes = v6Bytes(bare(address));
  if (!bytes) return null;
  const zero = (from: number, to: number) => bytes.slice(from, to).every((byte) => byte === 0);
  const v4 = (at: number) => bytes.slice(at, at + 4).join('.');
  // ::ffff:a.b.c.d (IPv4-mapped)
  if (zero(0, 10) && bytes[10] === 0xff && bytes[11] === 0xff) return v4(12);
  // 64:ff9b::a.b.c.d (NAT64, RFC 6052)
  if (bytes[0] === 0 && bytes[1] === 0x64 && bytes[2] === 0xff && bytes[3] === 0x9b && zero(4, 12)) return v4(12);
  // 2002:abcd:efgh::/48 (6to4)
  if (bytes[0] === 0x20 && bytes[1] === 0x02) return v4(2);
  return null;
}

/** True when `address` (IPv4 or IPv6 text) is a public unicast address a fetch may connect to. */
export function isPublicAddress(address: string): boolean {
  const plain = bare(address);
  const family = isIP(plain);
  if (family === 4) return !notPublicV4.check(plain, 'ipv4');
  if (family !== 6) return false;
  const carried = embeddedV4(plain);
  if (carried !== null) return isPublicAddress(carried);
  return globalUnicastV6.check(plain, 'ipv6') && !notPublicV6.check(plain, 'ipv6');
}

/**
 * The operator's exceptions: host names (matched exactly, case-insensitively, whatever they resolve
 * to) and CIDR ranges or single addresses (matched against the address connected to).
 */
export class PrivateHostAllowance {
  readonly #names = new Set<string>();
  readonly #ranges = new BlockList();
  readonly empty: boolean;

  constructor(entries: readonly string[]) {
    for (const raw of entries) {
      const entry = raw.trim().toLowerCase();
      if (!entry) continue;
      const [network, prefixText] = entry.split('/');
      const family = isIP(bare(network));
      if (family === 0) {
        if (prefixText !== undefined || !/^[a-z0-9.-]+$/.test(entry)) throw new Error(`TOLLGATE_FETCH_IMAGE_PRIVATE_HOSTS: '${raw}' is neither a host name, an address nor a CIDR range`);
        this.#names.add(entry.replace(/\.$/, ''));
        continue;
      }
      const type = family === 4 ? 'ipv4' : 'ipv6';
      const prefix = prefixText === undefined ? (family === 4 ? 32 : 128) : Number(prefixText);
      if (!Number.isInteger(prefix) || prefix < 0 || prefix > (family === 4 ? 32 : 128)) throw new Error(`TOLLGATE_FETCH_IMAGE_PRIVATE_HOSTS: '${raw}' has a bad prefix length`);
      this.#ranges.addSubnet(bare(network), prefix, type);
    }
    this.empty = this.#names.size === 0 && this.#ranges.rules.length === 0;
  }

  allowsHost(hostname: string): boolean {
    return this.#names.has(bare(hostname).toLowerCase().replace(/\.$/, ''));
  }

  allowsAddress(address: string): boolean {
    const plain = bare(address);
    const family = isIP(plain);
    if (family === 0) return false;
    if (this.#ranges.check(plain, family === 4 ? 'ipv4' : 'ipv6')) return true;
    const carried = family === 6 ? embeddedV4(plain) : null;
    return carried !== null && this.#ranges.check(carried, 'ipv4');
  }
}

/** May the gateway connect to `address`, reached for `hostname`? */
export function mayConnect(hostname: string, address: string, allowance: PrivateHostAllowance): boolean {
  return isPublicAddress(address) || allowance.allowsHost(hostname) || allowance.allowsAddress(address);
}
