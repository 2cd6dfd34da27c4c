// Reads the OpenAI chat stream a backend writes (SSE text, any split, \n or \r\n line ends) as the
// events a dialect's translator acts on: a comment (a keep-alive), a chunk, its error, or [DONE].
// Shared by the Messages API's and Responses' stream translators, which differ only in what they make
// of these events.
type Json = Record<string, any>;

export type ChatEvent = { kind: 'comment' } | { kind: 'done' } | { kind: 'error'; error: Json } | { kind: 'chunk'; chunk: Json };

export class ChatEventReader {
  #buffer = '';

  /** The events completed by `text`, in order; a frame that is not JSON is skipped. */
  feed(text: string): ChatEvent[] {
    this.#buffer += text;
    const events: ChatEvent[] = [];
    let end: number;
    while ((end = this.#frameEnd()) !== -1) {
      const frame = this.#buffer.slice(0, end).replace(/\r/g, '');
      this.#buffer = this.#buffer.slice(end).replace(/^(\r?\n)+/, '');
      const event = eventOf(frame);
      if (event) events.push(event);
    }
    return events;
  }

  /** What is left when the stream ends: a last frame without its blank line. */
  rest(): ChatEvent[] {
    const frame = this.#buffer.replace(/\r/g, '');
    this.#buffer = '';
    const event = frame.trim() ? eventOf(frame) : null;
    return event ? [event] : [];
  }

  #frameEnd(): number {
    const lf = this.#buffer.indexOf('\n\n');
    const crlf = this.#buffer.indexOf('\r\n\r\n');
    if (lf === -1) return crlf === -1 ? -1 : crlf + 4;
    return crlf === -1 || lf < crlf ? lf + 2 : crlf + 4;
  }
}

function eventOf(frame: string): ChatEvent | null {
  const data = frame
    .split('\n')
    .filter((line) => line.startsWith('data:'))
    .map((line) => line.slice(5).replace(/^ /, ''))
    .join('\n');
  if (!data) return frame.startsWith(':') ? { kind: 'comment' } : null;
  if (data === '[DONE]') return { kind: 'done' };
  try {
    const chunk = JSON.parse(data) as Json;
    return chunk.error ? { kind: 'error', error: chunk.error } : { kind: 'chunk', chunk };
  } catch {
    return null;
  }
}
