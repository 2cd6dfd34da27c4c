// POST /v1/images/variations (multipart: image, model, n, size, response_format, user): the form is
// spooled, then handed to the model's backend (relayed like edits, or answered by service-test,
// backends/service-test-image-variations.ts). `model` is optional, as at OpenAI (whose default is
// dall-e-2): without one, service-test answers.
import type Router from '@koa/router';
import type { GatewayDeps } from '../deps.ts';
import { SERVICE_TEST_MODEL } from '../resources/snapshot.ts';
import type { Backends } from './backends/backend.ts';
import { reserveForParameters, resolveModel } from './model-access.ts';
import { withSpooledForm } from './multipart-relay.ts';

export function registerImageVariationRoutes(router: Router, deps: GatewayDeps, backends: Backends): void {
  router.post('/v1/images/variations', (ctx) =>
    withSpooledForm(ctx, deps, async (form) => {
      const resolved = resolveModel(ctx, form.field('model') ?? SERVICE_TEST_MODEL, 'model', 'images.variations');
      await reserveForParameters(ctx, deps, { by: 'images', n: form.field('n'), size: form.field('size'), quality: undefined });
      return backends.of(resolved).imageVariations(ctx, resolved, form);
    }),
  );
}
