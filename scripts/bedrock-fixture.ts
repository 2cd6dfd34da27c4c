// Writes test/fixtures/providers/bedrock/tool-stream/upstream-response.bin: the ConverseStream of
// providers.md Appendix D (text, then two tool calls in blocks 1 and 2, messageStop, metadata), as
// AWS frames it, padding field `p` included. Run: node scripts/bedrock-fixture.ts
import { writeFileSync } from 'node:fs';
import { encodeMessage } from '../gateway/src/providers/bedrock/frames.ts';

const events: Array<[string, Record<string, unknown>]> = [
  ['messageStart', { role: 'assistant' }],
  ['contentBlockDelta', { contentBlockIndex: 0, delta: { text: "I'll call both tools." } }],
  ['contentBlockStop', { contentBlockIndex: 0 }],
  ['contentBlockStart', { contentBlockIndex: 1, start: { toolUse: { toolUseId: 'tooluse_kZJMlvQmRJ6eAyJE5GIl7Q', name: 'top_song' } } }],
  ['contentBlockDelta', { contentBlockIndex: 1, delta: { toolUse: { input: '{"sign":' } } }],
  ['contentBlockDelta', { contentBlockIndex: 1, delta: { toolUse: { input: '"WZPZ"}' } } }],
  ['contentBlockStop', { contentBlockIndex: 1 }],
  ['contentBlockStart', { contentBlockIndex: 2, start: { toolUse: { toolUseId: 'tooluse_a8Xq2', name: 'hello' } } }],
  ['contentBlockDelta', { contentBlockIndex: 2, delta: { toolUse: { input: '{"sign":"world"}' } } }],
  ['contentBlockStop', { contentBlockIndex: 2 }],
  ['contentBlockStart', { contentBlockIndex: 3, start: { toolUse: { toolUseId: 'tooluse_noargs', name: 'now' } } }],
  ['contentBlockStop', { contentBlockIndex: 3 }],
  ['messageStop', { stopReason: 'tool_use' }],
  ['metadata', { usage: { inputTokens: 150, outputTokens: 45, totalTokens: 215, cacheReadInputTokens: 20 }, metrics: { latencyMs: 812 } }],
];

const frames = events.map(([type, payload], i) =>
  encodeMessage({ ':event-type': type, ':content-type': 'application/json', ':message-type': 'event' }, { ...payload, p: 'abcdefghijklmnopqrstuvwxyz'.slice(0, 3 + i) }),
);
writeFileSync(new URL('../test/fixtures/providers/bedrock/tool-stream/upstream-response.bin', import.meta.url), Buffer.concat(frames));
