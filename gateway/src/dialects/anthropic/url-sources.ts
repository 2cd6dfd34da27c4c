// Whether a Messages request names media by URL (`source: {type: "url"}` on an image or a document,
// also inside a tool result). Anthropic fetches such URLs itself; Claude on Vertex AI does not ("URL
// sources are not supported"), so a request with one is translated there instead of relayed, and the
// gateway's image fetch (upstream/with-remote-images.ts) gives Vertex the bytes.
type Json = Record<string, unknown>;

export function hasUrlSources(body: Json): boolean {
  const messages = body.messages;
  return Array.isArray(messages) && messages.some((message) => blocksHaveUrl((message as Json | null)?.content));
}

function blocksHaveUrl(content: unknown): boolean {
  if (!Array.isArray(content)) return false;
  return content.some((block) => {
    if (!block || typeof block !== 'object') return false;
    const b = block as Json;
    if ((b.source as Json | undefined)?.type === 'url') return true;
    return b.type === 'tool_result' && blocksHaveUrl(b.content);
  });
}
