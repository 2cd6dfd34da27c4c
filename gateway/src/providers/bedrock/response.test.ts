import { describe, expect, it } from 'vitest';
import type { AnswerContext } from '../provider.ts';
import { translateError } from './errors.ts';
import { embeddings } from './embeddings.ts';
import { chatRequest } from './request.ts';
import { chatResponse } from './response.ts';
import type { Upstream } from '@tollgate/crds';

const ctx: AnswerContext = { publicModel: 'claude', providerModel: 'anthropic.claude-v1:0', requestId: 'gw-1', created: 1_700_000_000, includeUsage: false, responseHeaders: { 'x-amzn-requestid': 'aws-7' } };
const upstream = { apiVersion: 'tollgate.dev/v1alpha1', kind: 'Upstream', metadata: { name: 'aws' }, spec: { provider: 'bedrock', bedrock: { region: 'us-east-1' } } } as Upstream;

describe('chatResponse', () => {
  it('joins text blocks, carries tool calls with the client’s tool names, and reports usage with cache in prompt_tokens', () => {
    // The request registers the stand-in for the dotted name; the answer maps it back.
    const sent = JSON.parse(chatRequest({ messages: [{ role: 'user', content: 'x' }], tools: [{ type: 'function', function: { name: 'fs.read' } }] }, { model: 'anthropic.claude-v1:0', upstream }, false).body);
    const standIn = sent.toolConfig.tools[0].toolSpec.name;
    const answer = chatResponse(
      {
        output: { message: { role: 'assistant', content: [{ reasoningContent: { reasoningText: { text: 'think', signature: 's' } } }, { text: 'Let me ' }, { text: 'look.' }, { toolUse: { toolUseId: 'tooluse_1', name: standIn, input: { path: '/a' } } }] } },
        stopReason: 'end_turn',
        usage: { inputTokens: 10, outputTokens: 5, totalTokens: 40, cacheReadInputTokens: 20, cacheWriteInputTokens: 5 },
      },
      ctx,
    );
    expect(answer).toMatchObject({ id: 'chatcmpl-aws-7', object: 'chat.completion', created: 1_700_000_000, model: 'claude' });
    expect(answer.choices).toEqual([
      {
        index: 0,
        logprobs: null,
        finish_reason: 'tool_calls',
        message: { role: 'assistant', content: 'Let me look.', refusal: null, reasoning_content: 'think', tool_calls: [{ id: 'tooluse_1', type: 'function', function: { name: 'fs.read', arguments: '{"path":"/a"}' } }] },
      },
    ]);
    expect(answer.usage).toEqual({ prompt_tokens: 35, completion_tokens: 5, total_tokens: 40, prompt_tokens_details: { cached_tokens: 20, cache_write_tokens: 5 } });
  });

  it.each([
    ['end_turn', 'stop'],
    ['stop_sequence', 'stop'],
    ['max_tokens', 'length'],
    ['model_context_window_exceeded', 'length'],
    ['guardrail_intervened', 'content_filter'],
    ['content_filtered', 'content_filter'],
    ['tool_use', 'tool_calls'],
  ])('maps stopReason %s to %s', (stopReason, finish) => {
    const answer = chatResponse({ output: { message: { content: [{ text: 'x' }] } }, stopReason }, ctx) as any;
    expect(answer.choices[0].finish_reason).toBe(finish);
  });

  it('uses the gateway request id when Bedrock sent none, and refuses an answer without output', () => {
    expect(chatResponse({ output: { message: { content: [] } } }, { ...ctx, responseHeaders: {} }).id).toBe('chatcmpl-gw-1');
    expect(() => chatResponse({ message: 'odd' }, ctx)).toThrow(/without an output/);
  });
});

