// What the bench sends. The model name tells the fake upstream how to answer (see upstream.ts), so
// the floor, which forwards bytes blindly, and Tollgate receive exactly the same request.
import { randomBytes } from 'node:crypto';
import type { Load } from './load.ts';

export interface Scenario extends Load {
  id: string;
  label: string;
  /** Connections for the throughput runs. */
  connections: number;
  /** Requests per second for the latency runs: moderate, far below saturation. */
  rate: number;
  /**
   * Requests per second each gateway gets in the fixed-rate CPU runs, all gateways at once (run.ts):
   * well below saturation, so each does the same work in the same seconds and CPU per request does
   * not move with how much each gets to batch.
   */
  cpuRate?: number;
  /** Served by the gateway itself (service-test): no floor to compare with. */
  tollgateOnly?: boolean;
}

const SYSTEM = 'You are a helpful assistant. Answer briefly.';

function chat(model: string, extra: Record<string, unknown> = {}): Buffer {
  return Buffer.from(
    JSON.stringify({
      model,
      messages: [
        { role: 'system', content: SYSTEM },
        { role: 'user', content: 'In one sentence, why do people benchmark proxies against a bare pass-through?' },
      ],
      max_tokens: 64,
      ...extra,
    }),
  );
}

/** A chat request carrying an image of about `bytes` bytes as a Data URL (base64 of random bytes). */
function vision(model: string, bytes: number): Buffer {
  const data = randomBytes(Math.floor((bytes * 3) / 4)).toString('base64');
  return Buffer.from(
    JSON.stringify({
      model,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is in this image?' },
            { type: 'image_url', image_url: { url: `data:image/png;base64,${data}` } },
          ],
        },
      ],
      max_tokens: 64,
    }),
  );
}

/** Every public model the Tollgate manifests must define (the upstream name is the same). */
export const BENCH_MODELS = ['bench', 'bench-d50', 'bench-c64-i20', 'bench-c100-i50', 'bench-embed', 'bench-claude'];

export function scenarios(): Scenario[] {
  return [
    { id: 'chat', label: 'chat', path: '/v1/chat/completions', body: chat('bench'), connections: 50, rate: 200, cpuRate: 300 },
    { id: 'stream20', label: 'chat stream, 20 chunks', path: '/v1/chat/completions', body: chat('bench', { stream: true }), streamChunks: 20, connections: 50, rate: 100, cpuRate: 150 },
    { id: 'stream64', label: 'chat stream, 64 chunks 20 ms apart', path: '/v1/chat/completions', body: chat('bench-c64-i20', { stream: true }), streamChunks: 64, connections: 200, rate: 50 },
    { id: 'embeddings', label: 'embeddings (1536 floats)', path: '/v1/embeddings', body: Buffer.from(JSON.stringify({ model: 'bench-embed', input: 'The quick brown fox jumps over the lazy dog.' })), connections: 50, rate: 200, cpuRate: 300 },
    { id: 'delay', label: 'chat, upstream 50 ms delay', path: '/v1/chat/completions', body: chat('bench-d50'), connections: 50, rate: 200, cpuRate: 150 },
    { id: 'vision', label: 'chat with a 5 MB image', path: '/v1/chat/completions', body: vision('bench', 5 * 1024 * 1024), connections: 8, rate: 10 },
    // Translated: the same chat request to a model on an Anthropic upstream (the fake's /v1/messages).
    // The floor proxy sends it to the fake's OpenAI path, so its column is the untranslated pass-through.
    { id: 'translated', label: 'chat translated to Anthropic', path: '/v1/chat/completions', body: chat('bench-claude'), connections: 50, rate: 200, cpuRate: 300 },
    { id: 'translated-stream', label: 'chat stream translated to Anthropic, 20 chunks', path: '/v1/chat/completions', body: chat('bench-claude', { stream: true }), streamChunks: 20, connections: 50, rate: 100, cpuRate: 150 },
    { id: 'service-test', label: 'service-test chat (gateway answers)', path: '/v1/chat/completions', body: chat('service-test'), connections: 50, rate: 200, cpuRate: 300, tollgateOnly: true },
  ];
}

/** The 1,000-streams check: long enough (100 chunks 50 ms apart, 5 s) that all are open at once. */
export function longStream(): Load {
  return { path: '/v1/chat/completions', body: chat('bench-c100-i50', { stream: true }), streamChunks: 100 };
}
