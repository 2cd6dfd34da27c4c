// What the answer itself says, on spans and metrics: gen_ai.response.finish_reasons and
// gen_ai.response.model as the upstream returned them (a dated name for an alias, say), for chat
// completions, legacy completions and Responses, JSON and streamed, from upstreams and from
// service-test; and the response-model label kept to names the snapshot knows.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { account, apiKey, model, newKey, plan, raw, startTestGateway, upstream, type TestGateway } from '../helpers/gateway.ts';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.ts';
import { exportTracesTo, clearOtelEnv, startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.ts';
import { until } from '../helpers/proxy-tools.ts';
import { tracingConfigFrom } from '../../gateway/src/telemetry/tracing.ts';
import { loadConfig } from '../../gateway/src/config.ts';

process.env.TEST_UPSTREAM_KEY = 'sk-upstream-secret-genai-answers';
const key = newKey('k', 'acme');
const DATED = 'fake-2024-08-06';
const PROMPT = 'a prompt only the capture switch may record';
const INSTRUCTIONS = 'answer as a pirate would';

describe('finish reasons and the response model, on spans and metric labels', () => {
  let renaming: FakeUpstream;
  let same: FakeUpstream;
  let failing: FakeUpstream;
  let slow: FakeUpstream;
  let gw: TestGateway;
  let otlp: OtlpReceiver;

  beforeAll(async () => {
    otlp = await startOtlpReceiver();
    exportTracesTo(otlp);
    // An upstream that answers a dated name for what it was asked, and one that echoes the name.
    renaming = await startFakeUpstream('renaming', { answerModel: DATED, finishReason: 'length' });
    same = await startFakeUpstream('same');
    slow = await startFakeUpstream('slow', { chunks: 200, chunkIntervalMs: 20 });
    // A Responses stream that fails, as OpenAI ends one: response.failed, its usage null.
    failing = await startFakeUpstream('failing', {
      respond: (req, res) => {
        req.resume();
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const response = { id: 'resp_failing', object: 'response', created_at: 1, model: 'failing-upstream', output: [], usage: null };
        res.write(`event: response.created\ndata: ${JSON.stringify({ type: 'response.created', sequence_number: 0, response: { ...response, status: 'in_progress', error: null } })}\n\n`);
        res.end(`event: response.failed\ndata: ${JSON.stringify({ type: 'response.failed', sequence_number: 1, response: { ...response, status: 'failed', error: { code: 'server_error', message: 'The model failed.' } } })}\n\n`);
      },
    });
    gw = await startTestGateway(
      [
        upstream('renaming', renaming.url),
        upstream('same', same.url),
        upstream('failing', failing.url),
        upstream('slow', slow.url),
        // Public gpt-4o is `fake` upstream: the gateway renames the answer's model for the client.
        model('gpt-4o', [{ upstream: 'renaming', model: 'fake' }]),
        // No target model: the client sees the upstream's own name.
        model('alias', [{ upstream: 'renaming' }]),
        model('echo', [{ upstream: 'same', model: 'echo-upstream' }]),
        // Not renamed (the events pass through as bytes), and renamed (each event is rewritten).
        model('flaky', [{ upstream: 'failing' }]),
        model('flaky-renamed', [{ upstream: 'failing', model: 'failing-upstream' }]),
        model('slow', [{ upstream: 'slow' }]),
        plan('pro', ['gpt-4o', 'alias', 'echo', 'flaky', 'flaky-renamed', 'slow']),
        account('acme', 'pro'),
        apiKey(key),
      ],
      { telemetry: { metricsPort: 0, metricsHost: '127.0.0.1', accountSeries: 0, tracing: { enabled: true, reason: 'test' } } },
    );
  });
  afterAll(async () => {
    await gw?.stop();
    await Promise.all([renaming?.close(), same?.close(), failing?.close(), slow?.close(), otlp?.close()]);
    clearOtelEnv();
  });

  async function spansOf(requestId: string): Promise<{ server: ReceivedSpan; client?: ReceivedSpan }> {
    await until(() => otlp.spans.some((s) => s.kind === 2 && s.attributes['tollgate.request_id'] === requestId), `the spans of ${requestId}`);
    const server = otlp.spans.find((s) => s.kind === 2 && s.attributes['tollgate.request_id'] === requestId)!;
    const client = otlp.spans.find((s) => s.kind === 3 && s.traceId === server.traceId);
    return { server, client };
  }
  const post = async (path: string, body: object) => {
    const answer = await raw(gw, 'POST', path, { key: key.key, body });
    expect(answer.status, answer.text).toBe(200);
    return { id: answer.headers.get('x-service-request-id')!, text: answer.text, json: answer.json };
  };
  const chat = (modelName: string, extra: object = {}) => post('/v1/chat/completions', { model: modelName, messages: [{ role: 'user', content: 'hi' }], ...extra });

  it('chat JSON: the upstream\'s dated name on the client span, the public name the client got on the server span', async () => {
    const { id, json } = await chat('gpt-4o');
    expect(json.model).toBe('gpt-4o');
    const { server, client } = await spansOf(id);
    expect(server.attributes).toMatchObject({ 'gen_ai.response.model': 'gpt-4o', 'gen_ai.response.finish_reasons': ['length'] });
    expect(client!.attributes).toMatchObject({ 'gen_ai.request.model': 'fake', 'gen_ai.response.model': DATED, 'gen_ai.response.finish_reasons': ['length'] });
  });

  it('chat without renaming, JSON and streamed: the answer\'s own name on both spans', async () => {
    const { id, json } = await chat('alias');
    expect(json.model).toBe(DATED);
    expect((await spansOf(id)).server.attributes).toMatchObject({ 'gen_ai.response.model': DATED, 'gen_ai.response.finish_reasons': ['length'] });
    const streamed = await chat('alias', { stream: true });
    expect(streamed.text).toContain('"finish_reason":"length"');
    const { server, client } = await spansOf(streamed.id);
    expect(server.attributes).toMatchObject({ 'gen_ai.response.model': DATED, 'gen_ai.response.finish_reasons': ['length'] });
    expect(client!.attributes).toMatchObject({ 'gen_ai.response.model': DATED, 'gen_ai.response.finish_reasons': ['length'] });
  });

  it('a large chat JSON answer (read from its end, not parsed whole) still gives both', async () => {
    same.behave({ text: 'x'.repeat(40_000), finishReason: 'content_filter' });
    try {
      const { id, json } = await chat('echo');
      expect(json.choices[0].message.content).toHaveLength(40_000);
      const { server, client } = await spansOf(id);
      expect(server.attributes).toMatchObject({ 'gen_ai.response.model': 'echo', 'gen_ai.response.finish_reasons': ['content_filter'] });
      expect(client!.attributes).toMatchObject({ 'gen_ai.response.model': 'echo-upstream', 'gen_ai.response.finish_reasons': ['content_filter'] });
    } finally {
      same.behave({});
    }
  });

  it('streamed chat renamed for the client: finish reason and the upstream\'s name on the client span', async () => {
    const { id, text } = await chat('gpt-4o', { stream: true });
    expect(text).not.toContain(DATED);
    const { server, client } = await spansOf(id);
    expect(server.attributes).toMatchObject({ 'gen_ai.response.model': 'gpt-4o', 'gen_ai.response.finish_reasons': ['length'] });
    expect(client!.attributes).toMatchObject({ 'gen_ai.response.model': DATED, 'gen_ai.response.finish_reasons': ['length'] });
  });

  it('legacy completions (JSON and streamed) and Responses from an upstream', async () => {
    const json = await post('/v1/completions', { model: 'echo', prompt: 'hi' });
    expect((await spansOf(json.id)).server.attributes).toMatchObject({ 'gen_ai.operation.name': 'text_completion', 'gen_ai.response.finish_reasons': ['stop'], 'gen_ai.response.model': 'echo' });
    const streamed = await post('/v1/completions', { model: 'alias', prompt: 'hi', stream: true });
    expect((await spansOf(streamed.id)).client!.attributes).toMatchObject({ 'gen_ai.response.finish_reasons': ['length'], 'gen_ai.response.model': DATED });
    const response = await post('/v1/responses', { model: 'echo', input: 'hi' });
    const { server, client } = await spansOf(response.id);
    expect(server.attributes).toMatchObject({ 'gen_ai.operation.name': 'generate_content', 'gen_ai.response.finish_reasons': ['stop'], 'gen_ai.response.model': 'echo' });
    expect(client!.attributes).toMatchObject({ 'gen_ai.response.finish_reasons': ['stop'], 'gen_ai.response.model': 'echo-upstream' });
  });

  it('a streamed Responses answer that fails: `failed` as its finish reason, though its usage is null', async () => {
    for (const name of ['flaky', 'flaky-renamed']) {
      const failed = await post('/v1/responses', { model: name, input: 'hi', stream: true });
      expect(failed.text).toContain('response.failed');
      const { server, client } = await spansOf(failed.id);
      expect(server.attributes, name).toMatchObject({ 'gen_ai.operation.name': 'generate_content', 'gen_ai.response.finish_reasons': ['failed'] });
      expect(client!.attributes, name).toMatchObject({ 'gen_ai.response.finish_reasons': ['failed'], 'gen_ai.response.model': 'failing-upstream' });
    }
  });

  it('a stream the client leaves: the server span says why it ended (tollgate.abort_reason)', async () => {
    const leaving = new AbortController();
    const answer = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'slow', messages: [{ role: 'user', content: 'hi' }], stream: true }),
      signal: leaving.signal,
    });
    expect(answer.status).toBe(200);
    const id = answer.headers.get('x-service-request-id')!;
    await answer.body!.getReader().read();
    leaving.abort();
    const { server } = await spansOf(id);
    expect(server.attributes['tollgate.abort_reason']).toBe('client_gone');
    // A request that ran to its end carries none.
    const whole = await chat('echo');
    expect((await spansOf(whole.id)).server.attributes['tollgate.abort_reason']).toBeUndefined();
  });

  it('service-test: chat (JSON, streamed, n=2), completions and Responses (streamed)', async () => {
    const cases: Array<[string, object, string[]]> = [
      ['/v1/chat/completions', { model: 'service-test', messages: [{ role: 'user', content: 'hello' }], max_completion_tokens: 1 }, ['length']],
      ['/v1/chat/completions', { model: 'service-test', messages: [{ role: 'user', content: 'hello' }], stream: true, n: 2 }, ['stop', 'stop']],
      ['/v1/completions', { model: 'service-test', prompt: 'hello', stream: true, max_tokens: 1 }, ['length']],
      ['/v1/responses', { model: 'service-test', input: 'hello', stream: true }, ['stop']],
    ];
    for (const [path, body, reasons] of cases) {
      const { id } = await post(path, body);
      const { server } = await spansOf(id);
      expect(server.attributes, path).toMatchObject({ 'gen_ai.response.model': 'service-test', 'gen_ai.response.finish_reasons': reasons });
    }
  });

  it('records no message contents by default: no prompt, no answer, no instructions in any exported span', async () => {
    const ids = [
      (await chat('alias', { messages: [{ role: 'user', content: PROMPT }] })).id,
      (await chat('alias', { messages: [{ role: 'user', content: PROMPT }], stream: true })).id,
      (await post('/v1/responses', { model: 'service-test', input: PROMPT, instructions: INSTRUCTIONS })).id,
    ];
    for (const id of ids) await spansOf(id);
    const everything = JSON.stringify(otlp.spans);
    for (const text of [PROMPT, INSTRUCTIONS, 'answer from renaming', 'renaming-0', 'gen_ai.input.messages', 'gen_ai.output.messages', 'gen_ai.system_instructions']) expect(everything).not.toContain(text);
  });

  it('labels: the response model only as a name the snapshot knows, anything else _OTHER', async () => {
    const text = await (await fetch(`${gw.telemetry.metricsURL}/metrics`)).text();
    const labels = (series: string) => [...text.matchAll(new RegExp(`^${series}\\{([^}]*)\\}`, 'gm'))].map((m) => m[1]);
    const client = labels('gen_ai_client_operation_duration_seconds_count');
    // The dated name is not in the snapshot: _OTHER; the target name `echo-upstream` is.
    expect(client.some((l) => l.includes('gen_ai_request_model="fake"') && l.includes('gen_ai_response_model="_OTHER"'))).toBe(true);
    expect(client.some((l) => l.includes('gen_ai_request_model="echo-upstream"') && l.includes('gen_ai_response_model="echo-upstream"'))).toBe(true);
    const server = labels('gen_ai_server_request_duration_seconds_count');
    // Renamed for the client: the public name; the client got the dated name: _OTHER.
    expect(server.some((l) => l.includes('gen_ai_request_model="gpt-4o"') && l.includes('gen_ai_response_model="gpt-4o"'))).toBe(true);
    expect(server.some((l) => l.includes('gen_ai_request_model="alias"') && l.includes('gen_ai_response_model="_OTHER"'))).toBe(true);
    expect(text).not.toContain(DATED);
  });
});

