// The provider layer sends a translated upstream only what its translation covers: a request with no
// translated operation (a file, a batch sent to the upstream directly) is refused before anything
// leaves, never built as a chat request.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { Upstream } from '@tollgate/crds';
import { Exchanges } from '../exchange/exchanges.ts';
import { ApiError } from '../http/errors.ts';
import { builtInProviders } from '../providers/registry.ts';
import { UpstreamAbort, type AttemptRequest, type CallUpstream, type UpstreamCall } from './call.ts';
import { Credentials } from './credentials.ts';
import { directAttempt } from './targets.ts';
import { withProviderAuth } from './with-provider-auth.ts';

const quiet = pino({}, new Writable({ write: (_c, _e, done) => done() }));
const anthropic = { apiVersion: 'tollgate.dev/v1alpha1', kind: 'Upstream', metadata: { name: 'claude-up' }, spec: { provider: 'anthropic', baseURL: 'http://a.test', credentials: { env: 'K' } } } as unknown as Upstream;

function callWith(request: AttemptRequest, model: string | null): UpstreamCall {
  const exchange = new Exchanges(quiet).begin('req_test', request.method, `/v1${request.endpoint}`);
  const attempt = { ...directAttempt(anthropic), upstreamModel: model };
  return { exchange, attempt, request, record: exchange.startAttempt('claude-up', model, null), headers: {}, aborts: new UpstreamAbort(exchange) };
}

describe('withProviderAuth on a translated upstream', () => {
  const sent: UpstreamCall[] = [];
  const next: CallUpstream = async (call) => {
    sent.push({ ...call });
    return { kind: 'failed', code: 'not_really_sent' };
  };
  const layer = withProviderAuth(builtInProviders(), new Credentials({ K: 'sk-ant-secret' }))(next);

  it.each([
    ['a file upload', { endpoint: '/files', method: 'POST' }],
    ['a batch', { endpoint: '/batches', method: 'POST', json: { input_file_id: 'file-1', endpoint: '/v1/chat/completions', completion_window: '24h' } }],
    ['embeddings, which Anthropic has none of', { endpoint: '/embeddings', method: 'POST', json: { input: 'x' }, operation: 'embeddings' as const }],
  ])('%s is a 400 naming the provider and the endpoint, and nothing is sent', async (_what, request) => {
    sent.length = 0;
    const error = await layer(callWith(request, null)).catch((e) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ status: 400, code: 'unsupported_for_upstream' });
    expect(error.message).toBe(`The upstream provider 'claude-up' is anthropic, which Tollgate offers chat completions for, not POST /v1${request.endpoint}.`);
    expect(sent).toHaveLength(0);
  });

  it('a chat request is translated and sent with the key', async () => {
    sent.length = 0;
    await layer(callWith({ endpoint: '/chat/completions', method: 'POST', operation: 'chat', json: { model: 'claude', messages: [{ role: 'user', content: 'hi' }] } }, 'claude-haiku-4-5'));
    expect(sent).toHaveLength(1);
    expect(sent[0].path).toBe('/v1/messages');
    expect(sent[0].headers['x-api-key']).toBe('sk-ant-secret');
  });
});
