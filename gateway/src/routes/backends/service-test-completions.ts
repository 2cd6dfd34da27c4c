// POST /v1/completions answered by service-test, as one JSON answer or as a stream
// (service-test/completions.ts).
import type { Context } from 'koa';
import type { GatewayDeps } from '../../deps.ts';
import type { JsonObject } from '../../http/body.ts';
import { SseStream } from '../../http/sse.ts';
import { parseCompletionRequest, streamTextCompletion, textCompletion } from '../../service-test/completions.ts';
import { exchangeOf, type ResolvedModel } from '../model-access.ts';
import { recordWholeAnswer, streamRecorder } from './service-test-record.ts';

export async function serviceTestCompletions(ctx: Context, deps: GatewayDeps, resolved: ResolvedModel, body: JsonObject): Promise<void> {
  const request = parseCompletionRequest(body);
  if (!request.stream) {
    const completion = textCompletion(request, resolved.id);
    recordWholeAnswer(ctx, completion);
    ctx.body = completion;
    return;
  }
  const reportFinish = streamRecorder(ctx, () => textCompletion(request, resolved.id));
  const sse = new SseStream(ctx);
  streamTextCompletion(sse, request, resolved.id, (usage) => (exchangeOf(ctx).usage = usage), reportFinish).catch((error) => {
    deps.log.error({ err: error, requestId: ctx.state.requestId }, 'service-test completion stream failed');
    sse.end();
  });
}
