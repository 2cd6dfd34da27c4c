// GET /v1/models and /v1/models/{id}: exactly the key's catalogue, in OpenAI's list shape.
import type Router from '@koa/router';
import { notFound } from '../http/errors.ts';
import { principalOf } from './model-access.ts';

export function registerModelRoutes(router: Router): void {
  router.get('/v1/models', (ctx) => {
    ctx.body = { object: 'list', data: principalOf(ctx).catalogue.entries };
  });
  router.get('/v1/models/:model', (ctx) => {
    const entry = principalOf(ctx).catalogue.byId.get(ctx.params.model);
    // A model outside the key's catalogue is indistinguishable from one that does not exist.
    if (!entry) throw notFound(`The model '${ctx.params.model}' does not exist or you do not have access to it.`, 'model', 'model_not_found');
    ctx.body = entry;
  });
}
