// Incremental SSE reading for the bench's own clients: splits events on blank lines and checks the
// bench upstream's numbering, so a dropped, merged, duplicated or reordered frame is caught.
export interface StreamCheck {
  /** Content events seen, in order (the numbers the upstream put in each delta). */
  events: number;
  done: boolean;
  problems: string[];
}

export class SseChecker {
  /** 'fast' checks frames with indexOf instead of JSON.parse: for 20,000 events a second the client must stay cheap. */
  readonly #fast: boolean;
  constructor(mode: 'full' | 'fast' = 'full') {
    this.#fast = mode === 'fast';
  }
  #buffer = '';
  #next = 0;
  #finished = false;
  readonly check: StreamCheck = { events: 0, done: false, problems: [] };
  /** Per content chunk: ms from the upstream writing it to this client reading it. */
  readonly transits: number[] = [];
  #receivedUs = 0;

  /** `receivedUs`: process.hrtime in µs when `text` arrived (the clock the upstream stamps with). */
  feed(text: string, receivedUs = 0): void {
    this.#receivedUs = receivedUs;
    this.#buffer += text;
    let end: number;
    while ((end = this.#buffer.indexOf('\n\n')) !== -1) {
      const event = this.#buffer.slice(0, end);
      this.#buffer = this.#buffer.slice(end + 2);
      this.#event(event);
    }
  }

  /** Call at the end of the body; `expected` is the number of content chunks the upstream sends. */
  finish(expected: number): StreamCheck {
    if (this.#buffer.trim() !== '') this.#problem(`trailing bytes after the last event: ${JSON.stringify(this.#buffer.slice(0, 80))}`);
    if (!this.check.done) this.#problem('no [DONE]');
    if (this.#next !== expected) this.#problem(`${this.#next} content chunks, expected ${expected}`);
    if (!this.#finished) this.#problem('no finish_reason chunk');
    return this.check;
  }

  #event(event: string): void {
    const lines = event.split('\n').filter((l) => !l.startsWith(':'));
    if (lines.length === 0) return;
    if (lines.length !== 1 || !lines[0].startsWith('data: ')) return this.#problem(`not one data line: ${JSON.stringify(event.slice(0, 120))}`);
    const data = lines[0].slice(6);
    if (data === '[DONE]') {
      if (this.check.done) this.#problem('two [DONE]');
      this.check.done = true;
      return;
    }
    if (this.check.done) return this.#problem('an event after [DONE]');
    if (this.#fast) return this.#fastChunk(data);
    let chunk: { choices?: Array<{ delta?: { content?: string }; finish_reason?: string | null }>; usage?: unknown; bench_sent_us?: number };
    try {
      chunk = JSON.parse(data);
    } catch {
      return this.#problem(`merged or broken frame: ${JSON.stringify(data.slice(0, 120))}`);
    }
    this.check.events++;
    if (this.#receivedUs && typeof chunk.bench_sent_us === 'number') this.transits.push((this.#receivedUs - chunk.bench_sent_us) / 1000);
    const choice = chunk.choices?.[0];
    if (!choice) return; // the usage chunk, when the client asked for it
    if (choice.finish_reason) {
      this.#finished = true;
      return;
    }
    const content = choice.delta?.content;
    // A role chunk with no text yet (translated streams open with one, as OpenAI's own do).
    if (content === '') return;
    if (content !== `${this.#next} `) return this.#problem(`chunk ${JSON.stringify(content)} where "${this.#next} " was due`);
    this.#next++;
  }

  /** The same checks by string search: one whole chunk object per event, its number, its send time. */
  #fastChunk(data: string): void {
    const kind = data.indexOf('"object":"chat.completion.chunk"');
    if (data[0] !== '{' || data[data.length - 1] !== '}' || kind === -1 || data.indexOf('"object":', kind + 1) !== -1) {
      return this.#problem(`merged or broken frame: ${JSON.stringify(data.slice(0, 120))}`);
    }
    this.check.events++;
    const sent = data.indexOf('"bench_sent_us":');
    if (this.#receivedUs && sent !== -1) this.transits.push((this.#receivedUs - parseInt(data.slice(sent + 16, sent + 40), 10)) / 1000);
    if (data.includes('"choices":[]')) return;
    if (data.includes('"finish_reason":"stop"')) {
      this.#finished = true;
      return;
    }
    const at = data.indexOf('"content":"');
    const content = at === -1 ? undefined : data.slice(at + 11, data.indexOf('"', at + 11));
    if (content === '') return;
    if (content !== `${this.#next} `) return this.#problem(`chunk ${JSON.stringify(content)} where "${this.#next} " was due`);
    this.#next++;
  }

  #problem(text: string): void {
    if (this.check.problems.length < 5) this.check.problems.push(text);
  }
}
