// OpenAI embeddings from Google. The Gemini API embeds a batch in one call (`batchEmbedContents`, one
// vector an input in request order, at most 100 a call, no token count). Vertex AI's `:predict`
// serves every Google embedding model and reports each input's token count; `gemini-embedding-*`
// models take one input a call there, the others up to 250. `dimensions` is Google's
// `outputDimensionality`; `encoding_format: "base64"` is done here (float32 little-endian, as OpenAI).
import { ApiError } from '../../http/errors.ts';
import type { AnswerContext, EmbeddingsTranslation, OpenAIBody, ProviderRequest, ProviderRequestContext } from '../provider.ts';
import { modelPath, type GoogleSurface } from './variant.ts';

const GEMINI_BATCH = 100;
const VERTEX_BATCH = 250;

function inputs(body: OpenAIBody): string[] {
  const input = body.input;
  if (typeof input === 'string') return [input];
  if (Array.isArray(input) && input.every((item) => typeof item === 'string')) return input as string[];
  throw new ApiError(400, 'unsupported_parameter', 'Google embedding models take text input (a string or an array of strings), not token ids.', { param: 'input' });
}

function chunks<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

function post(path: string, body: unknown): ProviderRequest {
  return { path, method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) };
}

function encode(values: number[], format: unknown): number[] | string {
  if (format !== 'base64') return values;
  const floats = new Float32Array(values);
  // Float32Array is in the platform's byte order; OpenAI's base64 is little-endian, as every platform Node runs on.
  return Buffer.from(floats.buffer, floats.byteOffset, floats.byteLength).toString('base64');
}

export function embeddings(surface: GoogleSurface): EmbeddingsTranslation {
  return {
    requests(body: OpenAIBody, ctx: ProviderRequestContext): ProviderRequest[] {
      const texts = inputs(body);
      const dimensions = typeof body.dimensions === 'number' ? body.dimensions : undefined;
      const base = modelPath(surface, ctx.upstream, ctx.model);
      if (surface === 'gemini') {
        const model = `models/${ctx.model}`;
        return chunks(texts, GEMINI_BATCH).map((batch) =>
          post(`${base}:batchEmbedContents`, {
            requests: batch.map((text) => ({ model, content: { parts: [{ text }] }, ...(dimensions ? { outputDimensionality: dimensions } : {}) })),
          }),
        );
      }
      const size = /gemini-embedding/.test(ctx.model) ? 1 : VERTEX_BATCH;
      return chunks(texts, size).map((batch) =>
        post(`${base}:predict`, { instances: batch.map((content) => ({ content })), ...(dimensions ? { parameters: { outputDimensionality: dimensions } } : {}) }),
      );
    },

    response(answers: unknown[], body: OpenAIBody, ctx: AnswerContext): Record<string, unknown> {
      const vectors: number[][] = [];
      let tokens = 0;
      for (const answer of answers) {
        const a = (answer ?? {}) as { embeddings?: { values?: number[] }[]; predictions?: { embeddings?: { values?: number[]; statistics?: { token_count?: number } } }[] };
        if (surface === 'gemini') for (const embedding of a.embeddings ?? []) vectors.push(embedding.values ?? []);
        else
          for (const prediction of a.predictions ?? []) {
            vectors.push(prediction.embeddings?.values ?? []);
            tokens += prediction.embeddings?.statistics?.token_count ?? 0;
          }
      }
      return {
        object: 'list',
        data: vectors.map((values, index) => ({ object: 'embedding', index, embedding: encode(values, body.encoding_format) })),
        model: ctx.publicModel,
        // The Gemini API reports no token count for embeddings: 0, documented, rather than a guess.
        usage: { prompt_tokens: tokens, total_tokens: tokens },
      };
    },
  };
}
