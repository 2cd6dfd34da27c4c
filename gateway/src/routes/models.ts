// GET /v1/models and /v1/models/{id}: exactly the key's catalogue, in OpenAI's list shape.
import type Router from '@koa/router';
import { notFound } from '../http/errors.ts';
import { principalOf } from './model-access.ts';

export function registerModelRoutes(router: Router): void {
  router.get('/v1/models', (ctx) => {
    const entries = principalOf(ctx).catalogue.entries;
    // Anthropic's clients (Claude Code's model discovery) send anthropic-version and read Anthropic's list.
    ctx.body = ctx.get('anthropic-version') ? anthropicModelList(entries) : { object: 'list', data: entries };
  });
  router.get('/v1/models/:model', (ctx) => {
    const entry = principalOf(ctx).catalogue.byId.get(ctx.params.model);
    // A model outside the key's catalogue is indistinguishable from one that does not exist.
    if (!entry) throw notFound(`The model '${ctx.params.model}' does not exist or you do not have access to it.`, 'model', 'model_not_found');
    ctx.body = ctx.get('anthropic-version') ? anthropicModel(entry) : entry;
  });
}

interface CatalogueEntry {
  id: string;
  created: number;
}

function anthropicModel(entry: CatalogueEntry) {
  return { type: 'model', id: entry.id, display_name: entry.id, created_at: new Date(entry.created * 1000).toISOString() };
}

/** Anthropic's page of models: the whole catalogue in one page (it is small), with its first and last ids. */
function anthropicModelList(entries: readonly CatalogueEntry[]) {
  const data = entries.map(anthropicModel);
  return { data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null };
}
