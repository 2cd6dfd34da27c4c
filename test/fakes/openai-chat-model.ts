// A deterministic chat model behind the OpenAI-compatible fake (FakeBehaviour.respond): it answers
// from the request, as the Anthropic, Gemini and Bedrock fakes do, so a test of a translation cannot
// pass on a canned answer. Chat Completions wire format, JSON and SSE (OpenAI's chunk shapes: the role
// first, tool calls opened with id and name then argument fragments, the finish reason alone, the
// usage chunk last when asked for, [DONE]).
// - it replies `You said: <last user text>`, or after tool messages `Tool results: <their texts joined by "; ">`;
// - with tools offered (tool_choice not none), it calls each tool whose name appears in the last user
//   text, with arguments built from the tool's schema (strings = the last user text, numbers = its
//   length, booleans true), in OpenAI's `call_…` ids;
// - with reasoning_effort set, it first reasons `Thinking about: <last user text>` in `reasoning_content`
//   (as DeepSeek, vLLM and other OpenAI-compatible servers stream it);
// - usage: prompt_tokens = words of all message text, completion_tokens = words of the reply and reasoning.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FakeUpstream } from './upstream.ts';

type Json = Record<string, any>;

interface Planned {
  reasoning: string;
  text: string;
  calls: Array<{ id: string; name: string; arguments: string }>;
}

const words = (text: string) => text.split(/\s+/).filter(Boolean).length;

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.filter((p) => p?.type === 'text').map((p) => String(p.text)).join(' ');
}

function argumentsFor(schema: Json | undefined, userText: string): Json {
  const out: Json = {};
  for (const [name, property] of Object.entries((schema?.properties ?? {}) as Record<string, Json>)) {
    out[name] = property.type === 'number' || property.type === 'integer' ? userText.length : property.type === 'boolean' ? true : userText;
  }
  return out;
}

export function planChat(request: Json): Planned {
  const messages = (request.messages ?? []) as Json[];
  const lastUser = textOf([...messages].reverse().find((m) => m.role === 'user')?.content);
  const trailingTools: string[] = [];
  for (let i = messages.length - 1; i >= 0 && messages[i].role === 'tool'; i--) trailingTools.unshift(textOf(messages[i].content));
  const reasoning = request.reasoning_effort ? `Thinking about: ${lastUser}` : '';
  if (trailingTools.length > 0) return { reasoning, text: `Tool results: ${trailingTools.join('; ')}`, calls: [] };
  const offered = request.tool_choice === 'none' ? [] : ((request.tools ?? []) as Json[]);
  const calls = offered
    .filter((tool) => lastUser.includes(tool.function.name))
    .map((tool, i) => ({ id: `call_fake${i}${tool.function.name}`, name: tool.function.name, arguments: JSON.stringify(argumentsFor(tool.function.parameters, lastUser)) }));
  return { reasoning, text: calls.length > 0 ? '' : `You said: ${lastUser}`, calls };
}

function usageOf(request: Json, plan: Planned) {
  const prompt = ((request.messages ?? []) as Json[]).reduce((sum, m) => sum + words(textOf(m.content)), 0);
  const completion = words(plan.text) + words(plan.reasoning) + plan.calls.length;
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

/** `text` in about `n` pieces, split by characters (words and JSON tokens cut). */
function pieces(text: string, n: number): string[] {
  const size = Math.max(1, Math.ceil(text.length / n));
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

/** The respond hook: reads the request the fake recorded last (the one being answered). */
export function chatModel(fake: FakeUpstream) {
  return (_req: IncomingMessage, res: ServerResponse): void => {
    const request = JSON.parse(fake.requests.at(-1)!.body) as Json;
    const plan = planChat(request);
    const finish = plan.calls.length > 0 ? 'tool_calls' : 'stop';
    const usage = usageOf(request, plan);
    const base = { id: 'chatcmpl-model', object: 'chat.completion.chunk', created: 1, model: request.model };
    if (request.stream !== true) {
      const message: Json = { role: 'assistant', content: plan.text || null, refusal: null };
      if (plan.reasoning) message.reasoning_content = plan.reasoning;
      if (plan.calls.length > 0) message.tool_calls = plan.calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } }));
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ ...base, object: 'chat.completion', choices: [{ index: 0, message, logprobs: null, finish_reason: finish }], usage }));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const send = (choices: Json[], extra: Json = {}) => res.write(`data: ${JSON.stringify({ ...base, choices, ...extra })}\n\n`);
    const delta = (d: Json) => send([{ index: 0, delta: d, finish_reason: null }]);
    delta({ role: 'assistant', content: '' });
    for (const piece of plan.reasoning ? pieces(plan.reasoning, 2) : []) delta({ reasoning_content: piece });
    for (const piece of plan.text ? pieces(plan.text, 3) : []) delta({ content: piece });
    plan.calls.forEach((call, index) => {
      delta({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] });
      for (const piece of pieces(call.arguments, 3)) delta({ tool_calls: [{ index, function: { arguments: piece } }] });
    });
    send([{ index: 0, delta: {}, finish_reason: finish }]);
    if (request.stream_options?.include_usage) send([], { usage });
    res.end('data: [DONE]\n\n');
  };
}
