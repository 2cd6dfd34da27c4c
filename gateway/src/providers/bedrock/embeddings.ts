// OpenAI embeddings → InvokeModel on Bedrock's embedding models. Titan Text Embeddings v2 embeds one
// text a call, so an array input fans out to one request per text; Cohere Embed takes batches (up to
// 96 texts a call on Bedrock). `encoding_format: base64` is done here (float32 little-endian, as
// OpenAI does), since Titan's own "binary" type is quantised bits, a different thing.
import { ApiError } from '../../http/errors.ts';
import type { AnswerContext, EmbeddingsTranslation, OpenAIBody, ProviderRequest, ProviderRequestContext } from '../provider.ts';
import { modelPath } from './request.ts';

const COHERE_BATCH = 96;
const COHERE_INPUT_TYPES = new Set(['search_document', 'search_query', 'classification', 'clustering']);

type Family = 'titan' | 'cohere';

function family(model: string): Family {
  if (/amazon\.titan-embed-text/.test(model)) return 'titan';
  if (/cohere\.embed-/.test(model)) return 'cohere';
  throw new ApiError(400, 'unsupported_model', `Embeddings on Amazon Bedrock support Titan Text Embeddings (amazon.titan-embed-text-*) and Cohere Embed (cohere.embed-*), not ${model}.`, { param: 'model' });
}

function texts(input: unknown): string[] {
  if (typeof input === 'string') return [input];
  if (Array.isArray(input) && input.length > 0 && input.every((item) => typeof item === 'string')) return input as string[];
  throw new ApiError(400, 'unsupported_value', 'Amazon Bedrock embeds text: input must be a string or an array of strings (token arrays are not supported).', { param: 'input' });
}

function invoke(model: string, payload: Record<string, unknown>): ProviderRequest {
  return { path: modelPath(model, 'invoke'), method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify(payload) };
}

function requests(body: OpenAIBody, ctx: ProviderRequestContext): ProviderRequest[] {
  const inputs = texts(body.input);
  if (family(ctx.model) === 'titan') {
    return inputs.map((inputText) => invoke(ctx.model, body.dimensions === undefined ? { inputText } : { inputText, dimensions: body.dimensions }));
  }
  const inputType = body.input_type ?? 'search_query';
  if (typeof inputType !== 'string' || !COHERE_INPUT_TYPES.has(inputType)) {
    throw new ApiError(400, 'invalid_value', `input_type must be one of ${[...COHERE_INPUT_TYPES].join(', ')}.`, { param: 'input_type' });
  }
  if (body.dimensions !== undefined && !/cohere\.embed-v4/.test(ctx.model)) {
    throw new ApiError(400, 'unsupported_parameter', `dimensions is supported only by Cohere Embed v4 on Amazon Bedrock, not ${ctx.model}.`, { param: 'dimensions' });
  }
  const calls: ProviderRequest[] = [];
  for (let start = 0; start < inputs.length; start += COHERE_BATCH) {
    const payload: Record<string, unknown> = { texts: inputs.slice(start, start + COHERE_BATCH), input_type: inputType, embedding_types: ['float'] };
    if (body.dimensions !== undefined) payload.output_dimension = body.dimensions;
    calls.push(invoke(ctx.model, payload));
  }
  return calls;
}

function vectorsOf(answer: unknown): { vectors: number[][]; tokens: number } {
  const record = answer as Record<string, any> | null;
  if (Array.isArray(record?.embedding)) return { vectors: [record.embedding], tokens: Number(record.inputTextTokenCount ?? 0) };
  const embeddings = record?.embeddings;
  if (Array.isArray(embeddings)) return { vectors: embeddings, tokens: 0 };
  if (Array.isArray(embeddings?.float)) return { vectors: embeddings.float, tokens: 0 };
  throw new ApiError(502, 'upstream_invalid_response', 'Amazon Bedrock answered an embeddings call without embeddings.', { type: 'server_error' });
}

function base64Of(vector: number[]): string {
  const bytes = Buffer.allocUnsafe(vector.length * 4);
  vector.forEach((value, i) => bytes.writeFloatLE(value, i * 4));
  return bytes.toString('base64');
}

function response(answers: unknown[], body: OpenAIBody, ctx: AnswerContext): Record<string, unknown> {
  const data: Array<Record<string, unknown>> = [];
  let tokens = 0;
  for (const answer of answers) {
    const { vectors, tokens: counted } = vectorsOf(answer);
    tokens += counted;
    for (const vector of vectors) {
      data.push({ object: 'embedding', index: data.length, embedding: body.encoding_format === 'base64' ? base64Of(vector) : vector });
    }
  }
  return { object: 'list', data, model: ctx.publicModel, usage: { prompt_tokens: tokens, total_tokens: tokens } };
}

export const embeddings: EmbeddingsTranslation = { requests, response };
