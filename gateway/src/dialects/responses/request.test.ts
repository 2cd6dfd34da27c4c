import { describe, expect, it } from 'vitest';
import { ApiError } from '../../http/errors.ts';
import { NO_FILES } from '../../service-test/file-inputs.ts';
import { parseResponsesRequest } from '../../service-test/responses-request.ts';
import { rejectBuiltInTools, restoreCustomTools, storedOutputItems, withCustomToolsAsFunctions } from './custom-tools.ts';
import { chatRequestOf, inputMessages } from './request.ts';
import { assistantMessageOf, newResponseBase, responseOfCompletion } from './response.ts';

type Json = Record<string, any>;

/** The chat request a Responses body becomes, as the route builds it. */
function chatOf(original: Json): { chat: Json; request: ReturnType<typeof parseResponsesRequest>; custom: ReturnType<typeof withCustomToolsAsFunctions> } {
  rejectBuiltInTools(original);
  const custom = withCustomToolsAsFunctions(original);
  const request = parseResponsesRequest(custom.body);
  const chat = chatRequestOf(custom.body, request, [], inputMessages(request.input.items.map((item) => item.wire)));
  restoreCustomTools(request, original, custom);
  return { chat, request, custom };
}

const SCHEMA = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false };
const PATCH_GRAMMAR = 'start: begin_patch hunk+ end_patch';

describe('a Responses request as a chat request', () => {
  it('maps text.format json_schema to response_format, with its name, strictness and description', () => {
    const { chat } = chatOf({ model: 'm', input: 'x', text: { format: { type: 'json_schema', name: 'place', schema: SCHEMA, strict: true, description: 'A place' } } });
    expect(chat.response_format).toEqual({ type: 'json_schema', json_schema: { name: 'place', schema: SCHEMA, strict: true, description: 'A place' } });
    expect(chatOf({ model: 'm', input: 'x', text: { format: { type: 'json_object' } } }).chat.response_format).toEqual({ type: 'json_object' });
    expect(chatOf({ model: 'm', input: 'x', text: { format: { type: 'text' } } }).chat.response_format).toBeUndefined();
  });

  it('maps reasoning.effort to reasoning_effort, and sends none of it for effort none', () => {
    expect(chatOf({ model: 'm', input: 'x', reasoning: { effort: 'high' } }).chat.reasoning_effort).toBe('high');
    expect(chatOf({ model: 'm', input: 'x', reasoning: { effort: 'minimal', summary: 'auto' } }).chat.reasoning_effort).toBe('minimal');
    expect(chatOf({ model: 'm', input: 'x', reasoning: { effort: 'none' } }).chat).not.toHaveProperty('reasoning_effort');
    expect(chatOf({ model: 'm', input: 'x' }).chat).not.toHaveProperty('reasoning_effort');
  });

  it('sends a custom tool as a function of one string input, its grammar told in the description, and echoes it as sent', () => {
    const tool = { type: 'custom', name: 'apply_patch', description: 'Edit files.', format: { type: 'grammar', syntax: 'lark', definition: PATCH_GRAMMAR } };
    const { chat, request } = chatOf({ model: 'm', input: 'x', tools: [tool], tool_choice: { type: 'custom', name: 'apply_patch' } });
    expect(chat.tools).toHaveLength(1);
    expect(chat.tools[0]).toMatchObject({ type: 'function', function: { name: 'apply_patch', parameters: { type: 'object', properties: { input: { type: 'string' } }, required: ['input'] } } });
    expect(chat.tools[0].function.description).toBe(`Edit files.\n\nThe input must match this Lark grammar:\n${PATCH_GRAMMAR}`);
    expect(chat.tool_choice).toEqual({ type: 'function', function: { name: 'apply_patch' } });
    expect(request.settings.tools).toEqual([tool]);
    expect(request.settings.tool_choice).toEqual({ type: 'custom', name: 'apply_patch' });
  });

  it("replays a custom tool's call and output as a function call and a tool message, and lists them as the client sent them", () => {
    const input = [
      { role: 'user', content: 'patch it' },
      { type: 'custom_tool_call', call_id: 'call_p', name: 'apply_patch', input: '*** Begin Patch\n*** End Patch' },
      { type: 'custom_tool_call_output', call_id: 'call_p', output: 'Done!' },
    ];
    const { chat, request } = chatOf({ model: 'm', input, tools: [{ type: 'custom', name: 'apply_patch' }] });
    expect(chat.messages.slice(1)).toEqual([
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_p', type: 'function', function: { name: 'apply_patch', arguments: JSON.stringify({ input: '*** Begin Patch\n*** End Patch' }) } }] },
      { role: 'tool', tool_call_id: 'call_p', content: 'Done!' },
    ]);
    expect(request.input.items.map((item) => item.wire.type)).toEqual(['message', 'custom_tool_call', 'custom_tool_call_output']);
    expect(request.input.items[1].wire).toMatchObject({ input: '*** Begin Patch\n*** End Patch', id: expect.any(String) });
    // Kept as the client sent them, the items are replayed the same way when a later request references them.
    const kept = new Map(request.input.items.map((item) => [item.wire.id as string, item]));
    const later = parseResponsesRequest({ model: 'm', input: request.input.items.slice(1).map((item) => ({ type: 'item_reference', id: item.wire.id })) }, { files: NO_FILES, item: (id) => kept.get(id) });
    expect(inputMessages(later.input.items.map((item) => item.wire))).toEqual(chat.messages.slice(1));
  });

  it('leaves out the reasoning items a client passes back (as Codex does), keeping the others in their places', () => {
    const input = [
      { role: 'user', content: 'patch it' },
      { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'Thinking.' }], encrypted_content: null },
      { type: 'custom_tool_call', call_id: 'call_p', name: 'apply_patch', input: 'P' },
      { type: 'custom_tool_call_output', call_id: 'call_p', output: 'ok' },
    ];
    const { chat, request } = chatOf({ model: 'm', input, tools: [{ type: 'custom', name: 'apply_patch' }], include: ['reasoning.encrypted_content'] });
    expect(chat.messages.map((m: Json) => m.role)).toEqual(['user', 'assistant', 'tool']);
    expect(request.input.items.map((item) => item.wire.type)).toEqual(['message', 'custom_tool_call', 'custom_tool_call_output']);
    expect(request.input.items[1].wire).toMatchObject({ call_id: 'call_p', input: 'P' });
  });

  it('refuses a custom tool with a malformed grammar, and every tool that OpenAI runs or only its models call, by name', () => {
    expect(() => chatOf({ model: 'm', input: 'x', tools: [{ type: 'custom', name: 'p', format: { type: 'grammar', syntax: 'ebnf', definition: 'x' } }] })).toThrow(/syntax/);
    for (const type of ['web_search', 'file_search', 'code_interpreter', 'computer_use_preview', 'image_generation', 'mcp', 'local_shell', 'shell', 'apply_patch']) {
      let error: unknown;
      try {
        rejectBuiltInTools({ tools: [{ type: 'function', name: 'f' }, { type }] });
      } catch (caught) {
        error = caught;
      }
      expect(error, type).toBeInstanceOf(ApiError);
      expect((error as ApiError).status).toBe(400);
      expect((error as ApiError).message).toContain(`'${type}'`);
    }
  });
});

