// POST /v1/chat/completions.
import type Router from '@koa/router';
import type { GatewayDeps } from '../deps.ts';
import { readJsonBody } from '../http/body.ts';
import { SseStream } from '../http/sse.ts';
import { parseChatRequest } from '../service-test/chat-request.ts';
import { chatCompletion, streamChatCompletion } from '../service-test/chat-completion.ts';
import { forwardJson } from './forward.ts';
import { exchangeOf, reserveFor, resolveModel } from './model-access.ts';
import { upstreamObjectsFor, upstreamOfReferences } from './upstream-objects.ts';

export function registerChatRoutes(router: Router, deps: GatewayDeps): void {
  const objects = upstreamObjectsFor(deps);
  router.post('/v1/chat/completions', async (ctx) => {
    const body = await readJsonBody(ctx, deps.config.maxBodyBytes);
    const resolved = resolveModel(ctx, body.model, 'model', 'chat.completions');
    await reserveFor(ctx, deps, body, 'chat');
    if (resolved.kind === 'upstream') {
      // A file id in a content part must be this account's: the upstream cannot tell accounts apart.
      await upstreamOfReferences(ctx, objects, body);
      return forwardJson(ctx, deps, resolved, '/chat/completions', body, { streamKind: 'chat' });
    }
    // Everything is validated before the first byte, so errors are ordinary JSON answers.
    const request = parseChatRequest(body);
    if (!request.options.stream) {
      const completion = chatCompletion(request, resolved.id);
      exchangeOf(ctx).usage = { inputTokens: completion.usage.prompt_tokens, outputTokens: completion.usage.completion_tokens };
      ctx.body = completion;
      return;
    }
    const sse = new SseStream(ctx);
    const reportUsage = (usage: { inputTokens: number; outputTokens: number }) => (exchangeOf(ctx).usage = usage);
    streamChatCompletion(sse, request, resolved.id, reportUsage).catch((error) => {
      deps.log.error({ err: error, requestId: ctx.state.requestId }, 'service-test stream failed');
      void sse.send({ error: { message: 'The stream failed; retry the request.', type: 'server_error', param: null, code: 'internal_error' } }).then(() => sse.end());
    });
  });
}
