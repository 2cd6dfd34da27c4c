// Metrics and traces for requests to translated providers and Azure: the GenAI semantic conventions'
// provider names (`anthropic`, `aws.bedrock`, `azure.ai.openai`) on the server and client series, the
// server and client spans of a translated request with the attributes of what was asked and answered
// (upstream model, finish reasons, the translated usage), and no provider key, session token or SigV4
// signature anywhere in spans, metrics or logs — also when the provider refused the credential.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic } from '../fakes/anthropic.ts';
import { FAKE_ACCESS_KEY, FAKE_SECRET_KEY, startFakeBedrock, type FakeBedrock } from '../fakes/bedrock.ts';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.ts';
import { account, apiKey, model, newKey, plan, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { clearOtelEnv, exportTracesTo, startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.ts';
import { waitFor } from '../helpers/wait.ts';

const API = 'tollgate.dev/v1alpha1';
const CLAUDE_ON_AWS = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
const SESSION_TOKEN = 'FwoGZXIvYXdzEXAMPLEtelemetrySessionToken0123456789';
const AZURE_KEY = 'azure-telemetry-key-0123456789abcdef';
const WRONG_ANTHROPIC_KEY = 'sk-ant-telemetry-refused-0123456789';
process.env.TELEMETRY_AWS_KEY_ID = FAKE_ACCESS_KEY;
process.env.TELEMETRY_AWS_SECRET = FAKE_SECRET_KEY;
process.env.TELEMETRY_AWS_SESSION = SESSION_TOKEN;
process.env.TELEMETRY_AZURE_KEY = AZURE_KEY;
process.env.TELEMETRY_ANTHROPIC_WRONG_KEY = WRONG_ANTHROPIC_KEY;
const key = newKey('k', 'acme');

describe('provider telemetry: names, span attributes, and no secrets', () => {
  let anthropic: FakeAnthropic;
  let bedrock: FakeBedrock;
  let azure: FakeUpstream;
  let otlp: OtlpReceiver;
  let gw: TestGateway;
  let client: OpenAI;

  beforeAll(async () => {
    otlp = await startOtlpReceiver();
    exportTracesTo(otlp);
    anthropic = await startFakeAnthropic();
    process.env.TELEMETRY_ANTHROPIC_KEY = anthropic.apiKey;
    bedrock = await startFakeBedrock({ sessionToken: SESSION_TOKEN });
    azure = await startFakeUpstream('azure');
    const upstream = (name: string, spec: Record<string, unknown>) => ({ apiVersion: API, kind: 'Upstream', metadata: { name }, spec });
    gw = await startTestGateway(
      [
        upstream('anthropic', { provider: 'anthropic', baseURL: anthropic.url, credentials: { env: 'TELEMETRY_ANTHROPIC_KEY' } }),
        upstream('anthropic-refused', { provider: 'anthropic', baseURL: anthropic.url, credentials: { env: 'TELEMETRY_ANTHROPIC_WRONG_KEY' } }),
        upstream('aws', {
          provider: 'bedrock',
          baseURL: bedrock.url,
          bedrock: { region: 'us-east-1', accessKeyId: { env: 'TELEMETRY_AWS_KEY_ID' }, secretAccessKey: { env: 'TELEMETRY_AWS_SECRET' }, sessionToken: { env: 'TELEMETRY_AWS_SESSION' } },
        }),
        upstream('azure-east', { provider: 'azure', baseURL: azure.url.replace(/\/v1$/, ''), credentials: { env: 'TELEMETRY_AZURE_KEY' }, azure: { apiVersion: '2024-10-21' } }),
        model('claude', [{ upstream: 'anthropic', model: 'claude-haiku-4-5' }]),
        model('claude-refused', [{ upstream: 'anthropic-refused', model: 'claude-haiku-4-5' }]),
        model('claude-aws', [{ upstream: 'aws', model: CLAUDE_ON_AWS }]),
        model('gpt-azure', [{ upstream: 'azure-east', model: 'my-deployment' }]),
        plan('pro', ['claude', 'claude-refused', 'claude-aws', 'gpt-azure']),
        account('acme', 'pro'),
        apiKey(key),
      ],
      { telemetry: { metricsPort: 0, metricsHost: '127.0.0.1', accountSeries: 0, tracing: { enabled: true, reason: 'test' } } },
    );
    client = gw.client(key.key);
  });
  afterAll(async () => {
    await gw?.stop();
    await Promise.all([anthropic?.close(), bedrock?.close(), azure?.close(), otlp?.close()]);
    clearOtelEnv();
  });

  async function spansOf(requestId: string): Promise<{ server: ReceivedSpan; clients: ReceivedSpan[] }> {
    const server = () => otlp.spans.find((s) => s.kind === 2 && s.attributes['tollgate.request_id'] === requestId);
    await waitFor(() => server() !== undefined, 10_000, `the server span of ${requestId}`);
    const { traceId } = server()!;
    return { server: server()!, clients: otlp.spans.filter((s) => s.kind === 3 && s.traceId === traceId) };
  }

  /** The value of the series `name` whose labels include all of `labels`; undefined when none does. */
  function series(metrics: string, name: string, labels: Record<string, string>): number | undefined {
    const line = metrics.split('\n').find((l) => l.startsWith(`${name}{`) && Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`)));
    return line === undefined ? undefined : Number(line.slice(line.lastIndexOf('}') + 1).trim().split(' ')[0]);
  }

  it('anthropic, JSON: both spans carry the provider, the models asked and answered, finish reasons and the translated usage', async () => {
    const { data: answer, response } = await client.chat.completions.create({ model: 'claude', messages: [{ role: 'user', content: 'trace this please' }] }).withResponse();
    const { server, clients } = await spansOf(response.headers.get('x-service-request-id')!);
    expect(server.attributes).toMatchObject({
      'gen_ai.provider.name': 'anthropic',
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': 'claude',
      'gen_ai.response.model': 'claude',
      'gen_ai.response.finish_reasons': ['stop'],
      'gen_ai.usage.input_tokens': answer.usage!.prompt_tokens,
      'gen_ai.usage.output_tokens': answer.usage!.completion_tokens,
    });
    expect(clients).toHaveLength(1);
    expect(clients[0].name).toBe('chat claude-haiku-4-5');
    expect(clients[0].attributes).toMatchObject({
      'gen_ai.provider.name': 'anthropic',
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': 'claude-haiku-4-5',
      'server.address': '127.0.0.1',
      'server.port': Number(new URL(anthropic.url).port),
      'http.response.status_code': 200,
      'tollgate.upstream': 'anthropic',
      'gen_ai.response.finish_reasons': ['stop'],
      'gen_ai.usage.input_tokens': answer.usage!.prompt_tokens,
      'gen_ai.usage.output_tokens': answer.usage!.completion_tokens,
    });
    expect(clients[0].parentSpanId).toBe(server.spanId);
  });

  it('bedrock, streamed with tools: aws.bedrock on both spans, tool_calls as the finish reason, the usage of the stream', async () => {
    const { data: stream, response } = await client.chat.completions.create({
      model: 'claude-aws',
      stream: true,
      stream_options: { include_usage: true },
      tool_choice: 'required',
      tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } } } } }],
      messages: [{ role: 'user', content: 'find it' }],
    }).withResponse();
    let usage: OpenAI.CompletionUsage | undefined;
    let finish: string | null = null;
    for await (const chunk of stream) {
      usage = chunk.usage ?? usage;
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(finish).toBe('tool_calls');
    const { server, clients } = await spansOf(response.headers.get('x-service-request-id')!);
    expect(server.attributes).toMatchObject({
      'gen_ai.provider.name': 'aws.bedrock',
      'gen_ai.request.model': 'claude-aws',
      'gen_ai.response.finish_reasons': ['tool_calls'],
      'gen_ai.usage.input_tokens': usage!.prompt_tokens,
      'gen_ai.usage.output_tokens': usage!.completion_tokens,
    });
    expect(clients.map((s) => s.attributes)).toEqual([
      expect.objectContaining({ 'gen_ai.provider.name': 'aws.bedrock', 'gen_ai.request.model': CLAUDE_ON_AWS, 'server.port': Number(new URL(bedrock.url).port), 'http.response.status_code': 200, 'gen_ai.response.finish_reasons': ['tool_calls'] }),
    ]);
    expect(bedrock.requests.at(-1)!.refused).toBeNull();
  });

  it('azure: azure.ai.openai on the spans', async () => {
    const { response } = await client.chat.completions.create({ model: 'gpt-azure', messages: [{ role: 'user', content: 'hello azure' }] }).withResponse();
    const { server, clients } = await spansOf(response.headers.get('x-service-request-id')!);
    expect(server.attributes['gen_ai.provider.name']).toBe('azure.ai.openai');
    expect(clients[0].attributes).toMatchObject({ 'gen_ai.provider.name': 'azure.ai.openai', 'gen_ai.request.model': 'my-deployment' });
  });

  it('a refused credential: the attempt span says anthropic answered 401, the server span 502, both name anthropic', async () => {
    const refused = await client.chat.completions.create({ model: 'claude-refused', messages: [{ role: 'user', content: 'refused' }] }).withResponse().catch((e) => e);
    expect(refused.status).toBe(502);
    const { server, clients } = await spansOf(refused.headers.get('x-service-request-id'));
    expect(server.attributes).toMatchObject({ 'gen_ai.provider.name': 'anthropic', 'gen_ai.request.model': 'claude-refused', 'http.response.status_code': 502, 'error.type': 'upstream_auth_failed' });
    expect(clients[0].attributes).toMatchObject({ 'gen_ai.provider.name': 'anthropic', 'http.response.status_code': 401, 'error.type': expect.any(String) });
  });

  it('metrics: the provider label of each, on the server and client series', async () => {
    const metrics = await (await fetch(`${gw.telemetry.metricsURL}/metrics`)).text();
    const expectations: Array<[provider: string, publicModel: string, upstreamModel: string]> = [
      ['anthropic', 'claude', 'claude-haiku-4-5'],
      ['aws.bedrock', 'claude-aws', CLAUDE_ON_AWS],
      ['azure.ai.openai', 'gpt-azure', 'my-deployment'],
    ];
    for (const [provider, publicModel, upstreamModel] of expectations) {
      expect(series(metrics, 'gen_ai_server_request_duration_seconds_count', { gen_ai_provider_name: provider, gen_ai_request_model: publicModel, gen_ai_operation_name: 'chat' }), provider).toBeGreaterThanOrEqual(1);
      expect(series(metrics, 'gen_ai_client_operation_duration_seconds_count', { gen_ai_provider_name: provider, gen_ai_request_model: upstreamModel, server_address: '127.0.0.1' }), provider).toBeGreaterThanOrEqual(1);
      expect(series(metrics, 'gen_ai_client_token_usage_count', { gen_ai_provider_name: provider, gen_ai_token_type: 'output' }), provider).toBeGreaterThanOrEqual(1);
    }
  });

  it('no provider key, session token or signature in any span, metric or log line', async () => {
    const signatures = bedrock.requests.map((r) => /Signature=([0-9a-f]{64})/.exec(String(r.headers.authorization))?.[1]).filter((s): s is string => s !== undefined);
    expect(signatures.length).toBeGreaterThan(0);
    const secrets = [anthropic.apiKey, WRONG_ANTHROPIC_KEY, FAKE_SECRET_KEY, SESSION_TOKEN, AZURE_KEY, key.key, ...signatures];
    const spans = JSON.stringify(otlp.spans);
    const metrics = await (await fetch(`${gw.telemetry.metricsURL}/metrics`)).text();
    for (const secret of secrets) {
      expect(spans).not.toContain(secret);
      expect(metrics).not.toContain(secret);
      expect(gw.logText()).not.toContain(secret);
    }
    // Nothing shaped like a credential header either: no SigV4 authorization, no x-api-key value.
    expect(spans).not.toMatch(/AWS4-HMAC-SHA256|x-amz-security-token|x-api-key/i);
  });
});
