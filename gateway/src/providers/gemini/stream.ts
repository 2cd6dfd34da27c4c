// Gemini's stream (`streamGenerateContent?alt=sse`) as OpenAI chunks. Every SSE data line is a whole
// GenerateContentResponse (delimited by `\r\n\r\n`); function calls arrive whole, so each becomes one
// tool-call delta with the next OpenAI tool index; usage is cumulative (the last one counts), and the
// usage chunk is sent only when Gemini reported some. Gemini sends no terminal event: the stream
// succeeded only if a chunk carried a finishReason (or the prompt was blocked). A body that ends
// without one is a ProviderStreamError, never a clean finish.
import { createParser, type EventSourceParser } from 'eventsource-parser';
import { ProviderStreamError, type AnswerContext, type ChatStreamTranslator, type OpenAIUsage } from '../provider.ts';
import { answerId, finishReason, openAIUsage, toolCall, ToolCallNamer, type GeminiResponse } from './answer.ts';
import { googleStreamError } from './errors.ts';

/** Longest stretch of input without a complete event: a body that never delimits one is not buffered without end. */
const MAX_PENDING_CHARS = 16 * 1024 * 1024;

export function chatStream(ctx: AnswerContext): ChatStreamTranslator {
  const decoder = new TextDecoder('utf-8');
  let out = '';
  let pendingChars = 0;
  let id: string | null = null;
  let namer: ToolCallNamer | null = null;
  let roleSent = false;
  let sawFunctionCall = false;
  let finish: string | null = null;
  let finishSent = false;
  let usage: OpenAIUsage | null = null;
  // A failure found mid-read is raised on the next call, after the frames before it were handed out.
  let failure: ProviderStreamError | null = null;

  const frame = (delta: Record<string, unknown>, finishReasonValue: string | null = null) => {
    const chunk: Record<string, unknown> = {
      id: `chatcmpl-${id}`,
      object: 'chat.completion.chunk',
      created: ctx.created,
      model: ctx.publicModel,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReasonValue }],
    };
    if (ctx.includeUsage) chunk.usage = null;
    out += `data: ${JSON.stringify(chunk)}\n\n`;
  };

  const onData = (data: string) => {
    pendingChars = 0;
    let response: GeminiResponse;
    try {
      response = JSON.parse(data) as GeminiResponse;
    } catch {
      throw new ProviderStreamError('Gemini sent a stream event that is not JSON.');
    }
    if (Array.isArray(response)) response = (response[0] ?? {}) as GeminiResponse;
    if (response.error) throw googleStreamError(response.error);
    if (id === null) {
      id = answerId(response.responseId, ctx.requestId);
      namer = new ToolCallNamer(id);
    }
    if (!roleSent) {
      roleSent = true;
      frame({ role: 'assistant', content: '' });
    }
    if (response.usageMetadata) usage = openAIUsage(response.usageMetadata);
    const candidate = response.candidates?.[0];
    for (const part of candidate?.content?.parts ?? []) {
      if (part.functionCall) {
        sawFunctionCall = true;
        frame({ tool_calls: [toolCall(part, namer!)] });
      } else if (typeof part.text === 'string' && part.text) {
        frame(part.thought ? { reasoning_content: part.text } : { content: part.text });
      }
    }
    if (candidate?.finishReason && finish === null) finish = finishReason(candidate.finishReason, sawFunctionCall);
    else if (!candidate && response.promptFeedback?.blockReason && finish === null) finish = 'content_filter';
    // A call after a STOP chunk is still a tool turn.
    if (finish === 'stop' && sawFunctionCall) finish = 'tool_calls';
  };

  const parser: EventSourceParser = createParser({ onEvent: (event) => onData(event.data) });

  return {
    feed(chunk: Buffer): string {
      if (failure) throw failure;
      const text = decoder.decode(chunk, { stream: true });
      pendingChars += text.length;
      if (pendingChars > MAX_PENDING_CHARS) throw (failure = new ProviderStreamError('Gemini sent a stream event larger than the gateway accepts.'));
      try {
        parser.feed(text);
      } catch (error) {
        if (!(error instanceof ProviderStreamError)) throw error;
        failure = error;
      }
      const result = out;
      out = '';
      return result;
    },
    end(): string {
      if (failure) throw failure;
      // A last event without its blank line still counts (the connection's end delimits it).
      parser.feed(`${decoder.decode()}\n\n`);
      if (finish === null) throw new ProviderStreamError('The Gemini stream ended before its last chunk (no finishReason): the answer is incomplete.', 'upstream_stream_truncated');
      if (!finishSent) {
        finishSent = true;
        if (!roleSent) frame({ role: 'assistant', content: '' });
        frame({}, finish);
      }
      // Gemini always reports usage; a stream without it is not said to have cost nothing: as in the
      // whole answer (and Bedrock's stream), the usage chunk is left out and the gateway keeps its estimate.
      if (ctx.includeUsage && usage) {
        const chunk = { id: `chatcmpl-${id ?? ctx.requestId}`, object: 'chat.completion.chunk', created: ctx.created, model: ctx.publicModel, choices: [], usage };
        out += `data: ${JSON.stringify(chunk)}\n\n`;
      }
      out += 'data: [DONE]\n\n';
      const result = out;
      out = '';
      return result;
    },
    usage: () => usage,
    finishReason: () => finish,
  };
}