describe('translateError', () => {
  const err = (status: number, type: string, message = 'msg', extra: Record<string, string> = {}) =>
    translateError(status, { 'x-amzn-errortype': `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`, ...extra }, JSON.stringify({ message }));

  it.each([
    [400, 'ValidationException', 400, 'invalid_request_error'],
    [429, 'ThrottlingException', 429, 'rate_limit_error'],
    [400, 'ServiceQuotaExceededException', 429, 'insufficient_quota'],
    [503, 'ServiceUnavailableException', 503, 'server_error'],
    [429, 'ModelNotReadyException', 503, 'server_error'],
    [408, 'ModelTimeoutException', 504, 'server_error'],
    [424, 'ModelErrorException', 502, 'server_error'],
    [404, 'ResourceNotFoundException', 404, 'not_found_error'],
    [500, 'InternalServerException', 500, 'server_error'],
  ])('%i %s → %i %s', (status, type, expected, expectedType) => {
    const translated = err(status, type);
    expect(translated).toMatchObject({ status: expected, type: expectedType });
    expect(translated.credentialRefused).toBeFalsy();
  });

  it('treats refused signatures and keys as the gateway’s credential, never quoting the canonical request', () => {
    for (const type of ['InvalidSignatureException', 'UnrecognizedClientException', 'ExpiredTokenException', 'AccessDeniedException']) {
      const translated = err(403, type, "The request signature we calculated does not match... The Canonical String for this request should have been 'POST /model/x'");
      expect(translated).toMatchObject({ status: 502, credentialRefused: true, code: 'upstream_auth_failed' });
      expect(translated.message).not.toMatch(/Canonical|POST/);
    }
  });

  it('reads the exception from __type when the header is missing, keeps retry-after, spots context length', () => {
    expect(translateError(429, {}, JSON.stringify({ __type: 'com.amazon.coral.service#ThrottlingException', message: 'slow down' }))).toMatchObject({ status: 429, message: 'slow down (ThrottlingException)' });
    expect(err(429, 'ThrottlingException', 'x', { 'retry-after': '3' }).retryAfter).toBe('3');
    expect(err(400, 'ValidationException', 'Input is too long for requested model.').code).toBe('context_length_exceeded');
  });
});

describe('embeddings', () => {
  const ectx = (model: string) => ({ model, upstream });

  it('fans a Titan array input out to one call per text and sums inputTextTokenCount', () => {
    const calls = embeddings.requests({ input: ['a b', 'c'], dimensions: 256 }, ectx('amazon.titan-embed-text-v2:0'));
    expect(calls.map((c) => [c.path, JSON.parse(c.body)])).toEqual([
      ['/model/amazon.titan-embed-text-v2%3A0/invoke', { inputText: 'a b', dimensions: 256 }],
      ['/model/amazon.titan-embed-text-v2%3A0/invoke', { inputText: 'c', dimensions: 256 }],
    ]);
    const out = embeddings.response([{ embedding: [0.5, -1], inputTextTokenCount: 2 }, { embedding: [0.25, 1], inputTextTokenCount: 1 }], {}, ctx) as any;
    expect(out).toEqual({ object: 'list', model: 'claude', usage: { prompt_tokens: 3, total_tokens: 3 }, data: [{ object: 'embedding', index: 0, embedding: [0.5, -1] }, { object: 'embedding', index: 1, embedding: [0.25, 1] }] });
  });

  it('batches Cohere inputs (96 a call) with input_type search_query by default', () => {
    const calls = embeddings.requests({ input: Array.from({ length: 100 }, (_, i) => `t${i}`) }, ectx('cohere.embed-english-v3'));
    expect(calls.map((c) => JSON.parse(c.body).texts.length)).toEqual([96, 4]);
    expect(JSON.parse(calls[0].body).input_type).toBe('search_query');
    expect(() => embeddings.requests({ input: 'x', dimensions: 256 }, ectx('cohere.embed-english-v3'))).toThrow(/Cohere Embed v4/);
    expect(() => embeddings.requests({ input: [1, 2, 3] }, ectx('cohere.embed-english-v3'))).toThrow(/token arrays/);
  });

  it('encodes base64 as float32 little-endian', () => {
    const out = embeddings.response([{ embeddings: { float: [[1, -2.5]] } }], { encoding_format: 'base64' }, ctx) as any;
    const bytes = Buffer.from(out.data[0].embedding, 'base64');
    expect([bytes.readFloatLE(0), bytes.readFloatLE(4)]).toEqual([1, -2.5]);
  });
});
