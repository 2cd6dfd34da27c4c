// The length-prefix framing of AWS's `application/vnd.amazon.eventstream`: each message is
// `u32 total_length | u32 headers_length | u32 prelude_crc | headers | payload | u32 message_crc`
// (big-endian). Network reads split messages anywhere (even inside the 4-byte length), so bytes are
// held until a whole message is there; each whole message is then decoded by @smithy/eventstream-codec,
// which checks both CRCs. The cap on a message's size keeps memory bounded whatever the peer sends.
import { EventStreamCodec, type Message } from '@smithy/eventstream-codec';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import { ProviderStreamError } from '../provider.ts';

/** Smallest message: prelude (12 bytes) and message CRC (4), no headers, no payload. */
const MIN_MESSAGE = 16;
/**
 * Largest message accepted: the default cap on one event of a relayed SSE stream
 * (TOLLGATE_MAX_SSE_EVENT_BYTES). AWS allows 16 MiB; Converse's messages are a few KB.
 */
export const MAX_MESSAGE = 8 * 1024 * 1024;

const codec = new EventStreamCodec(toUtf8, fromUtf8);

export function frameError(message: string): ProviderStreamError {
  return new ProviderStreamError(`Amazon Bedrock's event stream is malformed: ${message}`, 'upstream_stream_malformed');
}

export class EventStreamFramer {
  private chunks: Buffer[] = [];
  private buffered = 0;
  /** total_length of the message being gathered, once its first 4 bytes are here. */
  private needed = 0;

  /** Bytes in; every message they complete out, decoded and CRC-checked. Throws ProviderStreamError. */
  push(chunk: Buffer): Message[] {
    const messages: Message[] = [];
    if (chunk.length === 0) return messages;
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    for (;;) {
      if (this.needed === 0) {
        if (this.buffered < 4) break;
        this.needed = this.peekLength();
      }
      if (this.buffered < this.needed) break;
      const all = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks, this.buffered);
      const bytes = all.subarray(0, this.needed);
      const rest = all.subarray(this.needed);
      this.chunks = rest.length > 0 ? [rest] : [];
      this.buffered = rest.length;
      this.needed = 0;
      messages.push(decode(bytes));
    }
    return messages;
  }

  /** Bytes held that do not make a whole message yet (a body ending here was cut). */
  pending(): number {
    return this.buffered;
  }

  private peekLength(): number {
    const head = this.chunks[0].length >= 4 ? this.chunks[0] : Buffer.concat(this.chunks, this.buffered);
    const length = head.readUInt32BE(0);
    if (length < MIN_MESSAGE) throw frameError(`a message declares ${length} bytes, fewer than the ${MIN_MESSAGE} of an empty one`);
    if (length > MAX_MESSAGE) throw frameError(`a message declares ${length} bytes, more than the ${MAX_MESSAGE} accepted`);
    return length;
  }
}

function decode(bytes: Buffer): Message {
  try {
    return codec.decode(bytes);
  } catch (err) {
    // The codec names the failed check ("prelude checksum", "message checksum", lengths).
    throw frameError((err as Error).message);
  }
}

/** A string header's value, or undefined. */
export function stringHeader(message: Message, name: string): string | undefined {
  const header = message.headers[name];
  return header?.type === 'string' ? header.value : undefined;
}

/** Encodes one message (the fake Bedrock server and tests build streams with it). */
export function encodeMessage(headers: Record<string, string>, payload: unknown): Buffer {
  const tagged = Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, { type: 'string' as const, value }]));
  const body = payload === undefined ? new Uint8Array(0) : fromUtf8(typeof payload === 'string' ? payload : JSON.stringify(payload));
  return Buffer.from(codec.encode({ headers: tagged, body }));
}
