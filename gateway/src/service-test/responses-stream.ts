// A Response as OpenAI streams it: `event: <type>` plus `data: <json>` per event, every event with its
// `type` and a `sequence_number` counting from 0, and no [DONE]. The order is the one the SDK's
// responses.stream() accumulator depends on: response.created first, then for each output item
// `output_item.added` before any delta at its index, its `done` events, and finally
// response.completed (or response.incomplete) carrying the whole response with usage.
// The events are derived from the finished Response object, so a stored response can be replayed
// (GET /v1/responses/:id?stream=true) with exactly the events the original stream had.
import type { SseStream } from '../http/sse.ts';
import { fragments } from './chat-completion.ts';
import type { FunctionCallItem, MessageItem, OutputItem, OutputText, ResponseObject } from './responses-object.ts';

export type ResponseEvent = { type: string } & Record<string, unknown>;

const ARGUMENT_CHUNK = /[\s\S]{1,16}/g;

export function* responseEvents(response: ResponseObject): Generator<ResponseEvent> {
  const inProgress: ResponseObject = { ...response, status: 'in_progress', completed_at: null, incomplete_details: null, output: [], usage: null };
  yield { type: 'response.created', response: inProgress };
  yield { type: 'response.in_progress', response: inProgress };
  for (const [outputIndex, item] of response.output.entries()) {
    if (item.type === 'message') yield* messageEvents(item, outputIndex);
    else yield* functionCallEvents(item, outputIndex);
  }
  yield { type: response.status === 'incomplete' ? 'response.incomplete' : 'response.completed', response };
}

function* messageEvents(item: MessageItem, outputIndex: number): Generator<ResponseEvent> {
  const itemId = item.id;
  yield { type: 'response.output_item.added', output_index: outputIndex, item: { ...item, status: 'in_progress', content: [] } satisfies OutputItem };
  for (const [contentIndex, part] of item.content.entries()) {
    const at = { item_id: itemId, output_index: outputIndex, content_index: contentIndex };
    yield { type: 'response.content_part.added', ...at, part: { ...part, text: '' } satisfies OutputText };
    for (const delta of fragments(part.text)) yield { type: 'response.output_text.delta', ...at, delta, logprobs: [] };
    yield { type: 'response.output_text.done', ...at, text: part.text, logprobs: [] };
    yield { type: 'response.content_part.done', ...at, part };
  }
  yield { type: 'response.output_item.done', output_index: outputIndex, item };
}

function* functionCallEvents(item: FunctionCallItem, outputIndex: number): Generator<ResponseEvent> {
  const at = { item_id: item.id, output_index: outputIndex };
  yield { type: 'response.output_item.added', output_index: outputIndex, item: { ...item, status: 'in_progress', arguments: '' } satisfies OutputItem };
  for (const delta of item.arguments.match(ARGUMENT_CHUNK) ?? []) yield { type: 'response.function_call_arguments.delta', ...at, delta };
  yield { type: 'response.function_call_arguments.done', ...at, name: item.name, arguments: item.arguments };
  yield { type: 'response.output_item.done', output_index: outputIndex, item };
}

/**
 * Sends the events after `startingAfter` (a sequence number; -1 for all) and ends the stream.
 * A failure after the first byte can only be reported in-band: an `error` event that also carries
 * an `error` object, which is what makes the SDK throw instead of returning a half response.
 */
export async function streamResponse(sse: SseStream, response: ResponseObject, startingAfter = -1): Promise<void> {
  let sequenceNumber = 0;
  try {
    for (const event of responseEvents(response)) {
      if (!sse.open) return;
      const numbered = { ...event, sequence_number: sequenceNumber++ };
      if (numbered.sequence_number > startingAfter) await sse.send(numbered, event.type);
    }
  } catch (error) {
    const failure = { message: 'The stream failed; retry the request.', type: 'server_error', param: null, code: 'internal_error' };
    await sse.send({ type: 'error', sequence_number: sequenceNumber, code: failure.code, message: failure.message, param: null, error: failure }, 'error');
    throw error;
  } finally {
    sse.end();
  }
}
