// Every route family, registered in one place. One file per API family.
import type Router from '@koa/router';
import type { GatewayDeps } from '../deps.ts';
import { registerAudioRoutes } from './audio.ts';
import { registerChatRoutes } from './chat.ts';
import { registerCompletionRoutes } from './completions.ts';
import { registerEmbeddingRoutes } from './embeddings.ts';
import { registerFileRoutes } from './files.ts';
import { registerHealthRoutes } from './health.ts';
import { registerImageContentRoute, registerImageRoutes } from './images.ts';
import { registerImageVariationRoutes } from './images-variations.ts';
import { registerModelRoutes } from './models.ts';
import { registerModerationRoutes } from './moderations.ts';
import { registerResponseRoutes } from './responses.ts';
import { registerUpstreamOnlyRoutes } from './upstream-only.ts';

/** Routes outside /v1 that need no key: health, and image URLs (capability URLs, like OpenAI's). */
export function registerPublicRoutes(router: Router, deps: GatewayDeps): void {
  registerHealthRoutes(router, deps);
  registerImageContentRoute(router, deps);
}

export function registerApiRoutes(router: Router, deps: GatewayDeps): void {
  registerModelRoutes(router);
  registerChatRoutes(router, deps);
  registerResponseRoutes(router, deps);
  registerImageRoutes(router, deps);
  registerEmbeddingRoutes(router, deps);
  registerAudioRoutes(router, deps);
  registerFileRoutes(router, deps);
  registerUpstreamOnlyRoutes(router, deps);
  registerCompletionRoutes(router, deps);
  registerModerationRoutes(router, deps);
  registerImageVariationRoutes(router, deps);
}
