import type Router from '@koa/router';
import type { GatewayDeps } from '../deps.ts';

export function registerChatRoutes(_router: Router, _deps: GatewayDeps): void {}
