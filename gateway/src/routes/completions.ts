// POST /v1/completions, the legacy text completions: proxied like chat (JSON, or SSE ending in
// [DONE], with usage, the model renamed, plan limits), and served by service-test as an instruct
// model would (service-test/completions.ts).
import type Router from '@koa/router';
import type { GatewayDeps } from '../deps.ts';
import { readJsonBody } from '../http/body.ts';
import { SseStream } from '../http/sse.ts';
import { parseCompletionRequest, streamTextCompletion, textCompletion } from '../service-test/completions.ts';
import { forwardJson } from './forward.ts';
import { exchangeOf, reserveFor, resolveModel } from './model-access.ts';

export function registerCompletionRoutes(router: Router, deps: GatewayDeps): void {
  router.post('/v1/completions', async (ctx) => {
    const body = await readJsonBody(ctx, deps.config.maxBodyBytes);
    const resolved = resolveModel(ctx, body.model, 'model', 'completions');
    await reserveFor(ctx, deps, body, 'completions');
    // Completion streams have chat's framing (usage chunk with empty choices, [DONE]).
    if (resolved.kind === 'upstream') return forwardJson(ctx, deps, resolved, '/completions', body, { streamKind: 'chat' });
    const request = parseCompletionRequest(body);
    if (!request.stream) {
      const completion = textCompletion(request, resolved.id);
      exchangeOf(ctx).usage = { inputTokens: completion.usage.prompt_tokens, outputTokens: completion.usage.completion_tokens };
      ctx.body = completion;
      return;
    }
    const sse = new SseStream(ctx);
    streamTextCompletion(sse, request, resolved.id, (usage) => (exchangeOf(ctx).usage = usage)).catch((error) => {
      deps.log.error({ err: error, requestId: ctx.state.requestId }, 'service-test completion stream failed');
      sse.end();
    });
  });
}
