import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import type { FinishedAttempt, FinishedRequest } from './request-record.ts';
import { spanCountOf, spansOf, type AttemptFacts, type RequestFacts } from './trace-facts.ts';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const scope = { name: 'tollgate-gateway', version: '1.2.3' };

const finishedAttempt = (upstream: string, over: Partial<FinishedAttempt> = {}): FinishedAttempt => ({
  upstream, provider: 'openai', address: `${upstream}.example`, port: 443, model: 'gpt-4o-2024', outcome: 'success', errorType: null, status: 200,
  durationS: 0.1, answered: false, responseModel: null, responseModelLabel: '', skipped: false, ...over,
});

const attemptFacts = (number: number, upstream: string, over: Partial<AttemptFacts> = {}): AttemptFacts => ({
  spanId: `${number}`.repeat(16), startTime: [100, number], endTime: [101, number], number, upstream, provider: 'openai', address: `${upstream}.example`,
  port: 443, upstreamModel: 'gpt-4o-2024', status: 200, error: undefined, openAtEnd: false, ...over,
});

function request(over: Partial<FinishedRequest> = {}): FinishedRequest {
  return {
    requestId: 'req_1', traceId: TRACE, method: 'POST', route: '/v1/chat/completions', status: 200, errorCode: null, errorReason: null, errorType: null,
    operation: 'chat', model: 'gpt-4o', responseModel: 'gpt-4o', responseModelName: 'gpt-4o', finishReasons: ['stop'], provider: 'openai', durationS: 0.2,
    firstByteS: null, usage: { inputTokens: 12, outputTokens: 40 }, account: 'acme', plan: 'pro', attempts: [], ...over,
  };
}

function facts(over: Partial<RequestFacts> = {}): RequestFacts {
  return {
    traceId: TRACE, spanId: 'a'.repeat(16), startTime: [100, 0], endTime: [102, 0], method: 'POST', path: '/v1/chat/completions', requestId: 'req_1',
    attempts: [], request: request(), ...over,
  };
}

