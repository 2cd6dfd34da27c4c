// service-test's Response object: the engine's answer as output items (an assistant message, or
// function_call items), the request's settings echoed back, and usage counted with the engine's
// tokenizer. max_output_tokens cuts a text answer and makes the response "incomplete", as OpenAI does.
import { randomHexId } from './random-ids.ts';
import { answerConversation } from './answer.ts';
import type { Answer, Conversation, ToolCall, Turn } from './conversation.ts';
import type { ResponseSettings, ResponsesRequest } from './responses-request.ts';
import { countTokens, truncateToTokens } from './tokens.ts';
import { countPromptTokens } from './usage.ts';

export type ItemStatus = 'in_progress' | 'completed' | 'incomplete';

export interface OutputText {
  type: 'output_text';
  text: string;
  annotations: never[];
  logprobs: never[];
}

export interface MessageItem {
  type: 'message';
  id: string;
  status: ItemStatus;
  role: 'assistant';
  content: OutputText[];
}

export interface FunctionCallItem {
  type: 'function_call';
  id: string;
  call_id: string;
  name: string;
  arguments: string;
  status: ItemStatus;
}

export type OutputItem = MessageItem | FunctionCallItem;

export interface ResponseUsage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number; cache_write_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

export interface ResponseObject extends ResponseSettings {
  id: string;
  object: 'response';
  created_at: number;
  completed_at: number | null;
  status: ItemStatus;
  background: false;
  error: null;
  incomplete_details: { reason: 'max_output_tokens' } | null;
  model: string;
  output: OutputItem[];
  reasoning: { effort: null; summary: null };
  usage: ResponseUsage | null;
}

/** The response, and the assistant turn it adds to the history a continuation builds on. */
export interface AnsweredResponse {
  response: ResponseObject;
  outputTurn: Turn;
}

function randomId(prefix: string): string {
  return randomHexId(prefix, 24);
}

export function answerResponse(request: ResponsesRequest, conversation: Conversation, model: string): AnsweredResponse {
  const answer = limitToolCalls(answerConversation(conversation), request.settings.max_tool_calls);
  const inputTokens = countPromptTokens(conversation);
  let output: OutputItem[];
  let outputTokens: number;
  let outputTurn: Turn;
  let truncated = false;
  if (answer.kind === 'tool_calls') {
    // Calls are never cut: half a JSON argument list is of no use to anyone, and the engine's
    // arguments are short. Their tokens still count as output.
    output = answer.calls.map(functionCallItem);
    outputTokens = answer.calls.reduce((sum, call) => sum + countTokens(call.name) + countTokens(call.arguments), 0);
    outputTurn = { role: 'assistant', text: '', toolCalls: answer.calls };
  } else {
    let text = answer.text;
    outputTokens = countTokens(text);
    const limit = request.settings.max_output_tokens;
    if (limit !== null) {
      const cut = truncateToTokens(text, limit);
      ({ text, truncated } = cut);
      outputTokens = cut.tokens;
    }
    output = [messageItem(text, truncated ? 'incomplete' : 'completed')];
    outputTurn = { role: 'assistant', text, toolCalls: [] };
  }
  const createdAt = Math.floor(Date.now() / 1000);
  const response: ResponseObject = {
    id: randomId('resp_'),
    object: 'response',
    created_at: createdAt,
    status: truncated ? 'incomplete' : 'completed',
    background: false,
    completed_at: truncated ? null : createdAt,
    error: null,
    incomplete_details: truncated ? { reason: 'max_output_tokens' } : null,
    ...request.settings,
    model,
    output,
    // service-test does no hidden reasoning, whatever `reasoning` asked for.
    reasoning: { effort: null, summary: null },
    usage: {
      input_tokens: inputTokens,
      // service-test caches nothing: no tokens read from a prompt cache, none written to one.
      input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
      output_tokens: outputTokens,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: inputTokens + outputTokens,
    },
  };
  return { response, outputTurn };
}

function limitToolCalls(answer: Answer, max: number | null): Answer {
  if (answer.kind !== 'tool_calls' || max === null) return answer;
  return { kind: 'tool_calls', calls: answer.calls.slice(0, max) };
}

function messageItem(text: string, status: ItemStatus): MessageItem {
  return { type: 'message', id: randomId('msg_'), status, role: 'assistant', content: [{ type: 'output_text', text, annotations: [], logprobs: [] }] };
}

function functionCallItem(call: ToolCall): FunctionCallItem {
  return { type: 'function_call', id: randomId('fc_'), call_id: call.id, name: call.name, arguments: call.arguments, status: 'completed' };
}

/** Rough size of what a stored response keeps, for the store's byte budget. */
export function approximateBytes(response: ResponseObject, history: Turn[]): number {
  let bytes = JSON.stringify(response).length;
  for (const turn of history) {
    bytes += 64 + turn.text.length;
    if (turn.role === 'assistant') for (const call of turn.toolCalls) bytes += 64 + call.name.length + call.arguments.length + call.id.length;
    if (turn.role === 'user') bytes += turn.images.length * 160;
    if (turn.role === 'tool') bytes += turn.toolCallId.length;
  }
  return bytes;
}
