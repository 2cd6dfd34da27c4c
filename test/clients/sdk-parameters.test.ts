// Every request parameter the installed `openai` package declares is known to service-test. The
// names are read from the package's type declarations, so an SDK upgrade that adds a parameter
// fails here until service-test accepts it (validated, or accepted and ignored as documented in
// docs/service-test.md). Each is sent as null (JSON) or an empty field (multipart): whatever else
// the answer says about the value, it must not be `unknown_parameter`.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { raw } from '../helpers/gateway.ts';
import { png, shortWav, startClientWorld, type ClientWorld } from './setup.ts';

// The package's main entry sits at its root, next to resources/ (package.json is not exported).
const resources = path.join(path.dirname(createRequire(import.meta.url).resolve('openai')), 'resources');

/** Top-level property names of `export interface <name>` in one of the SDK's .d.ts files. */
export function declaredParameters(file: string, name: string): string[] {
  const text = readFileSync(path.join(resources, file), 'utf8');
  const start = text.search(new RegExp(`export interface ${name}\\b[^{]*\\{`));
  if (start === -1) throw new Error(`${name} not found in ${file}: the SDK's layout changed`);
  const names: string[] = [];
  let depth = 1;
  let inComment = false;
  for (const line of text.slice(text.indexOf('{', start) + 1).split('\n')) {
    const trimmed = line.trim();
    if (trimmed.startsWith('/*')) inComment = true;
    if (inComment) {
      if (trimmed.includes('*/')) inComment = false;
      continue;
    }
    const property = depth === 1 ? /^(?:readonly\s+)?'?([A-Za-z_$][\w$]*)'?\??\s*:/.exec(trimmed) : null;
    if (property) names.push(property[1]);
    for (const c of trimmed) depth += c === '{' ? 1 : c === '}' ? -1 : 0;
    if (depth <= 0) break;
  }
  if (names.length < 2) throw new Error(`${name}: too few properties read (${names}); the parser needs a look`);
  return names;
}

let world: ClientWorld;
beforeAll(async () => {
  world = await startClientWorld();
});
afterAll(() => world?.stop());

interface JsonEndpoint {
  path: string;
  file: string;
  type: string;
  body: Record<string, unknown>;
}

const JSON_ENDPOINTS: JsonEndpoint[] = [
  { path: '/v1/chat/completions', file: 'chat/completions/completions.d.ts', type: 'ChatCompletionCreateParamsBase', body: { model: 'service-test', messages: [{ role: 'user', content: 'hi' }] } },
  { path: '/v1/responses', file: 'responses/responses.d.ts', type: 'ResponseCreateParamsBase', body: { model: 'service-test', input: 'hi' } },
  { path: '/v1/responses/input_tokens', file: 'responses/input-tokens.d.ts', type: 'InputTokenCountParams', body: { model: 'service-test', input: 'hi' } },
  { path: '/v1/completions', file: 'completions.d.ts', type: 'CompletionCreateParamsBase', body: { model: 'service-test', prompt: 'hi' } },
  { path: '/v1/embeddings', file: 'embeddings.d.ts', type: 'EmbeddingCreateParams', body: { model: 'service-test', input: 'hi' } },
  { path: '/v1/images/generations', file: 'images.d.ts', type: 'ImageGenerateParamsBase', body: { model: 'service-test', prompt: 'a dot', size: '16x16' } },
  { path: '/v1/audio/speech', file: 'audio/speech.d.ts', type: 'SpeechCreateParams', body: { model: 'service-test', input: 'hi', voice: 'alloy' } },
  { path: '/v1/moderations', file: 'moderations.d.ts', type: 'ModerationCreateParams', body: { model: 'service-test', input: 'hi' } },
];

interface FormEndpoint {
  path: string;
  file: string;
  type: string;
  fields: Record<string, string>;
  files: Record<string, [Buffer, string, string]>;
}

const FORM_ENDPOINTS: FormEndpoint[] = [
  { path: '/v1/images/edits', file: 'images.d.ts', type: 'ImageEditParamsBase', fields: { model: 'service-test', prompt: 'a dot', size: '16x16' }, files: { image: [png(16, 16), 'a.png', 'image/png'] } },
  { path: '/v1/images/variations', file: 'images.d.ts', type: 'ImageCreateVariationParams', fields: { model: 'service-test', size: '256x256' }, files: { image: [png(16, 16), 'a.png', 'image/png'] } },
  { path: '/v1/audio/transcriptions', file: 'audio/transcriptions.d.ts', type: 'TranscriptionCreateParamsBase', fields: { model: 'service-test' }, files: { file: [shortWav(), 'a.wav', 'audio/wav'] } },
  { path: '/v1/audio/translations', file: 'audio/translations.d.ts', type: 'TranslationCreateParams', fields: { model: 'service-test' }, files: { file: [shortWav(), 'a.wav', 'audio/wav'] } },
];

function form(fields: Record<string, string>, files: FormEndpoint['files']): FormData {
  const data = new FormData();
  for (const [name, value] of Object.entries(fields)) data.append(name, value);
  for (const [name, [bytes, filename, type]] of Object.entries(files)) data.append(name, new Blob([new Uint8Array(bytes)], { type }), filename);
  return data;
}

describe('every parameter of the installed openai SDK is known to service-test', () => {
  for (const endpoint of JSON_ENDPOINTS) {
    it(`${endpoint.path} (${endpoint.type})`, async () => {
      const baseline = await raw(world.gw, 'POST', endpoint.path, { key: world.freeKey, body: endpoint.body });
      expect(baseline.status, baseline.text).toBe(200);
      // The check can fail: a name the SDK does not declare is refused.
      const made_up = await raw(world.gw, 'POST', endpoint.path, { key: world.freeKey, body: { ...endpoint.body, not_an_sdk_parameter: null } });
      expect(made_up.json?.error?.code).toBe('unknown_parameter');
      const unknown: string[] = [];
      for (const name of declaredParameters(endpoint.file, endpoint.type)) {
        if (name in endpoint.body) continue;
        const answer = await raw(world.gw, 'POST', endpoint.path, { key: world.freeKey, body: { ...endpoint.body, [name]: null } });
        if (answer.json?.error?.code === 'unknown_parameter') unknown.push(name);
      }
      expect(unknown, `parameters of ${endpoint.type} that service-test calls unknown`).toEqual([]);
    });
  }

  for (const endpoint of FORM_ENDPOINTS) {
    it(`${endpoint.path} (${endpoint.type}, multipart)`, async () => {
      const baseline = await raw(world.gw, 'POST', endpoint.path, { key: world.freeKey, body: form(endpoint.fields, endpoint.files) });
      expect(baseline.status, baseline.text).toBe(200);
      const made_up = await raw(world.gw, 'POST', endpoint.path, { key: world.freeKey, body: form({ ...endpoint.fields, not_an_sdk_parameter: 'x' }, endpoint.files) });
      expect(made_up.json?.error?.code).toBe('unknown_parameter');
      const unknown: string[] = [];
      for (const name of declaredParameters(endpoint.file, endpoint.type)) {
        if (name in endpoint.fields || name in endpoint.files) continue;
        const answer = await raw(world.gw, 'POST', endpoint.path, { key: world.freeKey, body: form({ ...endpoint.fields, [name]: '' }, endpoint.files) });
        if (answer.json?.error?.code === 'unknown_parameter') unknown.push(name);
      }
      expect(unknown, `parameters of ${endpoint.type} that service-test calls unknown`).toEqual([]);
    });
  }
});
