// Golden fixtures (test/fixtures/providers/bedrock/<case>/): an OpenAI request → the Converse request
// the gateway sends; a Converse answer → the OpenAI answer. The expected files were checked by hand
// against providers.md §1.3 and §2; a change to the mapping shows up as a diff here.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import type { Upstream } from '@tollgate/crds';
import { describe, expect, it } from 'vitest';
import { chatRequest } from './request.ts';
import { chatResponse } from './response.ts';

const DIR = new URL('../../../../test/fixtures/providers/bedrock/', import.meta.url);
const upstream = { apiVersion: 'tollgate.dev/v1alpha1', kind: 'Upstream', metadata: { name: 'aws' }, spec: { provider: 'bedrock', bedrock: { region: 'us-east-1' } } } as Upstream;
const json = (path: URL) => JSON.parse(readFileSync(path, 'utf8'));

describe('Bedrock golden fixtures', () => {
  for (const name of readdirSync(DIR)) {
    const at = (file: string) => new URL(`${name}/${file}`, DIR);
    if (existsSync(at('client.json'))) {
      it(`${name}: client.json → upstream-request.json`, () => {
        const request = chatRequest(json(at('client.json')), { model: 'us.anthropic.claude-sonnet-4-5-20250929-v1:0', upstream }, false);
        expect({ path: request.path, headers: request.headers, body: JSON.parse(request.body) }).toEqual(json(at('upstream-request.json')));
      });
    }
    if (existsSync(at('upstream-response.json'))) {
      it(`${name}: upstream-response.json → expected.json`, () => {
        const answer = chatResponse(json(at('upstream-response.json')), { publicModel: 'claude', providerModel: 'x', requestId: 'gw-1', created: 1_700_000_000, includeUsage: false, responseHeaders: { 'x-amzn-requestid': 'b1c2d3' } });
        expect(answer).toEqual(json(at('expected.json')));
      });
    }
  }
});
