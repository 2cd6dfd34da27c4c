import type { Upstream } from '@tollgate/crds';
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../http/errors.ts';
import { chatRequest, PLACEHOLDER_TOOL } from './request.ts';

const CLAUDE = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
const LLAMA = 'meta.llama3-3-70b-instruct-v1:0';

function upstream(extra: Partial<Upstream['spec']> = {}): Upstream {
  return { apiVersion: 'tollgate.dev/v1alpha1', kind: 'Upstream', metadata: { name: 'aws' }, spec: { provider: 'bedrock', bedrock: { region: 'us-east-1' }, ...extra } } as Upstream;
}

function converse(body: Record<string, unknown>, model = CLAUDE, extra: Partial<Upstream['spec']> = {}, stream = false) {
  const request = chatRequest(body, { model, upstream: upstream(extra) }, stream);
  return { request, json: JSON.parse(request.body) };
}

function refusal(fn: () => unknown): ApiError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
  throw new Error('expected an ApiError');
}

const user = (content: unknown) => ({ role: 'user', content });

describe('chatRequest: path and envelope', () => {
  it('encodes the model id once on the wire (`:` → %3A, ARN `/` → %2F) and picks the operation', () => {
    expect(converse({ messages: [user('hi')] }).request.path).toBe('/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse');
    const arn = 'arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-5-sonnet-20241022-v2:0';
    expect(converse({ messages: [user('hi')] }, arn, {}, true).request.path).toBe(
      '/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fus.anthropic.claude-3-5-sonnet-20241022-v2%3A0/converse-stream',
    );
  });

  it('maps system and developer to system blocks and inference settings to inferenceConfig', () => {
    const { json } = converse({
      messages: [{ role: 'system', content: 'Be brief.' }, { role: 'developer', content: [{ type: 'text', text: 'No emoji.' }] }, user('hi')],
      max_completion_tokens: 100,
      temperature: 0.5,
      top_p: 0.9,
      stop: ['END', ''],
    });
    expect(json.system).toEqual([{ text: 'Be brief.' }, { text: 'No emoji.' }]);
    expect(json.inferenceConfig).toEqual({ maxTokens: 100, temperature: 0.5, topP: 0.9, stopSequences: ['END'] });
    expect(json.messages).toEqual([{ role: 'user', content: [{ text: 'hi' }] }]);
  });
});

