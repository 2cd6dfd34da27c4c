// Every answer service-test gives, checked against OpenAI's own OpenAPI document
// (test/helpers/openai-oracle.ts): the official SDK drives the real gateway through a fetch that
// validates each JSON body against its operation's response schema, each stream event against its
// event's schema, and each error against ErrorResponse. A failure names the operation, the JSON path
// in the answer and the schema path in the spec (README.md tells how to read and refresh it).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI, { toFile } from 'openai';
import { account, apiKey, newKey, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { answerProblems, eventProblems, OPENAI_SPEC_VERSION, oracleFetch, oracleSettled, type OracleRecord } from '../helpers/openai-oracle.ts';
import { png, shortWav } from '../clients/setup.ts';

const key = newKey('oracle-key', 'oracle-co');
let gw: TestGateway;
let client: OpenAI;
const records: OracleRecord[] = [];

beforeAll(async () => {
  gw = await startTestGateway([account('oracle-co'), apiKey(key)]);
  client = gw.client(key.key, { fetch: oracleFetch(records) });
});
afterAll(() => gw?.stop());

const M = 'service-test';
const weatherTool = {
  type: 'function' as const,
  function: { name: 'get_weather', description: 'Weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['c', 'f'] } }, required: ['city'] } },
};
const pngDataUrl = `data:image/png;base64,${png(8, 8).toString('base64')}`;

/**
 * Runs the calls, then checks what the oracle recorded for them: no problem, and each expected
 * `METHOD /path kind` answered (so a call that silently skipped the oracle cannot pass).
 */
async function oracle(expected: string[], calls: () => Promise<unknown>): Promise<OracleRecord[]> {
  const from = records.length;
  await calls();
  await oracleSettled();
  const mine = records.slice(from);
  expect(mine.flatMap((r) => r.problems), `the spec (${OPENAI_SPEC_VERSION}) disagrees`).toEqual([]);
  const seen = new Set(mine.map((r) => `${r.method} ${r.path.replace(/\/(file|resp|msg)[-_][\w-]+/g, '/{id}')} ${r.kind}`));
  for (const want of expected) expect([...seen], `no ${want} answer was checked`).toContain(want);
  return mine;
}

describe(`service-test answers conform to OpenAI's OpenAPI spec`, () => {
  it('the oracle can fail: a wrong answer and a wrong event are named', () => {
    expect(answerProblems('GET', '/v1/models', 200, { object: 'list', data: [{ id: 'x', object: 'model', created: 'yesterday', owned_by: 'me' }] })).toMatch(/\/data\/0\/created must be integer/);
    expect(answerProblems('POST', '/v1/chat/completions', 404, { error: { message: 'gone' } })).toMatch(/must have required property 'type'/);
    expect(eventProblems('POST', '/v1/responses', { type: 'response.made_up', sequence_number: 0 })).toMatch(/not one the spec declares/);
    expect(eventProblems('POST', '/v1/responses', { type: 'response.output_text.delta', sequence_number: 1 })).toMatch(/must have required property 'delta'/);
  });

  it('models: list and retrieve', async () => {
    await oracle(['GET /v1/models json', 'GET /v1/models/service-test json'], async () => {
      await client.models.list();
      await client.models.retrieve(M);
    });
  });

  it('chat completions: text, n and logprobs, tools, vision, json_object and json_schema', async () => {
    await oracle(['POST /v1/chat/completions json'], async () => {
      await client.chat.completions.create({ model: M, messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello there' }], n: 2, logprobs: true, top_logprobs: 2 });
      const call = await client.chat.completions.create({ model: M, messages: [{ role: 'user', content: 'What is the weather in Paris?' }], tools: [weatherTool] });
      const toolCall = call.choices[0].message.tool_calls![0];
      await client.chat.completions.create({
        model: M,
        messages: [{ role: 'user', content: 'Weather in Paris?' }, call.choices[0].message, { role: 'tool', tool_call_id: toolCall.id, content: '{"temp":21}' }],
        tools: [weatherTool],
      });
      await client.chat.completions.create({ model: M, messages: [{ role: 'user', content: [{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url: pngDataUrl } }] }] });
      await client.chat.completions.create({ model: M, messages: [{ role: 'user', content: 'Answer in JSON' }], response_format: { type: 'json_object' } });
      await client.chat.completions.create({
        model: M,
        messages: [{ role: 'user', content: 'A city' }],
        response_format: { type: 'json_schema', json_schema: { name: 'city', strict: true, schema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'], additionalProperties: false } } },
        max_completion_tokens: 5,
      });
    });
  });

  it('chat completions: every chunk of text and tool-call streams, with usage', async () => {
    await oracle(['POST /v1/chat/completions stream'], async () => {
      for await (const _ of await client.chat.completions.create({ model: M, messages: [{ role: 'user', content: 'Stream a few words' }], stream: true, stream_options: { include_usage: true }, logprobs: true })) void _;
      for await (const _ of await client.chat.completions.create({ model: M, messages: [{ role: 'user', content: 'Weather in Oslo?' }], tools: [weatherTool], stream: true })) void _;
    });
  });

  it('legacy completions: answers and stream chunks', async () => {
    await oracle(['POST /v1/completions json', 'POST /v1/completions stream'], async () => {
      await client.completions.create({ model: M, prompt: ['Say this', 'and that'], max_tokens: 8, logprobs: 2, echo: true });
      for await (const _ of await client.completions.create({ model: M, prompt: 'Stream this', stream: true, stream_options: { include_usage: true } })) void _;
    });
  });

  it('responses: create (text, tools, structured), retrieve, input items, input tokens, delete', async () => {
    const tool = { type: 'function' as const, name: 'get_weather', description: 'Weather in a city', parameters: weatherTool.function.parameters, strict: false };
    await oracle(
      ['POST /v1/responses json', 'GET /v1/responses/{id} json', 'GET /v1/responses/{id}/input_items json', 'POST /v1/responses/input_tokens json', 'DELETE /v1/responses/{id} json'],
      async () => {
        const text = await client.responses.create({ model: M, instructions: 'Be brief.', input: [{ role: 'user', content: [{ type: 'input_text', text: 'Hello' }, { type: 'input_image', image_url: pngDataUrl, detail: 'auto' }] }], metadata: { run: 'oracle' } });
        const call = await client.responses.create({ model: M, input: 'What is the weather in Rome?', tools: [tool] });
        const fc = call.output.find((item) => item.type === 'function_call')!;
        await client.responses.create({ model: M, previous_response_id: call.id, input: [{ type: 'function_call_output', call_id: fc.call_id, output: '{"temp":25}' }], tools: [tool] });
        await client.responses.create({ model: M, input: 'A city', text: { format: { type: 'json_schema', name: 'city', strict: true, schema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'], additionalProperties: false } } } });
        await client.responses.create({ model: M, input: 'A long answer please', max_output_tokens: 16 });
        await client.responses.retrieve(text.id);
        await client.responses.inputItems.list(text.id);
        await client.responses.inputTokens.count({ model: M, input: 'Count me' });
        await client.responses.delete(text.id);
      },
    );
  });

  it('responses: every stream event, by its type, for text and function calls', async () => {
    const tool = { type: 'function' as const, name: 'get_weather', parameters: weatherTool.function.parameters, strict: false };
    const streams = await oracle(['POST /v1/responses stream', 'GET /v1/responses/{id} stream'], async () => {
      for await (const _ of await client.responses.create({ model: M, input: 'Stream a few words', stream: true })) void _;
      for await (const _ of await client.responses.create({ model: M, input: 'Weather in Lima?', tools: [tool], stream: true })) void _;
      // Cut short: the stream ends with response.incomplete.
      for await (const _ of await client.responses.create({ model: M, input: 'A long answer please, with many words', max_output_tokens: 16, stream: true })) void _;
      const stored = await client.responses.create({ model: M, input: 'Replay me' });
      for await (const _ of await client.responses.retrieve(stored.id, { stream: true })) void _;
    });
    expect(streams.filter((r) => r.kind === 'stream')).toHaveLength(4);
  });

  it('images: generations, edits and variations, as b64_json and url', async () => {
    const image = await toFile(png(16, 16), 'in.png', { type: 'image/png' });
    await oracle(['POST /v1/images/generations json', 'POST /v1/images/edits json', 'POST /v1/images/variations json'], async () => {
      for (const response_format of ['b64_json', 'url'] as const) {
        for (const quality of ['auto', 'standard', 'hd', 'low'] as const) {
          const generated = await client.images.generate({ model: M, prompt: 'a red dot', size: '16x16', response_format, quality });
          expect(['low', 'medium', 'high']).toContain(generated.quality);
        }
        await client.images.edit({ model: M, prompt: 'make it blue', image, size: '16x16', response_format, quality: 'auto' });
        await client.images.createVariation({ model: M, image, size: '256x256', response_format });
      }
    });
  });

  it('embeddings: float and base64', async () => {
    await oracle(['POST /v1/embeddings json'], async () => {
      await client.embeddings.create({ model: M, input: ['one', 'two'], encoding_format: 'float', dimensions: 8 });
      // The SDK asks for base64 by default and decodes it: the oracle sees the wire's strings.
      await client.embeddings.create({ model: M, input: 'three' });
    });
  });

  it('moderations: text and multimodal input', async () => {
    await oracle(['POST /v1/moderations json'], async () => {
      await client.moderations.create({ input: ['fine', 'also fine'] });
      await client.moderations.create({ model: M, input: [{ type: 'text', text: 'look' }, { type: 'image_url', image_url: { url: pngDataUrl } }] });
    });
  });

  it('audio: speech, and transcriptions and translations in their JSON forms', async () => {
    await oracle(['POST /v1/audio/speech other', 'POST /v1/audio/transcriptions json', 'POST /v1/audio/translations json'], async () => {
      const speech = await client.audio.speech.create({ model: M, input: 'Hello from the oracle', voice: 'alloy', response_format: 'wav' });
      const wav = Buffer.from(await speech.arrayBuffer());
      await client.audio.transcriptions.create({ model: M, file: await toFile(wav, 'speech.wav', { type: 'audio/wav' }) });
      await client.audio.transcriptions.create({ model: M, file: await toFile(wav, 'speech.wav', { type: 'audio/wav' }), response_format: 'verbose_json', timestamp_granularities: ['word', 'segment'] });
      await client.audio.translations.create({ model: M, file: await toFile(shortWav(), 'quiet.wav', { type: 'audio/wav' }) });
      await client.audio.translations.create({ model: M, file: await toFile(shortWav(), 'quiet.wav', { type: 'audio/wav' }), response_format: 'verbose_json' });
    });
  });

  it('files: upload, list, retrieve, delete', async () => {
    await oracle(['POST /v1/files json', 'GET /v1/files json', 'GET /v1/files/{id} json', 'DELETE /v1/files/{id} json'], async () => {
      const file = await client.files.create({ file: await toFile(Buffer.from('{"a":1}\n'), 'data.jsonl', { type: 'application/jsonl' }), purpose: 'batch' });
      await client.files.list();
      await client.files.retrieve(file.id);
      await client.files.delete(file.id);
    });
  });

  it('errors of every endpoint: unknown model, bad parameters, bad key, missing resources', async () => {
    const badKey = gw.client('tg_sk_not-a-key', { fetch: oracleFetch(records) });
    const image = await toFile(png(8, 8), 'in.png', { type: 'image/png' });
    const failures: Array<() => Promise<unknown>> = [
      () => client.chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'hi' }] }),
      () => client.chat.completions.create({ model: M, messages: [], temperature: 3 }),
      () => client.completions.create({ model: M, prompt: 'x', logprobs: 9 }),
      () => client.responses.create({ model: M, input: 'x', text: { format: { type: 'json_schema', name: 'bad name!', schema: {} } } }),
      () => client.responses.create({ model: M, input: 'x', stream: true, max_output_tokens: 1 }),
      () => client.responses.retrieve('resp_doesnotexist'),
      () => client.embeddings.create({ model: M, input: 'x', dimensions: -1 }),
      () => client.moderations.create({ model: M, input: 42 as unknown as string }),
      () => client.images.generate({ model: M, prompt: 'x', size: '9999x1' as '1024x1024' }),
      () => client.images.edit({ model: M, prompt: 'x', image, size: 'big' as '1024x1024' }),
      () => client.audio.speech.create({ model: M, input: 'x', voice: 'alloy', response_format: 'mp3' }),
      () => client.audio.transcriptions.create({ model: M, file: image, language: 'english' }),
      () => client.files.create({ file: image, purpose: 'nonsense' as 'batch' }),
      () => client.files.retrieve('file-doesnotexist'),
      () => badKey.models.list(),
      () => client.models.retrieve('no-such-model'),
    ];
    const mine = await oracle(['POST /v1/chat/completions json', 'POST /v1/responses json', 'GET /v1/files/{id} json', 'POST /v1/audio/transcriptions json'], async () => {
      for (const fail of failures) await expect(fail()).rejects.toThrow(OpenAI.APIError);
    });
    expect(mine).toHaveLength(failures.length);
    for (const record of mine) expect(record.status, `${record.method} ${record.path}`).toBeGreaterThanOrEqual(400);
  });
});
