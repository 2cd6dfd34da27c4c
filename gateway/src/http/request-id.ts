// Every response, errors included, carries X-Service-Request-Id and the same value as x-request-id
// (the only header the official SDKs read their request id from). An id set by a trusted proxy in
// front (TOLLGATE_TRUSTED_PROXIES) is kept so one id follows the request end to end; any other
// client's id is not used (it could name someone else's request in the logs): the gateway mints its
// own and the client's value goes to the access log in a field of its own, sanitised.
import { randomUUID } from 'node:crypto';
import { BlockList, isIPv4, isIPv6 } from 'node:net';
import type { Context } from 'koa';
import { setHeader } from './response-headers.ts';
import type { GatewayState } from './state.ts';

const ACCEPTABLE_ID = /^[A-Za-z0-9._:-]{8,128}$/;
const NOT_ID_CHARACTERS = /[^A-Za-z0-9._:-]/g;
const MAX_LOGGED_ID = 128;

export function newRequestId(): string {
  // randomUUID draws from a cached entropy pool; randomBytes per request was 3% of the CPU.
  return `req_${randomUUID().replaceAll('-', '')}`;
}

/** The proxies whose X-Service-Request-Id is honoured: addresses and CIDR ranges, IPv4 or IPv6. */
export function trustedProxies(entries: readonly string[]): BlockList | null {
  if (entries.length === 0) return null;
  const list = new BlockList();
  for (const entry of entries) {
    const [address, bits] = entry.split('/');
    const type = isIPv4(address) ? 'ipv4' : isIPv6(address) ? 'ipv6' : null;
    if (!type) throw new Error(`TOLLGATE_TRUSTED_PROXIES: ${JSON.stringify(entry)} is not an IP address or CIDR range`);
    if (bits === undefined) list.addAddress(address, type);
    else list.addSubnet(address, Number(bits), type);
  }
  return list;
}

function fromTrustedProxy(ctx: Context, trusted: BlockList | null): boolean {
  if (!trusted) return false;
  let address = ctx.req.socket.remoteAddress;
  if (!address) return false;
  // A dual-stack listener reports IPv4 peers as IPv4-mapped IPv6 addresses.
  if (address.startsWith('::ffff:') && isIPv4(address.slice(7))) address = address.slice(7);
  return trusted.check(address, isIPv4(address) ? 'ipv4' : 'ipv6');
}

/**
 * Gives the request its id, on ctx.state and on the response's headers. Returns the id the client
 * sent when it was not used (sanitised, for the access line), or null.
 */
export function assignRequestId(ctx: Context & { state: GatewayState }, trusted: BlockList | null): string | null {
  const incoming = ctx.get('x-service-request-id');
  let id: string | null = null;
  let clientId: string | null = null;
  if (incoming) {
    if (ACCEPTABLE_ID.test(incoming) && fromTrustedProxy(ctx, trusted)) id = incoming;
    else clientId = incoming.slice(0, MAX_LOGGED_ID * 4).replace(NOT_ID_CHARACTERS, '').slice(0, MAX_LOGGED_ID);
  }
  id ??= newRequestId();
  ctx.state.requestId = id;
  setHeader(ctx, 'X-Service-Request-Id', id);
  setHeader(ctx, 'x-request-id', id);
  return clientId;
}
