// The request transform's refusals and choices: each parameter Gemini cannot honour is a 400 naming
// it (or dropped when the Upstream says so), history that Gemini would refuse is refused here with
// OpenAI's words, and the settings that differ by model generation follow the model id.
import type { Upstream } from '@tollgate/crds';
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../http/errors.ts';
import { gemini, vertex } from './index.ts';

const upstream = (extra: Record<string, unknown> = {}): Upstream =>
  ({ apiVersion: 'tollgate.dev/v1alpha1', kind: 'Upstream', metadata: { name: 'g' }, spec: { provider: 'gemini', ...extra } }) as Upstream;
const vertexUpstream = { apiVersion: 'tollgate.dev/v1alpha1', kind: 'Upstream', metadata: { name: 'v' }, spec: { provider: 'vertex', vertex: { project: 'p', location: 'global' } } } as Upstream;
const user = [{ role: 'user', content: 'hi' }];

function send(body: Record<string, unknown>, model = 'gemini-2.5-flash', stream = false, up = upstream()) {
  const request = gemini.translation.chatRequest(body, { model, upstream: up }, stream);
  return { ...request, json: JSON.parse(request.body) };
}

function refusal(fn: () => unknown): ApiError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    return error as ApiError;
  }
  throw new Error('expected a 400');
}