describe('spansOf: a kept request\'s facts made into its spans', () => {
  it('a server span with the request\'s GenAI, HTTP and Tollgate attributes, child of the caller\'s span', () => {
    const parent = { traceId: TRACE, spanId: 'b'.repeat(16), traceFlags: 1, isRemote: true, traceState: 'v=1' };
    const [server, ...rest] = spansOf(facts({ parent, traceState: 'v=1', abortReason: 'client_closed', content: { 'gen_ai.input.messages': '[]' } }), scope);
    expect(rest).toEqual([]);
    expect(server).toEqual({
      scope, name: 'chat gpt-4o', kind: SpanKind.SERVER, traceId: TRACE, spanId: 'a'.repeat(16), traceState: 'v=1', parent, startTime: [100, 0], endTime: [102, 0],
      attributes: {
        'http.request.method': 'POST', 'url.path': '/v1/chat/completions', 'tollgate.request_id': 'req_1', 'http.response.status_code': 200,
        'http.route': '/v1/chat/completions', 'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': 'openai', 'gen_ai.request.model': 'gpt-4o',
        'gen_ai.response.model': 'gpt-4o', 'gen_ai.response.finish_reasons': ['stop'], 'gen_ai.usage.input_tokens': 12, 'gen_ai.usage.output_tokens': 40,
        'tollgate.account': 'acme', 'tollgate.plan': 'pro', 'tollgate.abort_reason': 'client_closed', 'gen_ai.input.messages': '[]',
      },
      events: [], links: [], status: { code: SpanStatusCode.UNSET },
    });
  });

  it('a request whose image URLs the gateway fetched says so on its server span', () => {
    const [server] = spansOf(facts({ imageFetch: { images: 2, bytes: 5120, ms: 31 } }), scope);
    expect(server.attributes).toMatchObject({ 'tollgate.image_fetch.images': 2, 'tollgate.image_fetch.bytes': 5120, 'tollgate.image_fetch.duration_ms': 31 });
    expect(Object.keys(spansOf(facts(), scope)[0].attributes).filter((key) => key.startsWith('tollgate.image_fetch'))).toEqual([]);
  });

  it('names a route that is no GenAI operation by method and route, and leaves GenAI attributes and contents off it', () => {
    const [server] = spansOf(facts({ path: '/v1/models', request: request({ route: '/v1/models', operation: null, model: '' }), content: { 'gen_ai.input.messages': '[]' } }), scope);
    expect(server.name).toBe('POST /v1/models');
    expect(Object.keys(server.attributes).filter((key) => key.startsWith('gen_ai.'))).toEqual([]);
  });

  it('one client span per attempt, child of the server span; the answering one has the answer\'s model, finish reasons and usage', () => {
    const attempts = [
      attemptFacts(2, 'a', { status: 503 }),
      attemptFacts(3, 'b', { error: 'UND_ERR_SOCKET', status: undefined }),
      attemptFacts(4, 'c', { openAtEnd: true, upstreamModel: null }),
    ];
    const finished = request({
      attempts: [
        finishedAttempt('down', { skipped: true, outcome: 'skipped', status: undefined }),
        finishedAttempt('a', { status: 503, outcome: 'failure', errorType: '5xx' }),
        finishedAttempt('b', { status: undefined, outcome: 'failure', errorType: 'UND_ERR_SOCKET' }),
        finishedAttempt('c', { answered: true, responseModel: 'gpt-4o-2024-08-06' }),
      ],
    });
    const [server, ...clients] = spansOf(facts({ attempts, request: finished, traceState: 'v=1' }), scope);
    expect(clients.map((span) => [span.name, span.kind, span.spanId, span.parent, span.traceState, span.startTime, span.endTime, span.status])).toEqual([
      ['chat gpt-4o-2024', SpanKind.CLIENT, '2'.repeat(16), { traceId: TRACE, spanId: 'a'.repeat(16), traceFlags: 1, traceState: 'v=1' }, 'v=1', [100, 2], [101, 2], { code: SpanStatusCode.ERROR }],
      ['chat gpt-4o-2024', SpanKind.CLIENT, '3'.repeat(16), expect.anything(), 'v=1', [100, 3], [101, 3], { code: SpanStatusCode.ERROR, message: 'UND_ERR_SOCKET' }],
      ['chat', SpanKind.CLIENT, '4'.repeat(16), expect.anything(), 'v=1', [100, 4], [101, 4], { code: SpanStatusCode.UNSET }],
    ]);
    const common = { 'gen_ai.provider.name': 'openai', 'server.port': 443, 'http.request.method': 'POST', 'gen_ai.operation.name': 'chat' };
    expect(clients.map((span) => span.attributes)).toEqual([
      { ...common, 'server.address': 'a.example', 'tollgate.upstream': 'a', 'tollgate.attempt': 2, 'gen_ai.request.model': 'gpt-4o-2024', 'http.response.status_code': 503, 'error.type': '503' },
      { ...common, 'server.address': 'b.example', 'tollgate.upstream': 'b', 'tollgate.attempt': 3, 'gen_ai.request.model': 'gpt-4o-2024', 'error.type': 'UND_ERR_SOCKET' },
      {
        ...common, 'server.address': 'c.example', 'tollgate.upstream': 'c', 'tollgate.attempt': 4, 'http.response.status_code': 200, 'gen_ai.response.model': 'gpt-4o-2024-08-06',
        'gen_ai.response.finish_reasons': ['stop'], 'gen_ai.usage.input_tokens': 12, 'gen_ai.usage.output_tokens': 40,
      },
    ]);
    // The decisions, as events on the server span at the request's end.
    expect(server.events).toEqual([
      { name: 'tollgate.circuit_open', attributes: { 'tollgate.upstream': 'down' }, time: [102, 0] },
      { name: 'tollgate.fallback', attributes: { 'tollgate.upstream': 'a', 'tollgate.next_upstream': 'b', 'error.type': '5xx' }, time: [102, 0] },
      { name: 'tollgate.fallback', attributes: { 'tollgate.upstream': 'b', 'tollgate.next_upstream': 'c', 'error.type': 'UND_ERR_SOCKET' }, time: [102, 0] },
    ]);
    expect(spanCountOf(facts({ attempts }))).toBe(4);
  });

  it('an upstream attempt of a route that is no GenAI operation is named by method and upstream', () => {
    const [, client] = spansOf(facts({ path: '/v1/files', attempts: [attemptFacts(1, 'a', { upstreamModel: null })], request: request({ route: '/v1/files', operation: null }) }), scope);
    expect(client.name).toBe('POST a');
    expect(client.attributes['gen_ai.operation.name']).toBeUndefined();
  });

  it('a refused request: the limit as an event; a 5xx: an error status with the error type', () => {
    const [limited] = spansOf(facts({ request: request({ status: 429, errorReason: 'tokens', errorType: 'rate_limit_exceeded', usage: null, finishReasons: null }) }), scope);
    expect(limited.events).toEqual([{ name: 'tollgate.rate_limited', attributes: { 'tollgate.limit': 'tokens' }, time: [102, 0] }]);
    expect(limited.attributes['error.type']).toBe('rate_limit_exceeded');
    expect(limited.status).toEqual({ code: SpanStatusCode.UNSET });
    const [failed] = spansOf(facts({ request: request({ status: 502, errorType: 'upstream_unavailable' }) }), scope);
    expect(failed.status).toEqual({ code: SpanStatusCode.ERROR, message: 'upstream_unavailable' });
  });

  it('puts the sampler\'s attributes on the server span', () => {
    const [server] = spansOf(facts({ samplerAttributes: { 'sampler.rule': 'r1' } }), scope);
    expect(server.attributes['sampler.rule']).toBe('r1');
  });
});
