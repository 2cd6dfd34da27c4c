// Prompt-cache markers on an OpenAI chat request: Anthropic's `cache_control: {type: "ephemeral"}`,
// which OpenAI's API does not define but LiteLLM, Portkey and Envoy accept on chat (on a content part,
// a message, a tool). The providers that cache at marked points read them: Anthropic keeps them on
// its blocks, Bedrock turns them into `cachePoint` blocks. The Messages API dialect writes them from
// what Claude Code sends; such a gateway-made request never carries them to an OpenAI-compatible
// upstream, whose strict validation may refuse a field OpenAI does not know (docs/providers.md).

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

/** True when a part, message or tool carries a prompt-cache marker. */
export function hasCacheMarker(item: unknown): boolean {
  return isObject(item) && isObject(item.cache_control);
}

/** The marker's lifetime when it asks for one Bedrock and Anthropic know (`ttl: "5m"` or `"1h"`). */
export function cacheTtl(item: unknown): '5m' | '1h' | undefined {
  if (!hasCacheMarker(item)) return undefined;
  const ttl = ((item as Json).cache_control as Json).ttl;
  return ttl === '5m' || ttl === '1h' ? ttl : undefined;
}

/** Chat requests the gateway made from another dialect: their markers are the gateway's, not a client's. */
const dialectChats = new WeakSet<object>();

/** Records that the gateway made this chat request (its markers are dropped for OpenAI-compatible upstreams). */
export function madeByDialect<T extends object>(chat: T): T {
  dialectChats.add(chat);
  return chat;
}

function unmarked<T>(item: T): T {
  if (!hasCacheMarker(item)) return item;
  const { cache_control: _marker, ...rest } = item as Json;
  return rest as T;
}

/**
 * The body to send an OpenAI-compatible upstream: a client's own request as it came (the client
 * chose to send its markers, which OpenAI-compatible caches such as LiteLLM or OpenRouter read), a
 * gateway-made one without markers on its messages, parts and tools.
 */
export function forOpenAICompatible<T extends Json>(body: T): T {
  if (!dialectChats.has(body)) return body;
  const out: Json = { ...body };
  if (Array.isArray(body.messages)) {
    out.messages = body.messages.map((message) => {
      const copy = unmarked(message);
      return isObject(copy) && Array.isArray(copy.content) ? { ...copy, content: copy.content.map(unmarked) } : copy;
    });
  }
  if (Array.isArray(body.tools)) out.tools = body.tools.map(unmarked);
  return out as T;
}