describe('gemini chat request', () => {
  it.each([
    [{ n: 2 }, true, 'n'],
    [{ logit_bias: { '1': 2 } }, false, 'logit_bias'],
    [{ logprobs: true }, false, 'logprobs'],
    [{ parallel_tool_calls: false }, false, 'parallel_tool_calls'],
    [{ audio: { voice: 'x' } }, false, 'audio'],
    [{ modalities: ['text', 'audio'] }, false, 'modalities'],
  ])('refuses %j with a 400 naming the param, or drops it when asked', (extra, stream, param) => {
    const error = refusal(() => send({ messages: user, ...extra }, 'gemini-2.5-flash', stream));
    expect([error.status, error.param, error.code]).toEqual([400, param, 'unsupported_parameter']);
    const dropped = send({ messages: user, ...extra }, 'gemini-2.5-flash', stream, upstream({ dropUnsupportedParams: true }));
    expect(JSON.stringify(dropped.json)).not.toMatch(/logit|audio|candidateCount/);
  });

  it('asks for n candidates without stream', () => {
    expect(send({ messages: user, n: 3 }).json.generationConfig.candidateCount).toBe(3);
  });

  it('names the part it cannot send: an http image, a file id, an unknown part', () => {
    const image = refusal(() => send({ messages: [{ role: 'user', content: [{ type: 'text', text: 'x' }, { type: 'image_url', image_url: { url: 'https://example.com/a.png' } }] }] }));
    expect(image.param).toBe('messages[0].content[1].image_url');
    const file = refusal(() => send({ messages: [{ role: 'user', content: [{ type: 'file', file: { file_id: 'file-1' } }] }] }));
    expect(file.param).toBe('messages[0].content[0].file');
    const gs = refusal(() => send({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'gs://b/noext' } }] }] }));
    expect(gs.param).toBe('messages[0].content[0].image_url');
  });

  it('refuses a tool message with no matching call, and calls left without results', () => {
    const orphan = refusal(() => send({ messages: [...user, { role: 'tool', tool_call_id: 'nope', content: 'x' }] }));
    expect(orphan.param).toBe('messages[1].tool_call_id');
    const call = { id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } };
    const unanswered = refusal(() => send({ messages: [...user, { role: 'assistant', tool_calls: [call] }, { role: 'user', content: 'next' }] }));
    expect(unanswered.param).toBe('messages[1].tool_calls');
    expect(unanswered.message).toContain('c1');
    const badArgs = refusal(() => send({ messages: [...user, { role: 'assistant', tool_calls: [{ ...call, function: { name: 'f', arguments: '{oops' } }] }] }));
    expect(badArgs.param).toBe('messages[1].tool_calls[0].function.arguments');
  });

  it("refuses the deprecated 'function' role rather than dropping the message", () => {
    expect(refusal(() => send({ messages: [...user, { role: 'function', name: 'f', content: 'x' }] })).param).toBe('messages[1].role');
  });

  it('refuses tools Gemini cannot declare or choose', () => {
    const name = refusal(() => send({ messages: user, tools: [{ type: 'function', function: { name: '9lives' } }] }));
    expect(name.param).toBe('tools[0].function.name');
    const hosted = refusal(() => send({ messages: user, tools: [{ type: 'custom', custom: { name: 'x' } }] }));
    expect(hosted.param).toBe('tools[0].type');
    const choice = refusal(() => send({ messages: user, tools: [{ type: 'function', function: { name: 'a' } }], tool_choice: { type: 'function', function: { name: 'b' } } }));
    expect(choice.param).toBe('tool_choice');
  });

  it('maps tool_choice values', () => {
    const tools = [{ type: 'function', function: { name: 'a' } }];
    expect(send({ messages: user, tools, tool_choice: 'auto' }).json.toolConfig).toEqual({ functionCallingConfig: { mode: 'AUTO' } });
    expect(send({ messages: user, tools, tool_choice: 'none' }).json.toolConfig).toEqual({ functionCallingConfig: { mode: 'NONE' } });
    expect(send({ messages: user, tools, tool_choice: 'required' }).json.toolConfig).toEqual({ functionCallingConfig: { mode: 'ANY' } });
  });

  it('configures thinking by generation: a budget on 2.5, a level on 3, refused on older models', () => {
    expect(send({ messages: user, reasoning_effort: 'low' }).json.generationConfig.thinkingConfig).toEqual({ thinkingBudget: 1024, includeThoughts: true });
    expect(send({ messages: user, reasoning_effort: 'none' }, 'gemini-2.5-pro').json.generationConfig.thinkingConfig).toEqual({ thinkingBudget: 128 });
    expect(send({ messages: user, reasoning_effort: 'minimal' }, 'gemini-3-flash-preview').json.generationConfig.thinkingConfig).toEqual({ thinkingLevel: 'MINIMAL', includeThoughts: true });
    expect(refusal(() => send({ messages: user, reasoning_effort: 'high' }, 'gemini-2.0-flash')).param).toBe('reasoning_effort');
  });

  it('sends a blank user turn when the messages are all system, and paths for each surface', () => {
    expect(send({ messages: [{ role: 'system', content: 'only' }] }).json.contents).toEqual([{ role: 'user', parts: [{ text: ' ' }] }]);
    const streamed = vertex.translation.chatRequest({ messages: user }, { model: 'gemini-2.5-pro', upstream: vertexUpstream }, true);
    expect(streamed.path).toBe('/v1/projects/p/locations/global/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse');
  });

  it('leaves ids out of Vertex function calls and responses, keeps them on the Gemini API', () => {
    const messages = [...user, { role: 'assistant', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '' } }] }, { role: 'tool', tool_call_id: 'c1', content: 'done' }];
    const onVertex = JSON.parse(vertex.translation.chatRequest({ messages }, { model: 'gemini-2.5-pro', upstream: vertexUpstream }, false).body);
    expect(onVertex.contents[1].parts[0]).toEqual({ functionCall: { name: 'f', args: {} } });
    expect(onVertex.contents[2].parts[0]).toEqual({ functionResponse: { name: 'f', response: { output: 'done' } } });
    expect(send({ messages }).json.contents[1].parts[0].functionCall.id).toBe('c1');
  });
});

describe('model generations', () => {
  it('treats an alias without a version as a current model', () => {
    const body = { messages: user, reasoning_effort: 'low', tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { a: { type: ['string', 'null'] } } } } }] };
    const json = send(body, 'gemini-flash-latest').json;
    expect(json.generationConfig.thinkingConfig).toEqual({ thinkingBudget: 1024, includeThoughts: true });
    expect(json.tools[0].functionDeclarations[0].parametersJsonSchema).toBeDefined();
    const old = send({ ...body, reasoning_effort: undefined }, 'gemini-1.5-pro').json;
    expect(old.tools[0].functionDeclarations[0].parameters).toEqual({ type: 'object', properties: { a: { type: 'string', nullable: true } } });
  });
});
