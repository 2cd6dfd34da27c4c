// The shared golden requests (test/fixtures/providers/shared/<case>/<provider>-request.json) are
// requests each provider accepts: every one is put through the checks of that provider's fake
// (anthropic-validate.ts, gemini-validate.ts, bedrock-validate.ts), which hold the rules of the real
// APIs collected in providers.md §10.1. A golden file rewritten to something the provider would
// refuse fails here, not only in review.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { validate as validateAnthropic } from './anthropic-validate.ts';
import { validateConverse } from './bedrock-validate.ts';
import { validateGenerate } from './gemini-validate.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/providers/shared');
const targets = JSON.parse(readFileSync(path.join(ROOT, 'targets.json'), 'utf8')) as Record<string, { model: string }>;
const cases = readdirSync(ROOT).filter((name) => statSync(path.join(ROOT, name)).isDirectory()).sort();
const read = (dir: string, provider: string) => JSON.parse(readFileSync(path.join(ROOT, dir, `${provider}-request.json`), 'utf8')) as { path: string; body: Record<string, unknown> };

const anthropicOptions = { models: [targets.anthropic!.model], exclusiveSampling: () => true, userFirst: true, signingKey: 'golden' };

describe('the shared golden requests are accepted by the strict fakes', () => {
  for (const name of cases) {
    it(`${name}: Anthropic, Gemini, Vertex AI and Bedrock accept their requests`, () => {
      expect(() => validateAnthropic(read(name, 'anthropic').body, anthropicOptions)).not.toThrow();
      expect(read(name, 'anthropic').body.model).toBe(targets.anthropic!.model);
      expect(() => validateGenerate(read(name, 'gemini').body, { vertex: false, model: targets.gemini!.model, signatures: new Set() })).not.toThrow();
      expect(() => validateGenerate(read(name, 'vertex').body, { vertex: true, model: targets.vertex!.model, signatures: new Set() })).not.toThrow();
      const bedrock = read(name, 'bedrock');
      expect(bedrock.path).toBe(`/model/${encodeURIComponent(targets.bedrock!.model)}/converse`);
      expect(() => validateConverse(bedrock.body, targets.bedrock!.model)).not.toThrow();
    });
  }

  it('would refuse a request that breaks their rules (the checks are live)', () => {
    const tools = read('tools-history', 'gemini').body as { contents: Array<{ parts: unknown[] }> };
    tools.contents[2]!.parts.pop(); // one function response for two calls
    expect(() => validateGenerate(tools, { vertex: false, model: targets.gemini!.model, signatures: new Set() })).toThrow(/function response parts/);
    const vertex = read('tools-history', 'gemini').body; // AI Studio's ids on function calls
    expect(() => validateGenerate(vertex, { vertex: true, model: targets.vertex!.model, signatures: new Set() })).toThrow(/\bid\b/);
    const anthropic = read('text-system', 'anthropic').body;
    delete anthropic.max_tokens;
    expect(() => validateAnthropic(anthropic, anthropicOptions)).toThrow(/max_tokens/);
    const bedrock = read('tools-history', 'bedrock').body as { toolConfig?: unknown };
    delete bedrock.toolConfig;
    expect(() => validateConverse(bedrock, targets.bedrock!.model)).toThrow(/toolConfig field must be defined/);
  });
});
