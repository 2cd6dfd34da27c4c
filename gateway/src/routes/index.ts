// Every route family, registered in one place. One file per API family.
import type Router from '@koa/router';
import type { GatewayDeps } from '../deps.ts';
import { ResponseStore } from '../storage/response-store.ts';
import { createBackends } from './backends/index.ts';
import type { StoredResponse } from './backends/service-test-responses.ts';
import { registerAudioRoutes } from './audio.ts';
import { registerChatRoutes } from './chat.ts';
import { registerEmbeddingRoutes } from './embeddings.ts';
import { registerFileRoutes } from './files.ts';
import { registerHealthRoutes } from './health.ts';
import { registerImageContentRoute, registerImageRoutes } from './images.ts';
import { registerModelRoutes } from './models.ts';
import { registerResponseRoutes } from './responses.ts';
import { registerUpstreamOnlyRoutes } from './upstream-only.ts';

/** Routes outside /v1 that need no key: health, and image URLs (capability URLs, like OpenAI's). */
export function registerPublicRoutes(router: Router, deps: GatewayDeps): void {
  registerHealthRoutes(router, deps);
  registerImageContentRoute(router, deps);
}

export function registerApiRoutes(router: Router, deps: GatewayDeps): void {
  // service-test's stored responses: written by its backend, read by GET/DELETE /v1/responses/:id.
  const responses = new ResponseStore<StoredResponse>();
  deps.onClose(() => responses.close());
  const backends = createBackends(deps, responses);
  registerModelRoutes(router);
  registerChatRoutes(router, deps, backends);
  registerResponseRoutes(router, deps, backends, responses);
  registerImageRoutes(router, deps, backends);
  registerEmbeddingRoutes(router, deps, backends);
  registerAudioRoutes(router, deps, backends);
  registerFileRoutes(router, deps);
  registerUpstreamOnlyRoutes(router, deps);
}
