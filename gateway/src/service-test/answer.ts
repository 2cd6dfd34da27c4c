// What service-test says. Deterministic rules, documented in docs/service-test.md:
// - after tool results, it answers in text that quotes them;
// - with tools offered, it calls the tools the last user message mentions (tool_choice permitting),
//   with arguments built to validate against each tool's JSON Schema;
// - otherwise it answers in text (or JSON, for response_format) describing what it received,
//   images included.
import { createHash } from 'node:crypto';
import type { Answer, Conversation, ToolCall, ToolSpec, Turn } from './conversation.ts';
import { sampleFromSchema } from './json-sample.ts';
import { describeForHumans } from './vision.ts';

/** Words too common in function names to signal that the user asked for one. */
const GENERIC_WORDS = new Set(['get', 'set', 'list', 'create', 'update', 'delete', 'fetch', 'find', 'search', 'make', 'current', 'data', 'info', 'tool', 'function', 'call', 'lookup', 'query', 'with', 'from', 'that', 'this', 'user']);

export function answerConversation(conversation: Conversation): Answer {
  const last = conversation.turns[conversation.turns.length - 1];
  if (last?.role === 'tool') return { kind: 'text', text: formatText(conversation, summariseToolResults(conversation.turns)) };
  const calls = chooseToolCalls(conversation);
  if (calls.length > 0) return { kind: 'tool_calls', calls };
  return { kind: 'text', text: formatText(conversation, describeConversation(conversation)) };
}

function lastUserText(turns: Turn[]): string {
  for (let i = turns.length - 1; i >= 0; i--) {
    const turn = turns[i];
    if (turn.role === 'user') return turn.text;
  }
  return '';
}

function mentions(tool: ToolSpec, text: string): boolean {
  const lower = text.toLowerCase();
  if (lower.includes(tool.name.toLowerCase())) return true;
  if (lower.includes(tool.name.toLowerCase().replace(/[_-]+/g, ' '))) return true;
  const words = tool.name
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w.length >= 4 && !GENERIC_WORDS.has(w));
  return words.some((w) => new RegExp(`\\b${w}`).test(lower));
}

function chooseToolCalls(conversation: Conversation): ToolCall[] {
  const { tools, toolChoice } = conversation;
  if (tools.length === 0 || toolChoice === 'none') return [];
  const text = lastUserText(conversation.turns);
  let chosen: ToolSpec[];
  if (typeof toolChoice === 'object') chosen = tools.filter((t) => t.name === toolChoice.name);
  else {
    chosen = tools.filter((t) => mentions(t, text));
    if (chosen.length === 0 && toolChoice === 'required') chosen = [tools[0]];
  }
  if (!conversation.parallelToolCalls) chosen = chosen.slice(0, 1);
  return chosen.map((tool, index) => {
    const args = JSON.stringify(sampleFromSchema(tool.parameters, { text }));
    return { id: `call_${createHash('sha256').update(`${conversation.turns.length}:${index}:${tool.name}:${args}`).digest('hex').slice(0, 24)}`, name: tool.name, arguments: args };
  });
}

function summariseToolResults(turns: Turn[]): string {
  const results: string[] = [];
  const names = new Map<string, string>();
  for (const turn of turns) if (turn.role === 'assistant') for (const call of turn.toolCalls) names.set(call.id, call.name);
  let quoted = 0;
  for (let i = turns.length - 1; i >= 0 && turns[i].role === 'tool'; i--) {
    const turn = turns[i] as Extract<Turn, { role: 'tool' }>;
    // The answer quotes a bounded number of bounded results: its length, and the work of tokenising
    // and streaming it, must not grow with what the client sent.
    if (++quoted > MAX_QUOTED_RESULTS) {
      results.unshift('(earlier results not quoted)');
      break;
    }
    results.unshift(`${clip(names.get(turn.toolCallId) ?? turn.toolCallId, 100)} returned ${clip(turn.text, MAX_QUOTE_CHARS)}`);
  }
  return `Based on the tool results: ${results.join('; ')}.`;
}

const MAX_QUOTE_CHARS = 500;
const MAX_QUOTED_RESULTS = 16;

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

function describeConversation(conversation: Conversation): string {
  const { turns } = conversation;
  const text = lastUserText(turns);
  const sentences = ["This is service-test, Tollgate's built-in model."];
  sentences.push(text ? `You wrote: "${clip(text, MAX_QUOTE_CHARS)}".` : 'Your last message had no text.');
  let lastUser: Extract<Turn, { role: 'user' }> | undefined;
  for (const turn of turns) if (turn.role === 'user') lastUser = turn;
  lastUser?.images.forEach((image, i) => sentences.push(describeForHumans(image, i + 1)));
  const counts = new Map<string, number>();
  for (const turn of turns) counts.set(turn.role, (counts.get(turn.role) ?? 0) + 1);
  const parts = [...counts].map(([role, n]) => `${n} ${role}`);
  sentences.push(`The conversation has ${turns.length} message${turns.length === 1 ? '' : 's'} (${parts.join(', ')}).`);
  return sentences.join(' ');
}

function formatText(conversation: Conversation, prose: string): string {
  const { format } = conversation;
  if (format.type === 'json_object') return JSON.stringify({ answer: prose });
  if (format.type === 'json_schema') return JSON.stringify(sampleFromSchema(format.schema, { text: lastUserText(conversation.turns) }));
  return prose;
}