describe('message contents with OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true', () => {
  let up: FakeUpstream;
  let gw: TestGateway;
  let otlp: OtlpReceiver;

  beforeAll(async () => {
    otlp = await startOtlpReceiver();
    exportTracesTo(otlp);
    process.env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT = 'true';
    up = await startFakeUpstream('up');
    gw = await startTestGateway([upstream('up', up.url), model('gpt-4o', [{ upstream: 'up', model: 'fake' }]), plan('pro', ['gpt-4o']), account('acme', 'pro'), apiKey(key)], {
      telemetry: { metricsPort: 0, metricsHost: '127.0.0.1', accountSeries: 0, tracing: tracingConfigFrom(process.env) },
      // Bodies from 300 KB on are parsed in a worker (the default is 1 MiB; the fake upstream reads only a body's first MB).
      jsonParsing: { ...loadConfig({}).jsonParsing, offloadFromBytes: 300_000 },
    });
  });
  afterAll(async () => {
    await gw?.stop();
    await Promise.all([up?.close(), otlp?.close()]);
    clearOtelEnv();
  });

  const send = async (path: string, body: object) => {
    const answer = await raw(gw, 'POST', path, { key: key.key, body });
    expect(answer.status, answer.text).toBe(200);
    const id = answer.headers.get('x-service-request-id')!;
    await until(() => otlp.spans.some((s) => s.kind === 2 && s.attributes['tollgate.request_id'] === id), `the span of ${id}`);
    const attributes = otlp.spans.find((s) => s.kind === 2 && s.attributes['tollgate.request_id'] === id)!.attributes;
    const json = (name: string) => JSON.parse(String(attributes[name]));
    return { attributes, json };
  };

  it('reads the switch from the environment', () => {
    expect(tracingConfigFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }).captureContent).toBe(false);
    expect(tracingConfigFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'TRUE' }).captureContent).toBe(true);
  });

  it('chat through an upstream, JSON and streamed: input and output messages as the conventions shape them', async () => {
    const messages = [{ role: 'system', content: 'be brief' }, { role: 'user', content: PROMPT }];
    const { json } = await send('/v1/chat/completions', { model: 'gpt-4o', messages });
    expect(json('gen_ai.input.messages')).toEqual([
      { role: 'system', parts: [{ type: 'text', content: 'be brief' }] },
      { role: 'user', parts: [{ type: 'text', content: PROMPT }] },
    ]);
    expect(json('gen_ai.output.messages')).toEqual([{ role: 'assistant', parts: [{ type: 'text', content: 'answer from up' }], finish_reason: 'stop' }]);
    const streamed = await send('/v1/chat/completions', { model: 'gpt-4o', messages, stream: true });
    expect(streamed.json('gen_ai.output.messages')).toEqual([{ role: 'assistant', parts: [{ type: 'text', content: 'up-0 up-1 up-2 up-3 up-4 ' }], finish_reason: 'stop' }]);
  });

  it('service-test: Responses streamed with instructions, and a legacy completion', async () => {
    const { json } = await send('/v1/responses', { model: 'service-test', input: PROMPT, instructions: INSTRUCTIONS, stream: true });
    expect(json('gen_ai.system_instructions')).toEqual([{ type: 'text', content: INSTRUCTIONS }]);
    expect(json('gen_ai.input.messages')).toEqual([{ role: 'user', parts: [{ type: 'text', content: PROMPT }] }]);
    const output = json('gen_ai.output.messages');
    expect(output).toHaveLength(1);
    expect(output[0]).toMatchObject({ role: 'assistant', finish_reason: 'stop' });
    expect(output[0].parts[0]).toMatchObject({ type: 'text', content: expect.any(String) });
    const completion = await send('/v1/completions', { model: 'service-test', prompt: PROMPT, max_tokens: 1 });
    expect(completion.json('gen_ai.input.messages')).toEqual([{ role: 'user', parts: [{ type: 'text', content: PROMPT }] }]);
    expect(completion.json('gen_ai.output.messages')[0]).toMatchObject({ role: 'assistant', finish_reason: 'length' });
  });

  it('stays bounded: long texts are cut, many messages trimmed to the last ones', async () => {
    const long = 'y'.repeat(100_000);
    const messages = Array.from({ length: 60 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: i === 59 ? long : `turn ${i}` }));
    const { attributes, json } = await send('/v1/chat/completions', { model: 'service-test', messages });
    expect(String(attributes['gen_ai.input.messages']).length).toBeLessThanOrEqual(64 * 1024);
    const input = json('gen_ai.input.messages');
    expect(input).toHaveLength(32);
    expect(input[0].parts[0].content).toBe('turn 28');
    expect(input[31].parts[0].content).toBe(`${'y'.repeat(4096)}…`);
  });

  it('leaves out the members of a body parsed off the event loop, and still records the answer', async () => {
    const { attributes, json } = await send('/v1/completions', { model: 'gpt-4o', prompt: 'z'.repeat(400_000) });
    expect(attributes).not.toHaveProperty('gen_ai.input.messages');
    expect(json('gen_ai.output.messages')).toEqual([{ role: 'assistant', parts: [{ type: 'text', content: 'completion from up' }], finish_reason: 'stop' }]);
  });
});
