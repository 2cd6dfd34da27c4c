import { describe, expect, it } from 'vitest';
import { createSseRelay, onlyNullUsage, type RelayOptions, type Usage } from './sse-relay.ts';

function relayOf(options: Partial<RelayOptions>) {
  const seen = { usage: [] as Usage[], ids: [] as string[], data: [] as string[] };
  const relay = createSseRelay({
    kind: 'chat',
    publicModel: 'm',
    upstreamModel: 'm',
    stripUsageChunk: false,
    onUsage: (usage) => seen.usage.push(usage),
    onResponseId: (id) => seen.ids.push(id),
    ...options,
  });
  /** Feeds each read; returns what each produced (one write per read at most). */
  const feed = (...reads: string[]) => [...reads.map((read) => relay.feed(Buffer.from(read))), relay.end()].map((out) => (out === null ? null : out.toString()));
  return { relay, seen, feed };
}

const chunk = (delta: string, extra = '') => `data: {"id":"c","object":"chat.completion.chunk","model":"up","choices":[{"index":0,"delta":{"content":"${delta}"}}]${extra}}\n\n`;
const usageChunk = 'data: {"id":"c","object":"chat.completion.chunk","model":"up","choices":[],"usage":{"prompt_tokens":11,"completion_tokens":5,"total_tokens":16}}\n\n';

describe('createSseRelay without renaming: bytes pass through', () => {
  it('hides the usage chunk the gateway asked for, reads its usage, and writes one Buffer per read', () => {
    const { seen, feed } = relayOf({ stripUsageChunk: true });
    const first = chunk('a') + chunk('b');
    const outputs = feed(first, chunk('c') + usageChunk + 'data: [DONE]\n\n');
    expect(outputs).toEqual([first, `${chunk('c')}data: [DONE]\n\n`, null]);
    expect(seen.usage).toEqual([{ inputTokens: 11, outputTokens: 5 }]);
  });

  it('keeps the usage chunk the client asked for, byte for byte', () => {
    const { seen, feed } = relayOf({ stripUsageChunk: false });
    const text = chunk('a') + usageChunk + 'data: [DONE]\n\n';
    expect(feed(text)).toEqual([text, null]);
    expect(seen.usage).toEqual([{ inputTokens: 11, outputTokens: 5 }]);
  });

  it('removes usage from content chunks that carry it (continuous usage stats), keeping the line endings', () => {
    const { seen, feed } = relayOf({ stripUsageChunk: true });
    const withUsage = chunk('a', ',"usage":{"prompt_tokens":1,"completion_tokens":1}').replace(/\n/g, '\r\n');
    const [out] = feed(withUsage);
    expect(out).toBe(chunk('a').replace(/\n/g, '\r\n'));
    expect(seen.usage).toEqual([{ inputTokens: 1, outputTokens: 1 }]);
  });

  it('Responses: the id from response.created and usage from response.completed, event lines kept', () => {
    const { seen, feed } = relayOf({ kind: 'responses' });
    const created = 'event: response.created\ndata: {"type":"response.created","response":{"id":"resp_1","model":"m","usage":null}}\n\n';
    const delta = 'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":"hi \\"response.created\\""}\n\n';
    const completed = 'event: response.completed\ndata: {"type":"response.completed","response":{"id":"resp_1","usage":{"input_tokens":4,"output_tokens":6}}}\n\n';
    expect(feed(created + delta, completed)).toEqual([created + delta, completed, null]);
    expect(seen.ids).toEqual(['resp_1']);
    expect(seen.usage).toEqual([{ inputTokens: 4, outputTokens: 6 }]);
  });

  it('an event that is not JSON, or is JSON null, passes untouched', () => {
    const { feed } = relayOf({ stripUsageChunk: true });
    const text = 'data: "usage" is not an object\n\ndata: null\n\n';
    expect(feed(text)).toEqual([text, null]);
  });
});

