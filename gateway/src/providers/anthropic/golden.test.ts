// Golden fixtures (test/fixtures/providers/anthropic/<case>/): an OpenAI request (client.json) and
// the Anthropic request it becomes (upstream-request.json); recorded Anthropic answers
// (upstream-response.json / .sse) and the OpenAI answers they become (expected.json / .sse). Streams
// are fed whole, split in two at every byte position, and byte by byte: the output must not change.
// `UPDATE_GOLDEN=1` rewrites the expected files (review the diff before committing it).
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Upstream } from '@tollgate/crds';
import { describe, expect, it } from 'vitest';
import type { AnswerContext } from '../provider.ts';
import { anthropic } from './index.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../../test/fixtures/providers/anthropic');
const UPDATE = process.env.UPDATE_GOLDEN === '1';
const { translation } = anthropic;

function upstream(drop = false): Upstream {
  return { apiVersion: 'tollgate.dev/v1alpha1', kind: 'Upstream', metadata: { name: 'claude' }, spec: { provider: 'anthropic', credentials: { env: 'ANTHROPIC_KEY' }, ...(drop ? { dropUnsupportedParams: true } : {}) } } as Upstream;
}

function golden(file: string, actual: string): void {
  if (UPDATE || !existsSync(file)) {
    if (!UPDATE) throw new Error(`missing golden file ${file} (run with UPDATE_GOLDEN=1)`);
    writeFileSync(file, actual);
    return;
  }
  expect(actual).toBe(readFileSync(file, 'utf8'));
}

const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;

function feed(ctx: AnswerContext, pieces: Buffer[]): string {
  const stream = translation.chatStream(ctx);
  let out = '';
  for (const piece of pieces) out += stream.feed(piece);
  return out + stream.end();
}

for (const name of readdirSync(ROOT)) {
  const dir = path.join(ROOT, name);
  const read = (file: string) => JSON.parse(readFileSync(path.join(dir, file), 'utf8'));
  const client = read('client.json');
  const target = existsSync(path.join(dir, 'target.json')) ? read('target.json') : {};
  const model = target.model ?? 'claude-sonnet-4-6';
  const ctx: AnswerContext = {
    publicModel: client.model,
    providerModel: model,
    requestId: 'req-golden',
    created: 1_700_000_000,
    includeUsage: client.stream_options?.include_usage === true,
    responseHeaders: {},
  };

  describe(`anthropic golden: ${name}`, () => {
    it('builds the Anthropic request', () => {
      const request = translation.chatRequest(client, { model, upstream: upstream(target.drop) }, client.stream === true);
      golden(path.join(dir, 'upstream-request.json'), json({ method: request.method, path: request.path, headers: request.headers, body: JSON.parse(request.body) }));
    });

    if (existsSync(path.join(dir, 'upstream-response.json'))) {
      it('translates the whole answer', () => {
        golden(path.join(dir, 'expected.json'), json(translation.chatResponse(read('upstream-response.json'), ctx)));
      });
    }

    if (existsSync(path.join(dir, 'upstream-response.sse'))) {
      it('translates the stream, whatever the split', () => {
        const bytes = readFileSync(path.join(dir, 'upstream-response.sse'));
        const whole = feed(ctx, [bytes]);
        golden(path.join(dir, 'expected.sse'), whole);
        for (let at = 1; at < bytes.length; at++) expect(feed(ctx, [bytes.subarray(0, at), bytes.subarray(at)])).toBe(whole);
        expect(feed(ctx, [...bytes].map((byte) => Buffer.from([byte])))).toBe(whole);
      });
    }
  });
}
