import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { UpstreamAttempt } from '../exchange/exchange.ts';
import { ProviderStreamError, type ChatStreamTranslator } from '../providers/provider.ts';
import { awaitFirstContent, carriesContent, rejectionOf } from './first-content.ts';

const chunk = (delta: object, finish: string | null = null) => `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

/** A translator of lines: `role`, `ping`, `text <words>`, `fail <code>`; `stop` ends it; ends without `stop` are cut. */
function lines(): ChatStreamTranslator {
  let stopped = false;
  return {
    feed(bytes) {
      let out = '';
      for (const line of bytes.toString().split('\n').filter(Boolean)) {
        const [kind, rest] = [line.split(' ')[0], line.slice(line.indexOf(' ') + 1)];
        if (kind === 'role') out += chunk({ role: 'assistant', content: '' });
        if (kind === 'ping') out += ': ping\n\n';
        if (kind === 'text') out += chunk({ content: rest });
        if (kind === 'fail') throw new ProviderStreamError(`failed: ${rest} sk-secret`, rest, rest === 'rate_limit_exceeded' ? 'rate_limit_error' : 'server_error');
        if (kind === 'stop') stopped = true;
      }
      return out;
    },
    end() {
      if (!stopped) throw new ProviderStreamError('cut', 'upstream_stream_truncated');
      return 'data: [DONE]\n\n';
    },
    usage: () => null,
    finishReason: () => null,
  };
}
const record = () => ({ firstByteMs: null, startedAt: performance.now() }) as unknown as UpstreamAttempt;

describe('carriesContent', () => {
  it('counts text, reasoning, tool calls, finishes, usage and [DONE]; not the role chunk or keep-alives', () => {
    expect(carriesContent('')).toBe(false);
    expect(carriesContent(chunk({ role: 'assistant', content: '' }) + ': ping\n\n')).toBe(false);
    expect(carriesContent(chunk({ content: 'hi' }))).toBe(true);
    expect(carriesContent(chunk({ reasoning_content: 'hmm' }))).toBe(true);
    expect(carriesContent(chunk({ role: 'assistant', tool_calls: [{ index: 0, id: 't', function: { name: 'f', arguments: '' } }] }))).toBe(true);
    expect(carriesContent(chunk({}, 'stop'))).toBe(true);
    expect(carriesContent('data: {"choices":[],"usage":{"prompt_tokens":1}}\n\n')).toBe(true);
    expect(carriesContent('data: [DONE]\n\n')).toBe(true);
  });
});

describe('awaitFirstContent', () => {
  it('holds the opening and resolves at the first content, the body paused with what follows', async () => {
    const body = new PassThrough();
    const first = awaitFirstContent(body, lines(), 60_000, record());
    body.write('role\nping\n');
    body.write('text hello\ntext more\n');
    body.write('text later\n');
    const result = await first;
    expect(result).toMatchObject({ kind: 'content', ended: false });
    expect(result.kind === 'content' && result.held).toBe(chunk({ role: 'assistant', content: '' }) + ': ping\n\n' + chunk({ content: 'hello' }) + chunk({ content: 'more' }));
    expect(body.isPaused()).toBe(true);
    expect(body.read()?.toString()).toBe('text later\n');
  });

  it('a failure before content rejects and destroys the body; a cut before content too', async () => {
    const body = new PassThrough();
    const first = awaitFirstContent(body, lines(), 60_000, record());
    body.write('role\nfail upstream_overloaded\n');
    expect(await first).toMatchObject({ kind: 'failed', error: { code: 'upstream_overloaded' } });
    expect(body.destroyed).toBe(true);
    const cut = new PassThrough();
    const second = awaitFirstContent(cut, lines(), 60_000, record());
    cut.end('role\n');
    expect(await second).toMatchObject({ kind: 'failed', error: { code: 'upstream_stream_truncated' } });
  });

  it('the hold ends on its clock with the opening alone; a stream done within it is whole', async () => {
    const body = new PassThrough();
    const first = awaitFirstContent(body, lines(), 20, record());
    body.write('role\n');
    expect(await first).toEqual({ kind: 'content', held: chunk({ role: 'assistant', content: '' }), ended: false });
    const whole = new PassThrough();
    const done = awaitFirstContent(whole, lines(), 60_000, record());
    whole.end('role\nstop\n');
    expect(await done).toEqual({ kind: 'content', held: chunk({ role: 'assistant', content: '' }) + 'data: [DONE]\n\n', ended: true });
  });
});

describe('rejectionOf', () => {
  it('overload is a 503 with Retry-After that falls back; rate limits 429; invalid requests and refused credentials do not fall back; secrets are scrubbed', () => {
    const overloaded = rejectionOf(new ProviderStreamError('Anthropic: Overloaded sk-secret', 'upstream_overloaded'), 'anthropic', "'claude'", ['sk-secret']);
    expect(overloaded).toMatchObject({ code: 'upstream_overloaded', retry: true, healthy: false, error: { status: 503, code: 'upstream_overloaded', message: 'Anthropic: Overloaded [redacted]' } });
    expect(overloaded.error.headers['retry-after']).toBe('1');
    expect(rejectionOf(new ProviderStreamError('slow', 'rate_limit_exceeded', 'rate_limit_error'), 'a', "'m'", [])).toMatchObject({ retry: true, error: { status: 429 } });
    expect(rejectionOf(new ProviderStreamError('bad', 'invalid_request_error', 'invalid_request_error'), 'a', "'m'", [])).toMatchObject({ retry: false, healthy: true, error: { status: 400 } });
    expect(rejectionOf(new ProviderStreamError('no', 'upstream_auth_failed'), 'a', "'m'", [])).toMatchObject({ retry: false, healthy: null, error: { status: 502, code: 'upstream_auth_failed' } });
    expect(rejectionOf(new ProviderStreamError('cut', 'upstream_stream_truncated'), 'a', "'m'", [])).toMatchObject({ retry: true, error: { status: 502 } });
    expect(rejectionOf(Object.assign(new Error('idle'), { code: 'UND_ERR_BODY_TIMEOUT' }), 'a', "'m'", [])).toMatchObject({ retry: true, code: 'UND_ERR_BODY_TIMEOUT', error: { status: 504, code: 'upstream_timeout' } });
  });
});
