// Claude on the fake Vertex AI is faithful when Anthropic's own Vertex client, @anthropic-ai/vertex-sdk,
// pointed at it with a Google access token, gets what it gets from Vertex: messages (JSON and streamed),
// tool calls, token counts, the API's errors as the SDK's classes, and Google's refusal of a bad token.
// Raw calls prove what the fake refuses as Vertex does (a `model` in the body, a wrong or missing
// anthropic_version).
import { AnthropicVertex } from '@anthropic-ai/vertex-sdk';
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic } from '../fakes/anthropic.ts';
import { startFakeGemini, type FakeGemini } from '../fakes/gemini.ts';

let claude: FakeAnthropic;
let vertex: FakeGemini;

/** The SDK as a platform team builds it, with the fake's token instead of Application Default Credentials. */
function client(token: string): AnthropicVertex {
  const authClient = { projectId: 'proj-1', getRequestHeaders: async () => new Headers({ authorization: `Bearer ${token}` }) };
  return new AnthropicVertex({ baseURL: `${vertex.url}/v1`, region: 'us-east5', projectId: 'proj-1', authClient: authClient as never, maxRetries: 0 });
}

beforeAll(async () => {
  claude = await startFakeAnthropic();
  vertex = await startFakeGemini({ claude });
});
afterAll(async () => {
  await vertex.close();
  await claude.close();
});

const weather = { name: 'get_weather', input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] } };

describe('Claude on the fake Vertex through @anthropic-ai/vertex-sdk', () => {
  it('answers a message on rawPredict, the model in the path and the version in the body', async () => {
    const message = await client(vertex.issueToken()).messages.create({ model: 'claude-sonnet-4-5@20250929', max_tokens: 100, messages: [{ role: 'user', content: 'hello from vertex' }] });
    expect(message.content).toEqual([{ type: 'text', text: 'You said: hello from vertex', citations: null }]);
    expect(message.model).toBe('claude-sonnet-4-5-20250929');
    const sent = vertex.requests.at(-1)!;
    expect(sent.path).toBe('/v1/projects/proj-1/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict');
    expect(sent.body.model).toBeUndefined();
    expect(sent.body.anthropic_version).toEqual(expect.any(String));
    expect(sent.headers['anthropic-version']).toBeUndefined();
  });

  it('streams on streamRawPredict, tool calls included, as the SDK accumulates them', async () => {
    const stream = client(vertex.issueToken()).messages.stream({ model: 'claude-haiku-4-5@20251001', max_tokens: 200, tools: [weather], messages: [{ role: 'user', content: 'get_weather for Oslo' }] });
    const message = await stream.finalMessage();
    expect(message.stop_reason).toBe('tool_use');
    expect(message.content.find((block) => block.type === 'tool_use')).toMatchObject({ name: 'get_weather', input: { city: 'get_weather for Oslo' } });
    expect(vertex.requests.at(-1)!.path).toMatch(/claude-haiku-4-5@20251001:streamRawPredict$/);
  });

  it('counts tokens on count-tokens:rawPredict', async () => {
    const counted = await client(vertex.issueToken()).messages.countTokens({ model: 'claude-sonnet-4-5@20250929', messages: [{ role: 'user', content: 'one two three' }] });
    expect(counted.input_tokens).toBe(3);
    expect(vertex.requests.at(-1)!.path).toBe('/v1/projects/proj-1/locations/us-east5/publishers/anthropic/models/count-tokens:rawPredict');
  });

  it("raises Anthropic's errors as the SDK's classes, and Google's refusal of a bad token", async () => {
    claude.next({ status: 529 });
    const overloaded = await client(vertex.issueToken()).messages.create({ model: 'claude-sonnet-4-5@20250929', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(overloaded).toBeInstanceOf(Anthropic.APIError);
    expect(overloaded.status).toBe(529);
    const unauthenticated = await client('ya29.not-issued').messages.create({ model: 'claude-sonnet-4-5@20250929', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(unauthenticated).toBeInstanceOf(Anthropic.AuthenticationError);
    expect(unauthenticated.error).toMatchObject({ error: { status: 'UNAUTHENTICATED' } });
    const unknown = await client(vertex.issueToken()).messages.create({ model: 'claude-nonexistent-9@20990101', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(unknown).toBeInstanceOf(Anthropic.NotFoundError);
  });
});

describe('what the fake Vertex refuses of Claude requests', () => {
  const path = '/v1/projects/proj-1/locations/global/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict';
  const post = (body: unknown, at = path) =>
    fetch(`${vertex.url}${at}`, { method: 'POST', headers: { authorization: `Bearer ${vertex.issueToken()}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const base = { max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] };

  it('a model in the body, a missing or foreign anthropic_version, a stream on rawPredict', async () => {
    const cases: Array<[unknown, string, string?]> = [
      [{ ...base, anthropic_version: 'vertex-2023-10-16', model: 'claude-sonnet-4-5' }, 'model: Extra inputs are not permitted'],
      [base, 'anthropic_version: Field required'],
      [{ ...base, anthropic_version: 'bedrock-2023-05-31' }, 'anthropic_version: Input should be'],
      [{ ...base, anthropic_version: 'vertex-2023-10-16', stream: true }, 'stream: true needs :streamRawPredict'],
    ];
    for (const [body, message] of cases) {
      const answer = await post(body);
      expect(answer.status).toBe(400);
      expect(await answer.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: expect.stringContaining(message) } });
    }
    const fine = await post({ ...base, anthropic_version: 'vertex-2023-10-16' });
    expect(fine.status).toBe(200);
  });
});
