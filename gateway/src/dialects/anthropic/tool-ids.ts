// Anthropic's `tool_use.id` must match ^[a-zA-Z0-9_-]+$, and Claude Code keeps the history the gateway
// gave it and may send it to a Claude model next (its /model switch, its small fast model), where an id
// outside that charset is a 400. Other backends' ids need not match: Gemini 3's carry a base64 thought
// signature (`+`, `/`), Kimi-style servers answer `functions.<name>:<n>`. Such an id goes to the client
// encoded (base64url behind a prefix: Anthropic's charset, nothing to remember) and is decoded when the
// client sends it back, so the backend sees its own id again (Gemini 3 its signature).
const ANTHROPIC_TOOL_ID = /^[a-zA-Z0-9_-]+$/;
const ENCODED = 'toolu_tg_';

/** The backend's tool call id as the Messages API gives it to the client. */
export function toAnthropicToolId(id: string): string {
  if (ANTHROPIC_TOOL_ID.test(id) && !id.startsWith(ENCODED)) return id;
  return ENCODED + Buffer.from(id, 'utf8').toString('base64url');
}

/** A tool_use id (or tool_result's tool_use_id) from the client, as the backend gave it. */
export function fromAnthropicToolId(id: string): string {
  if (!id.startsWith(ENCODED)) return id;
  const decoded = Buffer.from(id.slice(ENCODED.length), 'base64url').toString('utf8');
  // Only what this module made decodes: anything else is the client's own id.
  return toAnthropicToolId(decoded) === id ? decoded : id;
}
