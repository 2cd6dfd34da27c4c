// Claude on the fake Vertex AI (fakes/gemini.ts): Vertex serves Anthropic's models with Anthropic's
// Messages API behind Google's front door, and so does the fake. Google's side (the Bearer token,
// a scripted quota error) is checked by the Vertex fake before this runs; this checks what Vertex's
// Claude endpoints add to Anthropic's rules and hands the request to a fake Anthropic
// (fakes/anthropic.ts) for Anthropic's semantics, answers and error envelope:
// - paths `…/publishers/anthropic/models/{model}:rawPredict` (JSON) and `:streamRawPredict` (SSE),
//   and `…/publishers/anthropic/models/count-tokens:rawPredict` (the model in the body);
// - no `model` in a message body (the path names it): 400 "model: Extra inputs are not permitted",
//   as Vertex's Claude answers for any field it does not take;
// - `anthropic_version` in the body, required: Vertex's `vertex-2023-10-16`, or an Anthropic API
//   version date (which the official @anthropic-ai/vertex-sdk copies there from its header); anything
//   else (Bedrock's `bedrock-2023-05-31`, a typo) is refused;
// - `stream: true` only on `:streamRawPredict`, and `:streamRawPredict` only with it (stricter than
//   Vertex documents, so that the gateway sends the pairing Google's and Anthropic's clients send);
// - the model id's `@` version (`claude-sonnet-4-5@20250929`) is Anthropic's dated id
//   (`claude-sonnet-4-5-20250929`), which the answers name, as Vertex's do.
import type { IncomingMessage, ServerResponse } from 'node:http';

export const VERTEX_CLAUDE_PATH = /^\/v1\/projects\/([^/]+)\/locations\/([^/]+)\/publishers\/anthropic\/models\/([^/:]+):(\w+)$/;

/** The fake Anthropic that answers for Claude on the fake Vertex. */
export interface ClaudeBackend {
  url: string;
  apiKey: string;
}

const VERSION = /^(vertex-2023-10-16|\d{4}-\d{2}-\d{2})$/;

function refuse(res: ServerResponse, status: number, type: string, message: string): void {
  const text = JSON.stringify({ type: 'error', error: { type, message }, request_id: `req_vrtx_fake${Date.now()}` });
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

export async function serveClaude(req: IncomingMessage, res: ServerResponse, match: RegExpExecArray, body: unknown, backend: ClaudeBackend | undefined): Promise<void> {
  const model = decodeURIComponent(match[3]!);
  const method = match[4];
  if (!backend) return refuse(res, 404, 'not_found_error', `Publisher model projects/${match[1]}/locations/${match[2]}/publishers/anthropic/models/${model} not found.`);
  if (method !== 'rawPredict' && method !== 'streamRawPredict') return refuse(res, 404, 'not_found_error', `Method ${method} is not found.`);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return refuse(res, 400, 'invalid_request_error', 'The request body is not valid JSON.');
  const json = { ...(body as Record<string, unknown>) };
  const version = json.anthropic_version;
  if (version === undefined) return refuse(res, 400, 'invalid_request_error', 'anthropic_version: Field required');
  if (typeof version !== 'string' || !VERSION.test(version)) return refuse(res, 400, 'invalid_request_error', `anthropic_version: Input should be 'vertex-2023-10-16'`);
  delete json.anthropic_version;
  const counting = model === 'count-tokens';
  if (!counting) {
    if ('model' in json) return refuse(res, 400, 'invalid_request_error', 'model: Extra inputs are not permitted');
    const streamed = json.stream === true;
    if (streamed !== (method === 'streamRawPredict')) return refuse(res, 400, 'invalid_request_error', streamed ? 'stream: true needs :streamRawPredict' : ':streamRawPredict needs stream: true');
    json.model = model.replace('@', '-');
  } else if (typeof json.model === 'string') {
    json.model = json.model.replace('@', '-');
  }
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'x-api-key': backend.apiKey,
    'anthropic-version': version.startsWith('vertex-') ? '2023-06-01' : version,
  };
  const beta = req.headers['anthropic-beta'];
  if (typeof beta === 'string') headers['anthropic-beta'] = beta;
  const answer = await fetch(`${backend.url}/v1/messages${counting ? '/count_tokens' : ''}`, { method: 'POST', headers, body: JSON.stringify(json) });
  res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' });
  if (!answer.body) return void res.end();
  const reader = answer.body.getReader();
  // Relayed as the fake Anthropic writes it, chunk by chunk (a cut stays a cut, a pause a pause).
  const stop = () => void reader.cancel().catch(() => {});
  res.once('close', stop);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (!res.write(value)) await new Promise((resolve) => res.once('drain', resolve));
    }
  } catch {
    return void res.destroy();
  }
  res.end();
}
