// Vision through translated providers, driven by the Vercel AI SDK and LangChain as applications use
// them (the openai SDK's vision requests are in provider-anthropic/gemini.test.ts): an image the SDK
// turns into an OpenAI `image_url` data URL reaches the fake Anthropic as a base64 image block and the
// fake Gemini as `inlineData`, with exactly the bytes the application gave, JSON and streamed; an
// image the gateway cannot fetch for Gemini (an http URL on loopback, which it must not reach) is a 400 naming the part,
// raised by each SDK as its own error. The fakes answer from what they received (media type, size).
import { createOpenAI } from '@ai-sdk/openai';
import { HumanMessage } from '@langchain/core/messages';
import { ChatOpenAI } from '@langchain/openai';
import { APICallError, generateText, streamText } from 'ai';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic } from '../fakes/anthropic.ts';
import { startFakeGemini, type FakeGemini } from '../fakes/gemini.ts';
import { account, apiKey, model, newKey, plan, startTestGateway, type TestGateway } from '../helpers/gateway.ts';

const API = 'tollgate.dev/v1alpha1';
const key = newKey('v', 'seer');

let anthropic: FakeAnthropic;
let gemini: FakeGemini;
let gw: TestGateway;
let baseURL: string;

/** A real 3×2 PNG (opaque red), so that the bytes are an image any decoder would take. */
function redPng(): Buffer {
  const png = new PNG({ width: 3, height: 2 });
  for (let i = 0; i < png.data.length; i += 4) png.data.set([200, 20, 20, 255], i);
  return PNG.sync.write(png);
}
const image = redPng();
const base64 = image.toString('base64');

beforeAll(async () => {
  anthropic = await startFakeAnthropic();
  gemini = await startFakeGemini();
  process.env.VISION_ANTHROPIC_KEY = anthropic.apiKey;
  process.env.VISION_GEMINI_KEY = gemini.apiKey;
  gw = await startTestGateway([
    { apiVersion: API, kind: 'Upstream', metadata: { name: 'anthropic' }, spec: { provider: 'anthropic', baseURL: anthropic.url, credentials: { env: 'VISION_ANTHROPIC_KEY' } } },
    { apiVersion: API, kind: 'Upstream', metadata: { name: 'gemini' }, spec: { provider: 'gemini', baseURL: gemini.url, credentials: { env: 'VISION_GEMINI_KEY' } } },
    model('claude', [{ upstream: 'anthropic', model: 'claude-haiku-4-5' }]),
    model('flash', [{ upstream: 'gemini', model: 'gemini-2.5-flash' }]),
    plan('vision', ['claude', 'flash'], { tokensPerMinute: 1_000_000 }),
    account('seer', 'vision'),
    apiKey(key),
  ]);
  baseURL = `${gw.url}/v1`;
});
afterAll(async () => {
  await gw?.stop();
  await anthropic?.close();
  await gemini?.close();
});
beforeEach(() => {
  anthropic.requests.length = 0;
  gemini.requests.length = 0;
});

/** The image block the fake Anthropic received in the last request's last user message. */
function anthropicImage(): unknown {
  const body = anthropic.requests.at(-1)!.body as { messages: Array<{ content: Array<{ type: string }> }> };
  return body.messages.at(-1)!.content.find((block) => block.type === 'image');
}

/** The inlineData part the fake Gemini received in the last request's last content. */
function geminiImage(): unknown {
  const body = gemini.requests.at(-1)!.body as { contents: Array<{ parts: Array<Record<string, unknown>> }> };
  return body.contents.at(-1)!.parts.find((part) => part.inlineData);
}

