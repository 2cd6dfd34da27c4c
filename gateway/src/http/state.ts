// What the edge leaves on ctx.state: the request's id (request-id.ts) and its exchange, which holds
// everything else about the request (exchange/exchange.ts). Routes read the exchange; nothing below
// routes/ sees a Koa context.
import type { Exchange } from '../exchange/exchange.ts';

export type { Principal } from '../exchange/principal.ts';

export interface GatewayState {
  requestId: string;
  exchange: Exchange;
}