describe('chatRequest: history', () => {
  it('merges tool results and the following user words into one user turn; toolUse input is an object', () => {
    const { json } = converse({
      messages: [
        user('weather in Paris and Rome?'),
        { role: 'assistant', content: '', tool_calls: [
          { id: 'tooluse_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
          { id: 'tooluse_2', type: 'function', function: { name: 'get_weather', arguments: '"Rome"' } },
        ] },
        { role: 'tool', tool_call_id: 'tooluse_1', content: 'sunny' },
        { role: 'tool', tool_call_id: 'tooluse_2', content: '' },
        user('thanks'),
      ],
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }],
    });
    expect(json.messages).toEqual([
      { role: 'user', content: [{ text: 'weather in Paris and Rome?' }] },
      { role: 'assistant', content: [
        { toolUse: { toolUseId: 'tooluse_1', name: 'get_weather', input: { city: 'Paris' } } },
        { toolUse: { toolUseId: 'tooluse_2', name: 'get_weather', input: {} } },
      ] },
      { role: 'user', content: [
        { toolResult: { toolUseId: 'tooluse_1', content: [{ text: 'sunny' }] } },
        { toolResult: { toolUseId: 'tooluse_2', content: [{ text: '(empty)' }] } },
        { text: 'thanks' },
      ] },
    ]);
  });

  it('merges same-role neighbours, drops empty turns and starts with a user turn', () => {
    const { json } = converse({ messages: [{ role: 'assistant', content: 'Hello!' }, { role: 'assistant', content: null }, user('a'), user('   '), user('b')] });
    expect(json.messages).toEqual([
      { role: 'user', content: [{ text: '(empty)' }] },
      { role: 'assistant', content: [{ text: 'Hello!' }] },
      { role: 'user', content: [{ text: 'a' }, { text: 'b' }] },
    ]);
  });

  it('adds a placeholder tool when the history has tool blocks and the client sent no tools', () => {
    const { json } = converse({ messages: [user('x'), { role: 'assistant', tool_calls: [{ id: 't1', type: 'function', function: { name: 'f', arguments: '{}' } }] }, { role: 'tool', tool_call_id: 't1', content: 'ok' }] });
    expect(json.toolConfig.tools.map((t: any) => t.toolSpec.name)).toEqual([PLACEHOLDER_TOOL]);
    const forced = converse({ messages: [user('x'), { role: 'assistant', tool_calls: [{ id: 't1', type: 'function', function: { name: 'f', arguments: '{}' } }] }, { role: 'tool', tool_call_id: 't1', content: 'ok' }], tool_choice: 'required' });
    expect(forced.json.toolConfig.toolChoice).toBeUndefined();
  });

  it('sends data-URL images as bytes and refuses a remote image URL naming the part', () => {
    const { json } = converse({ messages: [user([{ type: 'text', text: 'what is it?' }, { type: 'image_url', image_url: { url: 'data:image/jpg;base64,AAAA' } }])] });
    expect(json.messages[0].content[1]).toEqual({ image: { format: 'jpeg', source: { bytes: 'AAAA' } } });
    const error = refusal(() => converse({ messages: [user([{ type: 'image_url', image_url: { url: 'https://example.com/cat.png' } }])] }));
    expect(error).toMatchObject({ status: 400, param: 'messages[0].content[0].image_url.url' });
    expect(error.message).toMatch(/remote URL/);
  });
});

describe('chatRequest: tools', () => {
  it('sanitises tool names everywhere, deterministically', () => {
    const body = {
      messages: [user('x'), { role: 'assistant', tool_calls: [{ id: 't1', type: 'function', function: { name: 'github.create_issue', arguments: '{}' } }] }, { role: 'tool', tool_call_id: 't1', content: 'ok' }],
      tools: [{ type: 'function', function: { name: 'github.create_issue', description: 'Open an issue' } }],
      tool_choice: { type: 'function', function: { name: 'github.create_issue' } },
    };
    const { json } = converse(body);
    const name = json.toolConfig.tools[0].toolSpec.name;
    expect(name).toMatch(/^github_create_issue_[0-9a-f]{10}$/);
    expect(json.messages[1].content[0].toolUse.name).toBe(name);
    expect(json.toolConfig.toolChoice).toEqual({ tool: { name } });
    expect(converse(body).json.toolConfig.tools[0].toolSpec.name).toBe(name);
    expect(converse({ messages: [user('x')], tools: [{ type: 'function', function: { name: 'x'.repeat(80) } }] }).json.toolConfig.tools[0].toolSpec.name).toHaveLength(64);
  });

  it('maps tool_choice auto/required, and refuses a named choice on models without it', () => {
    const tools = [{ type: 'function', function: { name: 'f' } }];
    expect(converse({ messages: [user('x')], tools, tool_choice: 'auto' }).json.toolConfig.toolChoice).toEqual({ auto: {} });
    expect(converse({ messages: [user('x')], tools, tool_choice: 'required' }).json.toolConfig.toolChoice).toEqual({ any: {} });
    expect(converse({ messages: [user('x')], tools }).json.toolConfig).toEqual({ tools: [{ toolSpec: { name: 'f', inputSchema: { json: { type: 'object', properties: {} } } } }] });
    expect(refusal(() => converse({ messages: [user('x')], tools, tool_choice: { type: 'function', function: { name: 'f' } } }, LLAMA))).toMatchObject({ param: 'tool_choice' });
  });

  it("tool_choice 'none' leaves the tools out without tool history, and is refused with it", () => {
    const tools = [{ type: 'function', function: { name: 'f' } }];
    expect(converse({ messages: [user('x')], tools, tool_choice: 'none' }).json.toolConfig).toBeUndefined();
    const history = [user('x'), { role: 'assistant', tool_calls: [{ id: 't1', type: 'function', function: { name: 'f', arguments: '{}' } }] }, { role: 'tool', tool_call_id: 't1', content: 'ok' }];
    expect(refusal(() => converse({ messages: history, tools, tool_choice: 'none' }))).toMatchObject({ status: 400, param: 'tool_choice' });
  });
});

