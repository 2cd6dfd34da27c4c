import type Router from '@koa/router';
import type { GatewayDeps } from '../deps.ts';

export function registerImageRoutes(_router: Router, _deps: GatewayDeps): void {}
export function registerImageContentRoute(_router: Router, _deps: GatewayDeps): void {}
