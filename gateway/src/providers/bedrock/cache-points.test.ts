// Where cache markers on a chat request put Converse's cache points: right after the block they mark,
// never first, never twice in a row, never inside a tool result, and only for models that cache. The
// Messages dialect's markers (top-level, assistant turns) take the same path.
import type { Upstream } from '@tollgate/crds';
import { describe, expect, it } from 'vitest';
import { messagesToChat } from '../../dialects/anthropic/request.ts';
import { forOpenAICompatible } from '../cache-markers.ts';
import { chatRequest } from './request.ts';

const CLAUDE = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
const NOVA = 'us.amazon.nova-pro-v1:0';
const MISTRAL = 'mistral.mistral-large-2407-v1:0';
const MARK = { type: 'ephemeral' };
const POINT = { cachePoint: { type: 'default' } };
const upstream = { apiVersion: 'tollgate.dev/v1alpha1', kind: 'Upstream', metadata: { name: 'aws' }, spec: { provider: 'bedrock', bedrock: { region: 'us-east-1' } } } as Upstream;

const converse = (body: Record<string, unknown>, model = CLAUDE) => JSON.parse(chatRequest(body, { model, upstream }, false).body);

describe('cache points from chat markers', () => {
  it('a marked blank part marks nothing; a marker on a whole message or its last part gives one point', () => {
    const json = converse({
      messages: [
        { role: 'system', content: 'rules', cache_control: MARK },
        { role: 'user', content: [{ type: 'text', text: '   ', cache_control: MARK }, { type: 'text', text: 'question', cache_control: MARK }], cache_control: MARK },
      ],
    });
    expect(json.system).toEqual([{ text: 'rules' }, POINT]);
    expect(json.messages[0].content).toEqual([{ text: 'question' }, POINT]);
  });

  it("a tool message's marker, on it or inside it, follows the whole tool result; an assistant's follows its calls", () => {
    const json = converse({
      messages: [
        { role: 'user', content: 'go' },
        { role: 'assistant', content: 'calling', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }], cache_control: MARK },
        { role: 'tool', tool_call_id: 'c1', content: [{ type: 'text', text: 'done', cache_control: MARK }] },
        { role: 'user', content: 'next' },
      ],
      tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
    });
    expect(json.messages[1].content).toEqual([{ text: 'calling' }, { toolUse: { toolUseId: 'c1', name: 'f', input: {} } }, POINT]);
    expect(json.messages[2].content).toEqual([{ toolResult: { toolUseId: 'c1', content: [{ text: 'done' }] } }, POINT, { text: 'next' }]);
  });

  it("a marker's ttl (5m, 1h) is the cache point's; any other is left to the default", () => {
    const json = converse({
      messages: [
        { role: 'system', content: [{ type: 'text', text: 'rules', cache_control: { type: 'ephemeral', ttl: '1h' } }] },
        { role: 'user', content: 'hi', cache_control: { type: 'ephemeral', ttl: '2d' } },
      ],
    });
    expect(json.system).toEqual([{ text: 'rules' }, { cachePoint: { type: 'default', ttl: '1h' } }]);
    expect(json.messages[0].content).toEqual([{ text: 'hi' }, POINT]);
  });

  it('Nova caches too; other models are sent no cache point', () => {
    const body = { messages: [{ role: 'user', content: [{ type: 'text', text: 'hi', cache_control: MARK }] }], tools: [{ type: 'function', function: { name: 'f' }, cache_control: MARK }] };
    expect(converse(body, NOVA).toolConfig.tools).toEqual([{ toolSpec: expect.objectContaining({ name: 'f' }) }, POINT]);
    const mistral = converse(body, MISTRAL);
    expect(JSON.stringify(mistral)).not.toContain('cachePoint');
    expect(mistral.toolConfig.tools).toHaveLength(1);
  });
});

describe("the Messages dialect's markers", () => {
  const request = {
    model: 'm',
    max_tokens: 100,
    cache_control: MARK,
    system: [{ type: 'text', text: 'rules', cache_control: MARK }],
    messages: [
      { role: 'user', content: 'go' },
      { role: 'assistant', content: [{ type: 'text', text: 'ok', cache_control: MARK }] },
      { role: 'user', content: [{ type: 'text', text: 'again' }] },
    ],
  };

  it('reach Converse: the system block, the assistant turn, and the top-level marker after the last block', () => {
    const { chat } = messagesToChat(request);
    const json = converse(chat);
    expect(json.system).toEqual([{ text: 'rules' }, POINT]);
    expect(json.messages.map((m: { content: unknown[] }) => m.content)).toEqual([[{ text: 'go' }], [{ text: 'ok' }, POINT], [{ text: 'again' }, POINT]]);
  });

  it('are left out of what an OpenAI-compatible upstream is sent, while a client-made body is untouched', () => {
    const { chat } = messagesToChat(request);
    const sent = JSON.stringify(forOpenAICompatible(chat));
    expect(sent).not.toContain('cache_control');
    expect(JSON.parse(sent).messages[0]).toEqual({ role: 'system', content: [{ type: 'text', text: 'rules' }] });
    // The gateway's own request is not changed in place: a translated target of the same model still reads the markers.
    expect(JSON.stringify(chat)).toContain('cache_control');
    const own = { model: 'm', messages: [{ role: 'user', content: [{ type: 'text', text: 'hi', cache_control: MARK }] }] };
    expect(forOpenAICompatible(own)).toBe(own);
  });
});