describe('chatRequest: parameters without an equivalent', () => {
  it.each([
    ['n', { n: 2 }],
    ['seed', { seed: 7 }],
    ['presence_penalty', { presence_penalty: 0.5 }],
    ['frequency_penalty', { frequency_penalty: 0.5 }],
    ['logprobs', { logprobs: true }],
    ['logit_bias', { logit_bias: { '50256': -100 } }],
  ])('refuses %s naming it, and drops it with dropUnsupportedParams', (param, extra) => {
    expect(refusal(() => converse({ messages: [user('x')], ...extra }))).toMatchObject({ status: 400, code: 'unsupported_parameter', param });
    const { json } = converse({ messages: [user('x')], ...extra }, CLAUDE, { dropUnsupportedParams: true });
    expect(Object.keys(json)).toEqual(['messages']);
  });

  it('refuses temperature above 1 even when dropping', () => {
    expect(refusal(() => converse({ messages: [user('x')], temperature: 1.5 }, CLAUDE, { dropUnsupportedParams: true }))).toMatchObject({ param: 'temperature' });
  });
});

describe('chatRequest: structured output and reasoning', () => {
  it('sends response_format as outputConfig.textFormat with the schema as JSON text', () => {
    const schema = { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] };
    const { json } = converse({ messages: [user('x')], response_format: { type: 'json_schema', json_schema: { name: 'reply', schema } } });
    expect(json.outputConfig).toEqual({ textFormat: { type: 'json_schema', structure: { jsonSchema: { schema: JSON.stringify(schema), name: 'reply' } } } });
    expect(JSON.parse(converse({ messages: [user('x')], response_format: { type: 'json_object' } }).json.outputConfig.textFormat.structure.jsonSchema.schema)).toEqual({ type: 'object' });
  });

  it('maps reasoning_effort to Claude thinking and leaves room for the answer', () => {
    const { json } = converse({ messages: [user('x')], reasoning_effort: 'medium' });
    expect(json.additionalModelRequestFields).toEqual({ thinking: { type: 'enabled', budget_tokens: 8192 } });
    expect(json.inferenceConfig.maxTokens).toBeGreaterThan(8192);
    // Within the client's max_tokens, thinking takes at most three quarters of it (as on Anthropic's API).
    expect(converse({ messages: [user('x')], reasoning_effort: 'high', max_tokens: 2000 }).json.additionalModelRequestFields.thinking.budget_tokens).toBe(1500);
    expect(refusal(() => converse({ messages: [user('x')], reasoning_effort: 'high', max_tokens: 1000 }))).toMatchObject({ param: 'reasoning_effort' });
    expect(refusal(() => converse({ messages: [user('x')], reasoning_effort: 'low' }, LLAMA))).toMatchObject({ param: 'reasoning_effort' });
    const loop = [user('x'), { role: 'assistant', tool_calls: [{ id: 't1', type: 'function', function: { name: 'f', arguments: '{}' } }] }, { role: 'tool', tool_call_id: 't1', content: 'ok' }];
    expect(converse({ messages: loop, tools: [{ type: 'function', function: { name: 'f' } }], reasoning_effort: 'medium' }).json.additionalModelRequestFields).toBeUndefined();
  });
});
