// What the edge leaves on ctx.state: the request's id (request-id.ts) and its exchange, which holds
// everything else about the request (exchange/exchange.ts). Routes read the exchange; nothing below
// routes/ sees a Koa context.
import type { Exchange } from '../exchange/exchange.ts';
import type { BodyPolicy } from './body-policy.ts';
import type { Drain } from './drain.ts';

export type { Principal } from '../exchange/principal.ts';

export interface GatewayState {
  requestId: string;
  exchange: Exchange;
  /** How bodies are read (idle timeout, shared memory budget): set for every request by the envelope. */
  bodyPolicy?: BodyPolicy;
  /** Whether the gateway is draining (shutdown): answers then close their connection. */
  drain?: Drain;
}
