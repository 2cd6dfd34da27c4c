// service-test embeddings by feature hashing: every word (or token id) owns a seeded pseudo-random
// direction, and an input's vector is the normalised sum of its features' directions. The result is
// deterministic, yet not noise: texts that share words point in similar directions, so a client can
// check its similarity search end to end without paying for a real model.
import { seededRandom, seedOf } from './deterministic.ts';

export const DEFAULT_DIMENSIONS = 1536;
export const MAX_DIMENSIONS = 3072;

const WORD = /[\p{L}\p{N}]+/gu;

/** Lower-cased words; text without any (only punctuation or symbols) is one feature as a whole. */
export function textFeatures(text: string): string[] {
  const words = text.normalize('NFKC').toLowerCase().match(WORD);
  return words ? words.map((w) => `word:${w}`) : [`text:${text}`];
}

export function tokenFeatures(tokens: readonly number[]): string[] {
  return tokens.map((t) => `token:${t}`);
}

/**
 * The unit vector of a list of features. A feature's direction is the first `dimensions` values of
 * its own random stream, so a shorter vector is the renormalised prefix of a longer one, as with
 * OpenAI's `dimensions` parameter. Values are float32, so float and base64 answers carry the same numbers.
 */
export function embedFeatures(features: readonly string[], dimensions: number): Float32Array {
  // Repeated words weigh by their count; each distinct feature's stream is drawn once.
  const counts = new Map<string, number>();
  for (const feature of features) counts.set(feature, (counts.get(feature) ?? 0) + 1);
  const sum = new Float64Array(dimensions);
  for (const [feature, count] of counts) {
    const random = seededRandom(seedOf(feature));
    for (let i = 0; i < dimensions; i++) sum[i] += count * (random() * 2 - 1);
  }
  let norm = 0;
  for (let i = 0; i < dimensions; i++) norm += sum[i] * sum[i];
  norm = Math.sqrt(norm);
  const vector = new Float32Array(dimensions);
  // A zero sum is possible only in theory (features cancelling exactly); fall back to the first axis.
  if (norm === 0) vector[0] = 1;
  else for (let i = 0; i < dimensions; i++) vector[i] = sum[i] / norm;
  return vector;
}

/** Little-endian float32 bytes in base64, the encoding the official SDKs ask for and decode. */
export function toBase64(vector: Float32Array): string {
  const bytes = Buffer.alloc(vector.length * 4);
  for (let i = 0; i < vector.length; i++) bytes.writeFloatLE(vector[i], i * 4);
  return bytes.toString('base64');
}
