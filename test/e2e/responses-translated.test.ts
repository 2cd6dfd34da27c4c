// Responses for models whose upstream has no Responses API (here an OpenAI-compatible one marked
// `responsesAPI: false`; the translated providers take the same path, responses-providers.test.ts):
// the gateway answers Responses over chat completions and keeps the responses itself, so that the
// official SDK's create, stream, previous_response_id, a function-tool loop, retrieve, input_items
// and delete all work. The Messages API reaches the same model by translation too.
import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { newKey } from '../helpers/gateway.ts';
import { chatOnlyGateway } from '../helpers/chat-only-gateway.ts';
import { weatherParameters } from '../helpers/fixtures.ts';

const key = newKey('k', 'acme');

/** The fake answers a tool call for get_weather (chat shape), whole or streamed with argument fragments. */
function toolCallAnswer(stream: boolean) {
  return (_req: unknown, res: ServerResponse) => {
    if (!stream) {
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ id: 'chatcmpl-t', object: 'chat.completion', created: 1, model: 'chat-model', choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [{ id: 'call_w1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] }, finish_reason: 'tool_calls' }], usage: { prompt_tokens: 20, completion_tokens: 9, total_tokens: 29 } }));
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const chunk = (delta: object, finish: string | null = null) => `data: ${JSON.stringify({ id: 'chatcmpl-t', object: 'chat.completion.chunk', created: 1, model: 'chat-model', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    res.write(chunk({ role: 'assistant', content: null, tool_calls: [{ index: 0, id: 'call_w1', type: 'function', function: { name: 'get_weather', arguments: '' } }] }));
    res.write(chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }));
    res.write(chunk({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }));
    res.write(chunk({}, 'tool_calls'));
    res.write(`data: ${JSON.stringify({ id: 'chatcmpl-t', object: 'chat.completion.chunk', created: 1, model: 'chat-model', choices: [], usage: { prompt_tokens: 20, completion_tokens: 9, total_tokens: 29 } })}\n\n`);
    res.end('data: [DONE]\n\n');
  };
}

describe('Responses over chat completions (an upstream without a Responses API)', () => {
  const suite = chatOnlyGateway(key);
  const { sentChat } = suite;

  it('creates a response from a chat completion, with instructions first, usage, and the public model', async () => {
    const response = await suite.client.responses.create({ model: 'llama', instructions: 'Be brief.', input: 'Hello there', max_output_tokens: 64 });
    expect(response.object).toBe('response');
    expect(response.id).toMatch(/^resp_/);
    expect(response.status).toBe('completed');
    expect(response.model).toBe('llama');
    expect(response.output_text).toBe('answer from chat-only');
    expect(response.usage).toMatchObject({ input_tokens: 11, output_tokens: 7, total_tokens: 18 });
    expect(suite.upstream.requests.at(-1)!.path).toMatch(/\/chat\/completions$/);
    expect(sentChat()).toMatchObject({ model: 'chat-model', max_completion_tokens: 64, messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello there' }] });
  });

  it('streams Responses events as the chat stream comes, and the SDK rebuilds the same text', async () => {
    const stream = suite.client.responses.stream({ model: 'llama', input: 'Stream it' });
    const types: string[] = [];
    let text = '';
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'response.output_text.delta') text += event.delta;
    }
    const final = await stream.finalResponse();
    expect(types[0]).toBe('response.created');
    expect(types[1]).toBe('response.in_progress');
    expect(types.at(-1)).toBe('response.completed');
    expect(types).toContain('response.output_item.added');
    expect(types).toContain('response.output_text.done');
    expect(text).toBe('chat-only-0 chat-only-1 chat-only-2 chat-only-3 chat-only-4 ');
    expect(final.output_text).toBe(text);
    expect(final.usage?.output_tokens).toBe(5);
  });

  it('continues with previous_response_id (the history replayed as chat), and retrieves, lists input items and deletes', async () => {
    const first = await suite.client.responses.create({ model: 'llama', input: 'My name is Ada.' });
    const second = await suite.client.responses.create({ model: 'llama', input: 'What is my name?', previous_response_id: first.id });
    expect(sentChat().messages).toEqual([
      { role: 'user', content: 'My name is Ada.' },
      { role: 'assistant', content: 'answer from chat-only' },
      { role: 'user', content: 'What is my name?' },
    ]);
    const retrieved = await suite.client.responses.retrieve(second.id);
    expect(retrieved.output_text).toBe(second.output_text);
    const items = await suite.client.responses.inputItems.list(second.id);
    expect(items.data).toHaveLength(1);
    expect(items.data[0]).toMatchObject({ type: 'message', role: 'user' });
    await suite.client.responses.delete(second.id);
    await expect(suite.client.responses.retrieve(second.id)).rejects.toMatchObject({ status: 404 });
    const unstored = await suite.client.responses.create({ model: 'llama', input: 'forget me', store: false });
    const orphan = await suite.client.responses.create({ model: 'llama', input: 'x', previous_response_id: unstored.id }).catch((e) => e);
    expect(orphan.status).toBe(400);
    expect(orphan.error.code).toBe('previous_response_not_found');
  });

  it('runs a function-tool loop: a function_call item (whole and streamed), then the output continues the turn', async () => {
    const tools = [{ type: 'function' as const, name: 'get_weather', description: 'Weather', parameters: weatherParameters, strict: false }];
    suite.upstream.behave({ respond: toolCallAnswer(false) });
    const first = await suite.client.responses.create({ model: 'llama', input: 'Weather in Paris?', tools });
    const call = first.output.find((item) => item.type === 'function_call');
    expect(call).toMatchObject({ type: 'function_call', call_id: 'call_w1', name: 'get_weather', arguments: '{"city":"Paris"}' });
    expect(sentChat().tools[0]).toMatchObject({ type: 'function', function: { name: 'get_weather' } });
    suite.upstream.behave({ respond: toolCallAnswer(true) });
    const streamed = await suite.client.responses.stream({ model: 'llama', input: 'Weather in Paris?', tools }).finalResponse();
    expect(streamed.output.find((item) => item.type === 'function_call')).toMatchObject({ call_id: 'call_w1', arguments: '{"city":"Paris"}' });
    suite.upstream.behave({});
    await suite.client.responses.create({ model: 'llama', previous_response_id: first.id, tools, input: [{ type: 'function_call_output', call_id: 'call_w1', output: '{"temp":21}' }] });
    expect(sentChat().messages.slice(-2)).toEqual([
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_w1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
      { role: 'tool', tool_call_id: 'call_w1', content: '{"temp":21}' },
    ]);
  });

  it('answers the Messages API (Anthropic SDK) on the OpenAI-compatible model, JSON and streamed, usage in Anthropic meaning', async () => {
    const claude = new Anthropic({ baseURL: suite.gw.url, apiKey: key.key, maxRetries: 0 });
    const message = await claude.messages.create({ model: 'llama', max_tokens: 64, system: 'Be brief.', messages: [{ role: 'user', content: 'Hi from Claude Code' }] });
    expect(message.content).toEqual([{ type: 'text', text: 'answer from chat-only' }]);
    expect(message.usage).toMatchObject({ input_tokens: 11, output_tokens: 7, cache_read_input_tokens: 0 });
    expect(sentChat()).toMatchObject({ model: 'chat-model', max_completion_tokens: 64, messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi from Claude Code' }] });
    const streamed = await claude.messages.stream({ model: 'llama', max_tokens: 64, messages: [{ role: 'user', content: 'stream it' }] }).finalMessage();
    expect((streamed.content[0] as Anthropic.TextBlock).text).toBe('chat-only-0 chat-only-1 chat-only-2 chat-only-3 chat-only-4 ');
    expect(streamed.usage.output_tokens).toBe(5);
    suite.upstream.behave({ respond: toolCallAnswer(true) });
    const call = await claude.messages.stream({ model: 'llama', max_tokens: 64, tools: [{ name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }], messages: [{ role: 'user', content: 'weather?' }] }).finalMessage();
    expect(call.stop_reason).toBe('tool_use');
    expect(call.content.find((b) => b.type === 'tool_use')).toMatchObject({ id: 'call_w1', name: 'get_weather', input: { city: 'Paris' } });
  });

  it("OpenAI's built-in tools are a 400 naming the tool; a failure mid-stream is raised by the SDK", async () => {
    const builtIn = await suite.client.responses.create({ model: 'llama', input: 'search', tools: [{ type: 'web_search' }] }).catch((e) => e);
    expect(builtIn.status).toBe(400);
    expect(builtIn.error.param).toBe('tools[0].type');
    suite.upstream.behave({ resetAfterChunks: 2 });
    const stream = suite.client.responses.stream({ model: 'llama', input: 'cut' });
    await expect(async () => {
      for await (const _ of stream);
    }).rejects.toThrow();
  });
});
