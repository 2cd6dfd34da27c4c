// Bedrock accepts tool names matching [a-zA-Z0-9_-]{1,64}; OpenAI clients send dotted, namespaced or
// long names (MCP tools: `server.tool`, `mcp__github__create_issue_with_a_long_name…`). Valid names go
// as they are. Others get a deterministic stand-in (invalid characters → `_`, cut, plus a hash of the
// original so two names never share one), and the answer translators turn the stand-in back into the
// client's name. The answer side is not told the request (the seam passes answers only their own
// context), so the reverse map is a bounded table shared by all requests: the stand-in is a pure
// function of the name, so a stale or shared entry can only ever map back to the name that made it.
import { createHash } from 'node:crypto';

const VALID = /^[a-zA-Z0-9_-]{1,64}$/;
/** Most stand-ins kept; the oldest are forgotten first, so memory stays bounded under any input. */
const MAX_ENTRIES = 4096;
const originals = new Map<string, string>();

export function bedrockToolName(name: string): string {
  if (VALID.test(name)) return name;
  const hash = createHash('sha256').update(name).digest('hex').slice(0, 10);
  const cleaned = name.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, 64 - hash.length - 1);
  const standIn = `${cleaned}_${hash}`;
  if (!originals.has(standIn)) {
    if (originals.size >= MAX_ENTRIES) originals.delete(originals.keys().next().value as string);
  } else {
    originals.delete(standIn);
  }
  originals.set(standIn, name);
  return standIn;
}

/** The client's name for a tool name Bedrock answered with. */
export function clientToolName(name: string): string {
  return originals.get(name) ?? name;
}
