// POST /v1/images/generations and /v1/images/edits (parse, resolve the model, hand over to its
// backend: service-test draws real PNGs, backends/service-test-images.ts; upstream models are proxied,
// edits spooled to disk and relayed with the model rewritten per target), and the key-less
// GET /images/<id>.png that serves answers given as `url`.
import type Router from '@koa/router';
import type { GatewayDeps } from '../deps.ts';
import { readJsonBody } from '../http/body.ts';
import { notFound } from '../http/errors.ts';
import { ImageStore } from '../service-test/images-store.ts';
import type { Backends } from './backends/backend.ts';
import { reserveForParameters, resolveModel } from './model-access.ts';
import { withSpooledForm } from './multipart-relay.ts';

export function registerImageRoutes(router: Router, deps: GatewayDeps, backends: Backends): void {
  router.post('/v1/images/generations', async (ctx) => {
    const body = await readJsonBody(ctx, deps.config.maxBodyBytes);
    const resolved = resolveModel(ctx, body.model, 'model', 'images.generations');
    await reserveForParameters(ctx, deps, { by: 'images', n: body.n, size: body.size, quality: body.quality });
    return backends.of(resolved).imageGenerations(ctx, resolved, body);
  });

  router.post('/v1/images/edits', (ctx) =>
    withSpooledForm(ctx, deps, async (form) => {
      const resolved = resolveModel(ctx, form.field('model'), 'model', 'images.edits');
      await reserveForParameters(ctx, deps, { by: 'images', n: form.field('n'), size: form.field('size'), quality: form.field('quality') });
      return backends.of(resolved).imageEdits(ctx, resolved, form);
    }),
  );
}

/** Outside /v1 and without a key: the random id in the path is the permission to read. */
export function registerImageContentRoute(router: Router, deps: GatewayDeps): void {
  const store = deps.images;
  router.get('/images/:file', async (ctx) => {
    const match = /^(.+)\.png$/.exec(ctx.params.file);
    const image = match && ImageStore.isValidId(match[1]) ? await store.load(match[1]) : null;
    if (!image) {
      throw notFound('There is no image at this URL: it never existed, or it expired (image URLs are valid for one hour).', null, 'image_not_found');
    }
    ctx.type = 'image/png';
    ctx.set('Cache-Control', `private, max-age=${Math.max(0, Math.floor((image.expiresAt - Date.now()) / 1000))}`);
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.body = image.bytes;
  });
}
