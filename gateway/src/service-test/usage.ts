// Token accounting for service-test, with a real tokenizer (o200k_base) and OpenAI's documented
// chat framing. Tool definitions are counted as their JSON text: an approximation, since OpenAI's
// internal rendering of tools is not published.
import type { Conversation, Turn } from './conversation.ts';
import { IMAGE_TOKENS, MESSAGE_OVERHEAD, REPLY_PRIMING, countTokens } from './tokens.ts';

function turnTokens(turn: Turn): number {
  let tokens = MESSAGE_OVERHEAD + countTokens(turn.role) + countTokens(turn.text);
  if (turn.role === 'user') {
    tokens += turn.images.length * IMAGE_TOKENS;
    // A file is priced like a low-detail image per page (an approximation; OpenAI adds the extracted text).
    for (const file of turn.files ?? []) tokens += (file.pages ?? 1) * IMAGE_TOKENS;
  }
  if (turn.role === 'assistant') for (const call of turn.toolCalls) tokens += countTokens(call.name) + countTokens(call.arguments);
  return tokens;
}

export function countPromptTokens(conversation: Conversation): number {
  let tokens = REPLY_PRIMING;
  for (const turn of conversation.turns) tokens += turnTokens(turn);
  if (conversation.tools.length > 0) tokens += countTokens(JSON.stringify(conversation.tools));
  return tokens;
}
