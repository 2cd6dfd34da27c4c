import { describe, expect, it } from 'vitest';
import { parseResponsesRequest } from '../../service-test/responses-request.ts';
import { newResponseBase, responseUsage } from './response.ts';
import { ChatToResponsesStream } from './stream.ts';

// Chat usage as the Anthropic and Bedrock translations report a turn that wrote to the prompt cache.
const chatUsage = { prompt_tokens: 1200, completion_tokens: 20, total_tokens: 1220, prompt_tokens_details: { cached_tokens: 100, cache_write_tokens: 1000 } };

describe('Responses usage translated from chat usage', () => {
  it('reports cache writes the provider reported', () => {
    expect(responseUsage(chatUsage)).toEqual({ input_tokens: 1200, input_tokens_details: { cached_tokens: 100, cache_write_tokens: 1000 }, output_tokens: 20, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 1220 });
  });

  it('reports 0 cache writes when the provider reported none', () => {
    expect(responseUsage({ prompt_tokens: 5, completion_tokens: 1 })?.input_tokens_details).toEqual({ cached_tokens: 0, cache_write_tokens: 0 });
  });

  it('carries cache writes into the stream’s response.completed', () => {
    const settings = parseResponsesRequest({ model: 'm', input: 'hi' }).settings;
    const stream = new ChatToResponsesStream(newResponseBase('m', settings, undefined));
    const chunk = (body: object) => `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', ...body })}\r\n\r\n`;
    const out = stream.feed(chunk({ choices: [{ index: 0, delta: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }] }) + chunk({ choices: [], usage: chatUsage }) + 'data: [DONE]\r\n\r\n') + stream.end();
    const completed = out.split('\n\n').map((e) => e.match(/^data: (.*)$/m)?.[1]).filter(Boolean).map((d) => JSON.parse(d!)).find((e) => e.type === 'response.completed');
    expect(completed.response.usage.input_tokens_details).toEqual({ cached_tokens: 100, cache_write_tokens: 1000 });
  });
});
