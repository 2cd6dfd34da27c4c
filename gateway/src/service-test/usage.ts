// Token accounting for service-test, with a real tokenizer (o200k_base) and OpenAI's documented
// chat framing. Tool definitions are counted as their JSON text: an approximation, since OpenAI's
// internal rendering of tools is not published.
import type { Conversation, Turn } from './conversation.ts';
import { IMAGE_TOKENS, MESSAGE_OVERHEAD, REPLY_PRIMING, TokenTally } from './tokens.ts';

function turnTokens(turn: Turn, tally: TokenTally): number {
  let tokens = MESSAGE_OVERHEAD + tally.count(turn.role) + tally.count(turn.text);
  if (turn.role === 'user') tokens += turn.images.length * IMAGE_TOKENS;
  if (turn.role === 'assistant') for (const call of turn.toolCalls) tokens += tally.count(call.name) + tally.count(call.arguments);
  return tokens;
}

/** The whole conversation shares one tally: its exact tokenisation is bounded however long it is. */
export function countPromptTokens(conversation: Conversation): number {
  const tally = new TokenTally();
  let tokens = REPLY_PRIMING;
  for (const turn of conversation.turns) tokens += turnTokens(turn, tally);
  if (conversation.tools.length > 0) tokens += tally.count(JSON.stringify(conversation.tools));
  return tokens;
}