describe('a chat completion as a Response', () => {
  const completion = (message: Json, usage: Json = { prompt_tokens: 50, completion_tokens: 20, total_tokens: 70 }) => ({ id: 'c', object: 'chat.completion', created: 1, model: 'x', choices: [{ index: 0, message: { role: 'assistant', ...message }, finish_reason: 'stop' }], usage });
  const baseOf = (body: Json = {}) => newResponseBase('public-model', parseResponsesRequest({ model: 'm', input: 'x', ...body }).settings, body.reasoning, new Set(['apply_patch']));

  it('reports usage with cached and reasoning tokens in Responses words', () => {
    const response = responseOfCompletion(baseOf(), completion({ content: 'ok' }, { prompt_tokens: 50, completion_tokens: 20, total_tokens: 70, prompt_tokens_details: { cached_tokens: 32 }, completion_tokens_details: { reasoning_tokens: 8 } }));
    expect(response.usage).toEqual({ input_tokens: 50, input_tokens_details: { cached_tokens: 32, cache_write_tokens: 0 }, output_tokens: 20, output_tokens_details: { reasoning_tokens: 8 }, total_tokens: 70 });
    expect(response.model).toBe('public-model');
  });

  it('gives reasoning as content, or as the summary when one was asked for', () => {
    const plain = responseOfCompletion(baseOf(), completion({ content: 'ok', reasoning_content: 'Because.' }));
    expect(plain.output[0]).toMatchObject({ type: 'reasoning', summary: [], content: [{ type: 'reasoning_text', text: 'Because.' }] });
    const summarised = responseOfCompletion(baseOf({ reasoning: { effort: 'low', summary: 'detailed' } }), completion({ content: 'ok', reasoning_content: 'Because.' }));
    expect(summarised.output[0]).toEqual({ type: 'reasoning', id: expect.stringMatching(/^rs_/), summary: [{ type: 'summary_text', text: 'Because.' }], status: 'completed' });
    expect(summarised.reasoning).toEqual({ effort: 'low', summary: 'detailed' });
  });

  it("gives a custom tool's call as a custom_tool_call with its input, replayed and stored as the function call it was", () => {
    const response = responseOfCompletion(baseOf(), completion({ content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'apply_patch', arguments: '{"input":"*** Begin Patch"}' } }, { id: 'call_2', type: 'function', function: { name: 'get_weather', arguments: '{}' } }] }));
    expect(response.output).toEqual([
      { type: 'custom_tool_call', id: expect.stringMatching(/^ctc_/), call_id: 'call_1', name: 'apply_patch', input: '*** Begin Patch' },
      { type: 'function_call', id: expect.stringMatching(/^fc_/), call_id: 'call_2', name: 'get_weather', arguments: '{}', status: 'completed' },
    ]);
    expect(assistantMessageOf(response).tool_calls[0]).toEqual({ id: 'call_1', type: 'function', function: { name: 'apply_patch', arguments: '{"input":"*** Begin Patch"}' } });
    expect(storedOutputItems(response.output)[0].piece).toEqual({ kind: 'call', call: { id: 'call_1', name: 'apply_patch', arguments: '{"input":"*** Begin Patch"}' } });
  });

  it("keeps a custom tool's arguments whole when the model did not write the expected JSON", () => {
    const response = responseOfCompletion(baseOf(), completion({ content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'apply_patch', arguments: '*** Begin Patch' } }] }));
    expect(response.output[0].input).toBe('*** Begin Patch');
  });
});
