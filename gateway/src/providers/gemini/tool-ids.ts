// Gemini 3 signs its reasoning: the first function call of a turn carries a `thoughtSignature` that
// must come back, on that call, when the history is replayed. OpenAI clients keep nothing but the
// tool call's `id`, so the signature travels inside it (`<id>__thought__<signature>`, as LiteLLM and
// agentgateway do) and is taken out again when the client sends the history back.

const SEPARATOR = '__thought__';

/** Google's documented value for a replayed call whose signature was lost (history from another provider). */
export const SKIP_SIGNATURE = 'skip_thought_signature_validator';

export function encodeToolCallId(id: string, signature: string | undefined): string {
  return signature ? `${id}${SEPARATOR}${signature}` : id;
}

export function decodeToolCallId(id: string): { id: string; signature: string | undefined } {
  const at = id.indexOf(SEPARATOR);
  if (at < 0) return { id, signature: undefined };
  return { id: id.slice(0, at), signature: id.slice(at + SEPARATOR.length) || undefined };
}
