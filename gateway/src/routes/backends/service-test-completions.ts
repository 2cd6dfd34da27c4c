// POST /v1/completions answered by service-test, as one JSON answer or as a stream
// (service-test/completions.ts).
import type { Context } from 'koa';
import type { GatewayDeps } from '../../deps.ts';
import type { JsonObject } from '../../http/body.ts';
import { SseStream } from '../../http/sse.ts';
import { parseCompletionRequest, streamTextCompletion, textCompletion } from '../../service-test/completions.ts';
import { factsOfObject, noteFacts } from '../../upstream/answer-facts.ts';
import { exchangeOf, type ResolvedModel } from '../model-access.ts';

export async function serviceTestCompletions(ctx: Context, deps: GatewayDeps, resolved: ResolvedModel, body: JsonObject): Promise<void> {
  const request = parseCompletionRequest(body);
  if (!request.stream) {
    const completion = textCompletion(request, resolved.id);
    exchangeOf(ctx).usage = { inputTokens: completion.usage.prompt_tokens, outputTokens: completion.usage.completion_tokens };
    noteFacts(exchangeOf(ctx), factsOfObject(completion, 'chat'));
    const content = exchangeOf(ctx).content;
    if (content) content.output = completion;
    ctx.body = completion;
    return;
  }
  // Message contents switched on: the answer the stream spells out, as one object (it is deterministic).
  const content = exchangeOf(ctx).content;
  if (content) content.output = textCompletion(request, resolved.id);
  const sse = new SseStream(ctx);
  const reportFinish = (index: number, reason: string) => noteFacts(exchangeOf(ctx), { finishReasons: [{ index, reason }] });
  streamTextCompletion(sse, request, resolved.id, (usage) => (exchangeOf(ctx).usage = usage), reportFinish).catch((error) => {
    deps.log.error({ err: error, requestId: ctx.state.requestId }, 'service-test completion stream failed');
    sse.end();
  });
}
