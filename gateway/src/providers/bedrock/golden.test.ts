// Golden fixtures (test/fixtures/providers/bedrock/<case>/): an OpenAI request (client.json) → the
// Converse request the gateway sends (upstream-request.json); a Converse answer → the OpenAI answer
// (expected.json); a ConverseStream (upstream-response.bin, framed by scripts/bedrock-fixture.ts from
// the readable upstream-events.json with @smithy/eventstream-codec) → the OpenAI SSE (expected.sse),
// and, when the stream fails, the in-band error the client is sent (expected-error.json). Streams are
// fed whole, split in two at every byte position and one byte at a time: the output must not change.
// The expected files were checked by hand against providers.md §1.3, §2, §3.4 and §4.3; a change to
// the mapping shows up as a diff here. `UPDATE_GOLDEN=1` rewrites them (review the diff).
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import type { Upstream } from '@tollgate/crds';
import { describe, expect, it } from 'vitest';
import { encodeEvents, type FixtureEvents } from '../../../../scripts/bedrock-fixture.ts';
import { ProviderStreamError, type AnswerContext } from '../provider.ts';
import { chatRequest } from './request.ts';
import { chatResponse } from './response.ts';
import { ConverseStreamTranslator } from './stream.ts';

const DIR = new URL('../../../../test/fixtures/providers/bedrock/', import.meta.url);
const UPDATE = process.env.UPDATE_GOLDEN === '1';
const MODEL = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
const upstream = { apiVersion: 'tollgate.dev/v1alpha1', kind: 'Upstream', metadata: { name: 'aws' }, spec: { provider: 'bedrock', bedrock: { region: 'us-east-1' } } } as Upstream;
const json = (path: URL) => JSON.parse(readFileSync(path, 'utf8'));

function golden(file: URL, actual: string): void {
  if (UPDATE) writeFileSync(file, actual);
  if (!existsSync(file)) throw new Error(`missing golden file ${file.pathname} (write it with UPDATE_GOLDEN=1, then review it)`);
  expect(actual).toBe(readFileSync(file, 'utf8'));
}

/** Feeds the parts in order: the SSE text the client got, and the stream's failure if it failed. */
function run(parts: Buffer[], ctx: AnswerContext): { out: string; error: ProviderStreamError | null } {
  const translator = new ConverseStreamTranslator(ctx);
  let out = '';
  try {
    for (const part of parts) out += translator.feed(part);
    out += translator.end();
    return { out, error: null };
  } catch (error) {
    if (!(error instanceof ProviderStreamError)) throw error;
    return { out, error };
  }
}

const describeError = (error: ProviderStreamError | null) => (error ? { message: error.message, code: error.code, type: error.type } : null);

describe('Bedrock golden fixtures', () => {
  for (const name of readdirSync(DIR).sort()) {
    const at = (file: string) => new URL(`${name}/${file}`, DIR);
    const client = existsSync(at('client.json')) ? json(at('client.json')) : null;

    if (client) {
      it(`${name}: client.json → upstream-request.json`, () => {
        const request = chatRequest(structuredClone(client), { model: MODEL, upstream }, client.stream === true);
        golden(at('upstream-request.json'), `${JSON.stringify({ path: request.path, headers: request.headers, body: JSON.parse(request.body) }, null, 2)}\n`);
      });
    }

    if (existsSync(at('upstream-response.json'))) {
      it(`${name}: upstream-response.json → expected.json`, () => {
        const answer = chatResponse(json(at('upstream-response.json')), { publicModel: client?.model ?? 'claude', providerModel: MODEL, requestId: 'gw-1', created: 1_700_000_000, includeUsage: false, responseHeaders: { 'x-amzn-requestid': 'b1c2d3' } });
        golden(at('expected.json'), `${JSON.stringify(answer, null, 2)}\n`);
        expect(answer.usage!.prompt_tokens + answer.usage!.completion_tokens).toBe(answer.usage!.total_tokens);
      });
    }

    if (existsSync(at('upstream-response.bin'))) {
      const ctx: AnswerContext = {
        publicModel: client?.model ?? 'claude-tools',
        providerModel: MODEL,
        requestId: 'req-1',
        created: 1_700_000_000,
        includeUsage: client ? client.stream_options?.include_usage === true : true,
        responseHeaders: { 'x-amzn-requestid': 'amzn-req-42' },
      };
      const bytes = readFileSync(at('upstream-response.bin'));

      it(`${name}: upstream-response.bin holds the frames of upstream-events.json`, () => {
        expect(Buffer.compare(encodeEvents(json(at('upstream-events.json')) as FixtureEvents), bytes), 'rerun node scripts/bedrock-fixture.ts').toBe(0);
      });

      it(`${name}: upstream-response.bin → expected.sse${existsSync(at('expected-error.json')) ? ' and the error of expected-error.json' : ''}, whatever the splits`, () => {
        const whole = run([bytes], ctx);
        golden(at('expected.sse'), whole.out);
        if (whole.error || existsSync(at('expected-error.json'))) golden(at('expected-error.json'), `${JSON.stringify(describeError(whole.error), null, 2)}\n`);
        // A failed stream never reached [DONE]; a good one ends with it.
        expect(whole.out.endsWith('data: [DONE]\n\n')).toBe(whole.error === null);
        for (let cut = 0; cut <= bytes.length; cut++) {
          const split = run([bytes.subarray(0, cut), bytes.subarray(cut)], ctx);
          expect(split.out, `split at byte ${cut}`).toBe(whole.out);
          expect(describeError(split.error), `split at byte ${cut}`).toEqual(describeError(whole.error));
        }
        const bytewise = run([...bytes].map((byte) => Buffer.from([byte])), ctx);
        expect(bytewise.out).toBe(whole.out);
        expect(describeError(bytewise.error)).toEqual(describeError(whole.error));
      });
    }
  }
});
