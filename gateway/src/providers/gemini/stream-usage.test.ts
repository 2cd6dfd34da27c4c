// A Gemini stream's usage chunk says what Gemini reported, and nothing when it reported nothing: the
// same as the whole answer, which then leaves usage out, and as Bedrock's stream. OpenAI's spec makes
// the usage chunk optional ("you may not receive the final usage chunk"); a chunk of zeros would
// tell the client, and the gateway's limits, that the answer cost nothing. Read with the openai SDK.
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import type { AnswerContext } from '../provider.ts';
import { gemini } from './index.ts';

const ctx: AnswerContext = { publicModel: 'flash', providerModel: 'gemini-2.5-flash', requestId: 'req-usage', created: 1_700_000_000, includeUsage: true, responseHeaders: {} };

const sse = (...events: unknown[]) => Buffer.from(events.map((event) => `data: ${JSON.stringify(event)}\r\n\r\n`).join(''));
const text = (value: string, finishReason?: string) => ({ candidates: [{ index: 0, content: { role: 'model', parts: [{ text: value }] }, ...(finishReason ? { finishReason } : {}) }], responseId: 'resp1' });

/** The translated stream and the usage the translator reports to the gateway. */
function translate(body: Buffer) {
  const translator = gemini.translation.chatStream(ctx);
  const out = translator.feed(body) + translator.end();
  return { out, usage: translator.usage() };
}

/** The chunks the openai SDK reads from a translated stream, and its final completion. */
async function readWithSdk(out: string) {
  const client = new OpenAI({ apiKey: 'sk-test', baseURL: 'http://gateway.invalid/v1', fetch: async () => new Response(out, { headers: { 'content-type': 'text/event-stream' } }) });
  const stream = client.chat.completions.stream({ model: 'flash', messages: [{ role: 'user', content: 'hi' }], stream_options: { include_usage: true } });
  const chunks: OpenAI.ChatCompletionChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return { chunks, final: await stream.finalChatCompletion() };
}

describe('gemini stream usage', () => {
  it('leaves the usage chunk out when Gemini reported no usage, instead of zeros', async () => {
    const { out, usage } = translate(sse(text('Hel'), text('lo', 'STOP')));
    expect(usage).toBeNull();
    const { chunks, final } = await readWithSdk(out);
    expect(chunks.every((chunk) => chunk.choices.length === 1 && chunk.usage === null)).toBe(true);
    expect(final.choices[0]!.message.content).toBe('Hello');
    // What the SDK makes of a stream without a usage chunk: null, as when OpenAI sends none.
    expect(final.usage).toBeNull();
  });

  it('sends the last usage Gemini reported, in OpenAI\'s meaning', async () => {
    const { out, usage } = translate(sse(text('Hel'), { ...text('lo', 'STOP'), usageMetadata: { promptTokenCount: 4, candidatesTokenCount: 2, thoughtsTokenCount: 3, totalTokenCount: 9 } }));
    const expected = { prompt_tokens: 4, completion_tokens: 5, total_tokens: 9, prompt_tokens_details: { cached_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 3 } };
    expect(usage).toEqual(expected);
    const { chunks, final } = await readWithSdk(out);
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: expected });
    expect(final.usage).toEqual(expected);
  });

  it('answers a whole request the same way: no usage when Gemini sent none', () => {
    const answer = gemini.translation.chatResponse(text('Hello', 'STOP'), { ...ctx, includeUsage: false });
    expect(answer).not.toHaveProperty('usage');
  });
});
