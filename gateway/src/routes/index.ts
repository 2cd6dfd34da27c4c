// Every route family, registered in one place. One file per API family.
import type Router from '@koa/router';
import type { GatewayDeps } from '../deps.ts';
import path from 'node:path';
import { FileResponseStore } from '../storage/file-response-store.ts';
import type { ResponseKeeper } from '../storage/redis-response-store.ts';
import { createBackends } from './backends/index.ts';
import type { StoredResponse } from './backends/service-test-responses.ts';
import type { StoredItem } from '../service-test/response-items.ts';
import { registerAudioRoutes } from './audio.ts';
import { registerConsoleRoutes } from './console/index.ts';
import { registerChatRoutes } from './chat.ts';
import { registerCompletionRoutes } from './completions.ts';
import { registerEmbeddingRoutes } from './embeddings.ts';
import { registerFileRoutes } from './files.ts';
import { registerHealthRoutes } from './health.ts';
import { registerImageContentRoute, registerImageRoutes } from './images.ts';
import { registerImageVariationRoutes } from './images-variations.ts';
import { registerMessagesRoutes } from './messages.ts';
import { registerModelRoutes } from './models.ts';
import { registerModerationRoutes } from './moderations.ts';
import { registerResponseItemRoutes } from './responses-items.ts';
import { registerResponseRoutes } from './responses.ts';
import { registerUpstreamOnlyRoutes } from './upstream-only.ts';

/** Routes outside /v1 that need no key: health, image URLs (capability URLs, like OpenAI's), the account area and its webhook. */
export function registerPublicRoutes(router: Router, deps: GatewayDeps): void {
  registerHealthRoutes(router, deps);
  registerImageContentRoute(router, deps);
  registerConsoleRoutes(router, deps);
}

export function registerApiRoutes(router: Router, deps: GatewayDeps): void {
  // Stored responses (service-test's, and those the gateway makes over chat for other providers):
  // written by their backend, read by GET/DELETE /v1/responses/:id. Shared mode keeps them in Redis,
  // so any replica answers for any other; standalone, in the data directory, so a restart keeps them.
  const stored = path.join(deps.config.dataDir, 'responses');
  const responses: ResponseKeeper<StoredResponse> = deps.shared ? deps.shared.responses<StoredResponse>() : new FileResponseStore<StoredResponse>(path.join(stored, 'responses.jsonl'), deps.log);
  deps.onClose(() => responses.close());
  // The items of stored responses, by item id, for item_reference (service-test/response-items.ts);
  // beside them in Redis or the data directory, so that a reference works on any replica.
  const items: ResponseKeeper<StoredItem> = deps.shared ? deps.shared.items<StoredItem>() : new FileResponseStore<StoredItem>(path.join(stored, 'items.jsonl'), deps.log, { maxEntries: 100_000, maxBytes: 64 * 1024 * 1024 });
  deps.onClose(() => items.close());
  const memory = { responses, items };
  const backends = createBackends(deps, memory);
  registerModelRoutes(router);
  registerChatRoutes(router, deps, backends);
  registerMessagesRoutes(router, deps, backends);
  registerResponseItemRoutes(router, deps, backends, memory);
  registerResponseRoutes(router, deps, backends, responses);
  registerImageRoutes(router, deps, backends);
  registerEmbeddingRoutes(router, deps, backends);
  registerAudioRoutes(router, deps, backends);
  registerFileRoutes(router, deps);
  registerUpstreamOnlyRoutes(router, deps);
  registerCompletionRoutes(router, deps, backends);
  registerModerationRoutes(router, deps, backends);
  registerImageVariationRoutes(router, deps, backends);
}
