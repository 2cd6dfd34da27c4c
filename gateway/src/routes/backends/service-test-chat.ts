// POST /v1/chat/completions answered by service-test, as one JSON answer or as a stream.
import type { Context } from 'koa';
import type { GatewayDeps } from '../../deps.ts';
import type { JsonObject } from '../../http/body.ts';
import { SseStream } from '../../http/sse.ts';
import { parseChatRequest } from '../../service-test/chat-request.ts';
import { chatCompletion, streamChatCompletion } from '../../service-test/chat-completion.ts';
import { resolveFileIds } from '../../service-test/file-inputs.ts';
import { exchangeOf, principalOf, type ResolvedModel } from '../model-access.ts';
import { upstreamObjectsFor } from '../upstream-objects.ts';
import { recordWholeAnswer, stopSequenceRecorder, streamRecorder } from './service-test-record.ts';

export async function serviceTestChat(ctx: Context, deps: GatewayDeps, resolved: ResolvedModel, body: JsonObject): Promise<void> {
  // Everything is validated before the first byte, so errors are ordinary JSON answers.
  const files = await resolveFileIds(body, principalOf(ctx).account.metadata.name, upstreamObjectsFor(deps).localFiles);
  const request = parseChatRequest(body, files);
  if (!request.options.stream) {
    const completion = chatCompletion(request, resolved.id, stopSequenceRecorder(ctx));
    recordWholeAnswer(ctx, completion);
    ctx.body = completion;
    return;
  }
  const reportFinish = streamRecorder(ctx, () => chatCompletion(request, resolved.id));
  const sse = new SseStream(ctx);
  const reportUsage = (usage: { inputTokens: number; outputTokens: number }) => (exchangeOf(ctx).usage = usage);
  streamChatCompletion(sse, request, resolved.id, reportUsage, reportFinish).catch((error) => {
    deps.log.error({ err: error, requestId: ctx.state.requestId }, 'service-test stream failed');
    void sse.send({ error: { message: 'The stream failed; retry the request.', type: 'server_error', param: null, code: 'internal_error' } }).then(() => sse.end());
  });
}