describe('vision through translated providers with the Vercel AI SDK', () => {
  const openai = () => createOpenAI({ baseURL, apiKey: key.key });
  const messages = [{ role: 'user' as const, content: [{ type: 'text' as const, text: 'What colour?' }, { type: 'image' as const, image: new Uint8Array(image), mediaType: 'image/png' }] }];

  it('generateText: the image bytes reach Anthropic as a base64 image block', async () => {
    const result = await generateText({ model: openai().chat('claude'), messages, maxRetries: 0 });
    expect(result.text).toBe('You said: What colour? [images: image image/png base64]');
    expect(result.finishReason).toBe('stop');
    expect(anthropicImage()).toEqual({ type: 'image', source: { type: 'base64', media_type: 'image/png', data: base64 } });
  });

  it('streamText: the image bytes reach Gemini as inlineData, and the answer streams back with usage', async () => {
    const result = streamText({ model: openai().chat('flash'), messages, maxRetries: 0 });
    let text = '';
    for await (const piece of result.textStream) text += piece;
    expect(text).toBe(`You said: What colour? [image/png, ${image.length} bytes]`);
    expect(await result.finishReason).toBe('stop');
    expect((await result.usage).inputTokens).toBeGreaterThan(0);
    expect(geminiImage()).toEqual({ inlineData: { mimeType: 'image/png', data: base64 } });
    expect(gemini.requests.at(-1)!.path).toBe('/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse');
  });

  it('an http image URL the gateway may not fetch is a 400 naming the part, raised as an APICallError; nothing reaches Gemini', async () => {
    const url = new URL('http://127.0.0.1:9/cat.png');
    const error = await generateText({
      model: openai().chat('flash'),
      messages: [{ role: 'user', content: [{ type: 'text', text: 'What is it?' }, { type: 'image', image: url, mediaType: 'image/png' }] }],
      maxRetries: 0,
    }).catch((e: unknown) => e);
    expect(APICallError.isInstance(error)).toBe(true);
    const apiError = error as APICallError;
    expect(apiError.statusCode).toBe(400);
    expect(JSON.parse(apiError.responseBody!).error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_image_url', param: 'messages[0].content[1].image_url.url' });
    expect(gemini.requests).toHaveLength(0);
  });
});

describe('vision through translated providers with LangChain', () => {
  const chat = (name: string) => new ChatOpenAI({ model: name, apiKey: key.key, configuration: { baseURL }, maxRetries: 0 });
  const question = () =>
    new HumanMessage({ content: [{ type: 'text', text: 'Describe it' }, { type: 'image_url', image_url: { url: `data:image/png;base64,${base64}` } }] });

  it('invoke: a data-URL image reaches Gemini as inlineData with the same bytes', async () => {
    const answer = await chat('flash').invoke([question()]);
    expect(answer.text).toBe(`You said: Describe it [image/png, ${image.length} bytes]`);
    expect(answer.response_metadata.finish_reason).toBe('stop');
    expect(geminiImage()).toEqual({ inlineData: { mimeType: 'image/png', data: base64 } });
  });

  it('stream: a data-URL image reaches Anthropic as a base64 image block, and the answer streams back', async () => {
    let text = '';
    for await (const chunk of await chat('claude').stream([question()])) text += typeof chunk.content === 'string' ? chunk.content : '';
    expect(text).toBe('You said: Describe it [images: image image/png base64]');
    expect(anthropicImage()).toEqual({ type: 'image', source: { type: 'base64', media_type: 'image/png', data: base64 } });
    expect(anthropic.requests.at(-1)!.body).toMatchObject({ stream: true });
  });

  it('an image of a type Anthropic does not take (image/bmp) is a 400 naming the part, raised by LangChain with its status', async () => {
    const bmp = new HumanMessage({ content: [{ type: 'text', text: 'Describe it' }, { type: 'image_url', image_url: { url: `data:image/bmp;base64,${base64}` } }] });
    const error = (await chat('claude').invoke([bmp]).catch((e: unknown) => e)) as { status?: number; error?: { param?: string } };
    expect(error.status).toBe(400);
    expect(error.error?.param).toBe('messages[0].content[1].image_url.url');
    expect(anthropic.requests).toHaveLength(0);
  });
});
