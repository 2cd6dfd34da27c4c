// A custom tool's input, decoded as its call streams in. On a model without custom tools the tool
// is offered as a function taking `{"input": string}` (custom-tools.ts), so its input arrives as
// fragments of that JSON text; a Responses client (Codex writing a patch) expects
// `response.custom_tool_call_input.delta` events carrying the input itself, as it is written. This
// reads the fragments as they come and gives back the decoded characters of the `input` string
// each time; anything else (another key first, text that is not JSON) stops it, and the input is
// then given whole when the call closes, as before.

type State = 'open' | 'key' | 'colon' | 'value' | 'string' | 'done' | 'given-up';

const ESCAPES: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
const KEY = '"input"';

export class CustomInputDecoder {
  #state: State = 'open';
  /** Characters read but not yet decodable: part of the key, or an escape cut by a fragment's end. */
  #pending = '';
  /** The input decoded so far: the concatenation of every string `push` returned. */
  #decoded = '';

  get decoded(): string {
    return this.#decoded;
  }

  /** The newly decoded characters of the input ('' when none, or once it cannot be followed). */
  push(fragment: string): string {
    let out = '';
    let text = this.#pending + fragment;
    this.#pending = '';
    let i = 0;
    while (i < text.length && this.#state !== 'done' && this.#state !== 'given-up') {
      const c = text[i]!;
      if (this.#state === 'string') {
        if (c === '"') {
          this.#state = 'done';
          i++;
        } else if (c === '\\') {
          const escape = this.#escape(text, i);
          if (escape === null) {
            this.#pending = text.slice(i);
            break;
          }
          if (escape.text === null) return this.#giveUp(out);
          out += escape.text;
          i += escape.length;
        } else {
          // A run of plain characters in one slice.
          let end = i + 1;
          while (end < text.length && text[end] !== '"' && text[end] !== '\\') end++;
          // A fragment may end between the halves of a pair (an upstream that split one): keep the first.
          const split = end === text.length && isHighSurrogate(text.charCodeAt(end - 1));
          out += text.slice(i, split ? end - 1 : end);
          if (split) this.#pending = text.slice(end - 1);
          i = end;
        }
      } else if (c === ' ' || c === '\n' || c === '\r' || c === '\t') {
        i++;
      } else if (this.#state === 'open') {
        if (c !== '{') return this.#giveUp(out);
        this.#state = 'key';
        i++;
      } else if (this.#state === 'key') {
        const rest = text.slice(i, i + KEY.length);
        if (!KEY.startsWith(rest)) return this.#giveUp(out);
        if (rest.length < KEY.length) {
          this.#pending = rest;
          break;
        }
        this.#state = 'colon';
        i += KEY.length;
      } else if (this.#state === 'colon') {
        if (c !== ':') return this.#giveUp(out);
        this.#state = 'value';
        i++;
      } else {
        if (c !== '"') return this.#giveUp(out);
        this.#state = 'string';
        i++;
      }
    }
    this.#decoded += out;
    return out;
  }

  /**
   * The escape at `text[at]`: its text and length; null when the fragment ends inside it; text null
   * when it is not valid JSON. A high surrogate waits for its low half, so that no delta splits a
   * character (a client in another language would get two halves it cannot join).
   */
  #escape(text: string, at: number): { text: string | null; length: number } | null {
    const kind = text[at + 1];
    if (kind === undefined) return null;
    if (kind !== 'u') return { text: ESCAPES[kind] ?? null, length: 2 };
    const hex = text.slice(at + 2, at + 6);
    if (hex.length < 4) return /^[0-9a-fA-F]*$/.test(hex) ? null : { text: null, length: 0 };
    if (!/^[0-9a-fA-F]{4}$/.test(hex)) return { text: null, length: 0 };
    const code = Number.parseInt(hex, 16);
    if (!isHighSurrogate(code)) return { text: String.fromCharCode(code), length: 6 };
    const low = text.slice(at + 6, at + 12);
    // The fragment may end inside the low half's escape: wait for the rest.
    if (low.length < 6 && /^(\\(u[0-9a-fA-F]{0,3})?)?$/.test(low)) return null;
    const lowMatch = /^\\u([dD][c-fC-F][0-9a-fA-F]{2})$/.exec(low);
    // A lone high surrogate, as JSON.parse gives it.
    if (!lowMatch) return { text: String.fromCharCode(code), length: 6 };
    return { text: String.fromCharCode(code, Number.parseInt(lowMatch[1]!, 16)), length: 12 };
  }

  #giveUp(out: string): string {
    this.#state = 'given-up';
    this.#decoded += out;
    return out;
  }
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}
