// Golden fixtures (test/fixtures/providers/gemini/<case>/): an OpenAI request fanned out to the
// Gemini request it becomes, and Gemini answers (whole and streamed) fanned in to the OpenAI answer.
// Streams are fed split at every byte position, and one byte at a time: the output must not depend
// on where the network cut the body. `UPDATE_GOLDEN=1` rewrites the expected files (review the diff).
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Upstream } from '@tollgate/crds';
import { describe, expect, it } from 'vitest';
import { ProviderStreamError, type AnswerContext } from '../provider.ts';
import { gemini, vertex } from './index.ts';

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../../../test/fixtures/providers/gemini');
const UPDATE = process.env.UPDATE_GOLDEN === '1';
const cases = readdirSync(ROOT).sort();

function upstream(provider: 'gemini' | 'vertex'): Upstream {
  return {
    apiVersion: 'tollgate.dev/v1alpha1',
    kind: 'Upstream',
    metadata: { name: `golden-${provider}` },
    spec: { provider, ...(provider === 'vertex' ? { vertex: { project: 'proj-1', location: 'us-central1' } } : {}) },
  } as Upstream;
}

function answerContext(includeUsage: boolean): AnswerContext {
  return { publicModel: 'public-model', providerModel: 'gemini-x', requestId: 'req123', created: 1_700_000_000, includeUsage, responseHeaders: {} };
}

function read(dir: string, name: string): string {
  return readFileSync(path.join(ROOT, dir, name), 'utf8');
}

function golden(dir: string, name: string, actual: string): void {
  const file = path.join(ROOT, dir, name);
  if (UPDATE || !existsSync(file)) writeFileSync(file, actual);
  expect(actual).toBe(readFileSync(file, 'utf8'));
}

/** Feeds the parts in order; the text out and the stream error, if one was raised. */
function run(parts: Buffer[], includeUsage: boolean): { out: string; error: ProviderStreamError | null } {
  const translator = gemini.translation.chatStream(answerContext(includeUsage));
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

describe('gemini golden fixtures', () => {
  for (const dir of cases.filter((name) => name.startsWith('request-'))) {
    it(`${dir}: the request Gemini is sent`, () => {
      const setup = JSON.parse(read(dir, 'case.json')) as { surface: 'gemini' | 'vertex'; model: string; stream: boolean };
      const module = setup.surface === 'gemini' ? gemini : vertex;
      const request = module.translation.chatRequest(JSON.parse(read(dir, 'client.json')), { model: setup.model, upstream: upstream(setup.surface) }, setup.stream);
      golden(dir, 'upstream-request.json', `${JSON.stringify({ ...request, body: JSON.parse(request.body) }, null, 2)}\n`);
    });
  }

  for (const dir of cases.filter((name) => name.startsWith('response-'))) {
    it(`${dir}: the answer the client gets`, () => {
      const answer = gemini.translation.chatResponse(JSON.parse(read(dir, 'upstream-response.json')), answerContext(false));
      golden(dir, 'expected.json', `${JSON.stringify(answer, null, 2)}\n`);
      const usage = answer.usage!;
      expect(usage.prompt_tokens + usage.completion_tokens).toBe(usage.total_tokens);
    });
  }

  for (const dir of cases.filter((name) => name.startsWith('stream-'))) {
    it(`${dir}: the stream the client gets, whatever the splits`, () => {
      const { includeUsage } = JSON.parse(read(dir, 'case.json')) as { includeUsage: boolean };
      const bytes = Buffer.from(read(dir, 'upstream-response.sse'));
      const whole = run([bytes], includeUsage);
      golden(dir, 'expected.sse', whole.out);
      if (whole.error || existsSync(path.join(ROOT, dir, 'expected-error.json'))) {
        golden(dir, 'expected-error.json', `${JSON.stringify({ message: whole.error?.message, code: whole.error?.code, type: whole.error?.type }, null, 2)}\n`);
      }
      for (let at = 0; at <= bytes.length; at++) {
        const split = run([bytes.subarray(0, at), bytes.subarray(at)], includeUsage);
        expect(split.out, `split at byte ${at}`).toBe(whole.out);
        expect(split.error?.message, `split at byte ${at}`).toBe(whole.error?.message);
      }
      const bytewise = run([...bytes].map((byte) => Buffer.from([byte])), includeUsage);
      expect(bytewise.out).toBe(whole.out);
      expect(bytewise.error?.message).toBe(whole.error?.message);
    });
  }
});