describe('createSseRelay when renaming or when every event is wanted: events parsed and written anew', () => {
  it('renames the model in every event, hides the usage chunk, one string per read', () => {
    const { seen, feed } = relayOf({ publicModel: 'public', upstreamModel: 'up', stripUsageChunk: true });
    const outputs = feed(chunk('a') + chunk('b').slice(0, 20), chunk('b').slice(20) + usageChunk + ': ping\n\ndata: [DONE]\n\n');
    expect(outputs[0]).toBe(chunk('a').replace('"model":"up"', '"model":"public"'));
    expect(outputs[1]).toBe(`${chunk('b').replace('"model":"up"', '"model":"public"')}:ping\n\ndata: [DONE]\n\n`);
    expect(outputs[2]).toBeNull();
    expect(seen.usage).toEqual([{ inputTokens: 11, outputTokens: 5 }]);
  });

  it('onEventData sees the data of every event', () => {
    const data: string[] = [];
    const { feed } = relayOf({ kind: 'other', onEventData: (d) => data.push(d) });
    const text = 'event: thread.run.created\ndata: {"id":"run_1"}\n\ndata: {"id":"msg_1"}\n\n';
    expect(feed(text)).toEqual([text, null]);
    expect(data).toEqual(['{"id":"run_1"}', '{"id":"msg_1"}']);
  });
});

// What OpenAI and Azure send with include_usage on: `"usage":null` on every chunk but the last, and
// (Azure) a first chunk with empty choices and prompt_filter_results.
const realChunk = (delta: string) => `data: {"id":"c","object":"chat.completion.chunk","model":"up","choices":[{"index":0,"delta":{"content":"${delta}"}}],"usage":null}\n\n`;
const azureFilterChunk = 'data: {"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[{"prompt_index":0,"content_filter_results":{"hate":{"filtered":false,"severity":"safe"}}}],"usage":null}\n\n';

describe('createSseRelay with usage: null on every chunk (OpenAI, Azure)', () => {
  it('passes content chunks with usage: null byte for byte, even when the usage chunk is hidden', () => {
    const { seen, feed } = relayOf({ stripUsageChunk: true });
    const content = realChunk('a') + realChunk('b');
    expect(feed(content, usageChunk + 'data: [DONE]\n\n')).toEqual([content, 'data: [DONE]\n\n', null]);
    expect(seen.usage).toEqual([{ inputTokens: 11, outputTokens: 5 }]);
  });

  it('keeps an Azure prompt_filter_results chunk (empty choices, usage null)', () => {
    const { seen, feed } = relayOf({ stripUsageChunk: true });
    const text = azureFilterChunk + realChunk('a');
    expect(feed(text, usageChunk)).toEqual([text, null, null]);
    expect(seen.usage).toEqual([{ inputTokens: 11, outputTokens: 5 }]);
  });

  it('the same when renaming (every event parsed): usage null is left, the filter chunk kept', () => {
    const { feed } = relayOf({ stripUsageChunk: true, publicModel: 'public' });
    const [out, last] = feed(azureFilterChunk + realChunk('a') + usageChunk);
    const events = String(out).split('\n\n').filter(Boolean).map((e) => JSON.parse(e.slice('data: '.length)));
    expect(events).toHaveLength(2);
    expect(events[0].prompt_filter_results).toBeDefined();
    expect(events[1]).toMatchObject({ model: 'public', usage: null });
    expect(last).toBeNull();
  });

  it('onlyNullUsage tells null usage from a value, with or without spaces, in bytes and text', () => {
    for (const text of ['{"usage":null}', '{"usage" : null,"x":1}', '{"a":1}']) {
      expect(onlyNullUsage(text)).toBe(true);
      expect(onlyNullUsage(Buffer.from(text))).toBe(true);
    }
    for (const text of ['{"usage":{"prompt_tokens":1}}', '{"usage":null,"response":{"usage":{"input_tokens":1}}}', '{"x":"usage","usage":0}']) {
      expect(onlyNullUsage(text)).toBe(false);
      expect(onlyNullUsage(Buffer.from(text))).toBe(false);
    }
  });
});
