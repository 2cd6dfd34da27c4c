// The account area (/console) and the payment webhook (/webhooks), registered when the console is on.
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type Router from '@koa/router';
import type { GatewayDeps } from '../../deps.ts';
import { registerAccountRoutes } from './accounts.ts';
import { registerAuthRoutes } from './auth.ts';
import { securityHeaders } from './http.ts';
import { registerStripeWebhook } from './stripe.ts';

const STATIC_FILES: Record<string, string> = { 'console.css': 'text/css; charset=utf-8', 'console.js': 'text/javascript; charset=utf-8' };
const STATIC_DIR = new URL('../../console/static/', import.meta.url);

export function registerConsoleRoutes(router: Router, deps: GatewayDeps): void {
  const services = deps.console;
  if (!services) return;
  const files = new Map<string, Promise<Buffer>>();
  router.get('/console/static/:file', async (ctx) => {
    const type = STATIC_FILES[ctx.params.file];
    if (!type) return;
    securityHeaders(ctx);
    let content = files.get(ctx.params.file);
    if (!content) files.set(ctx.params.file, (content = readFile(fileURLToPath(new URL(ctx.params.file, STATIC_DIR)))));
    ctx.type = type;
    ctx.set('Cache-Control', 'public, max-age=300');
    ctx.body = await content;
  });
  registerAuthRoutes(router, deps, services);
  registerAccountRoutes(router, deps, services);
  registerStripeWebhook(router, deps, services);
}
