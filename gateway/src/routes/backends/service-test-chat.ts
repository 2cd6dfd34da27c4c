// POST /v1/chat/completions answered by service-test, as one JSON answer or as a stream.
import type { Context } from 'koa';
import type { GatewayDeps } from '../../deps.ts';
import type { JsonObject } from '../../http/body.ts';
import { SseStream } from '../../http/sse.ts';
import { parseChatRequest } from '../../service-test/chat-request.ts';
import { chatCompletion, streamChatCompletion } from '../../service-test/chat-completion.ts';
import { exchangeOf, type ResolvedModel } from '../model-access.ts';

export async function serviceTestChat(ctx: Context, deps: GatewayDeps, resolved: ResolvedModel, body: JsonObject): Promise<void> {
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
}
