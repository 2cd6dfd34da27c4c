// RIFF/WAVE, written and read. service-test writes 16-bit mono PCM with a LIST/INFO chunk that
// carries the spoken text, and reads any WAV's header back for transcriptions.

export const SAMPLE_RATE = 24000;
export const BITS_PER_SAMPLE = 16;
export const CHANNELS = 1;
const BYTES_PER_SAMPLE = BITS_PER_SAMPLE / 8;

/** INFO sub-chunk ids are four ASCII characters, e.g. ISFT (software), ICMT (comment). */
export type InfoEntries = Array<[id: string, text: string]>;

/**
 * Everything before the samples: RIFF header, fmt, LIST/INFO, and the data chunk's own header. The
 * LIST chunk comes before data, so a reader finds the text without skipping the audio.
 */
export function wavHeader(dataBytes: number, info: InfoEntries): Buffer {
  const list = infoChunk(info);
  const fmt = Buffer.alloc(8 + 16);
  fmt.write('fmt ', 0, 'latin1');
  fmt.writeUInt32LE(16, 4);
  fmt.writeUInt16LE(1, 8); // PCM
  fmt.writeUInt16LE(CHANNELS, 10);
  fmt.writeUInt32LE(SAMPLE_RATE, 12);
  fmt.writeUInt32LE(SAMPLE_RATE * CHANNELS * BYTES_PER_SAMPLE, 16);
  fmt.writeUInt16LE(CHANNELS * BYTES_PER_SAMPLE, 20);
  fmt.writeUInt16LE(BITS_PER_SAMPLE, 22);
  const dataHeader = Buffer.alloc(8);
  dataHeader.write('data', 0, 'latin1');
  dataHeader.writeUInt32LE(dataBytes, 4);
  const riff = Buffer.alloc(12);
  riff.write('RIFF', 0, 'latin1');
  riff.writeUInt32LE(4 + fmt.length + list.length + dataHeader.length + dataBytes + (dataBytes % 2), 4);
  riff.write('WAVE', 8, 'latin1');
  return Buffer.concat([riff, fmt, list, dataHeader]);
}

function infoChunk(info: InfoEntries): Buffer {
  const parts = info.map(([id, text]) => {
    const value = Buffer.from(`${text}\0`, 'utf8');
    const header = Buffer.alloc(8);
    header.write(id, 0, 'latin1');
    header.writeUInt32LE(value.length, 4);
    return Buffer.concat([header, value, Buffer.alloc(value.length % 2)]);
  });
  const body = Buffer.concat([Buffer.from('INFO', 'latin1'), ...parts]);
  const header = Buffer.alloc(8);
  header.write('LIST', 0, 'latin1');
  header.writeUInt32LE(body.length, 4);
  return Buffer.concat([header, body]);
}

export interface WavFacts {
  audioFormat: number;
  channels: number;
  sampleRate: number;
  bitsPerSample: number;
  dataBytes: number;
  durationSeconds: number;
  info: Map<string, string>;
}

/** The header facts of a WAV file, or null when the bytes are not one. */
export function readWav(bytes: Buffer): WavFacts | null {
  if (bytes.length < 12 || bytes.toString('latin1', 0, 4) !== 'RIFF' || bytes.toString('latin1', 8, 12) !== 'WAVE') return null;
  let format: Omit<WavFacts, 'dataBytes' | 'durationSeconds' | 'info'> | null = null;
  let byteRate = 0;
  let dataBytes: number | null = null;
  const info = new Map<string, string>();
  let offset = 12;
  while (offset + 8 <= bytes.length) {
    const id = bytes.toString('latin1', offset, offset + 4);
    const size = bytes.readUInt32LE(offset + 4);
    const start = offset + 8;
    // Streamed WAVs often leave the last chunk's size as 0 or 0xFFFFFFFF: trust the bytes present.
    const end = Math.min(bytes.length, start + size);
    if (id === 'fmt ' && end - start >= 16) {
      format = { audioFormat: bytes.readUInt16LE(start), channels: bytes.readUInt16LE(start + 2), sampleRate: bytes.readUInt32LE(start + 4), bitsPerSample: bytes.readUInt16LE(start + 14) };
      byteRate = bytes.readUInt32LE(start + 8);
    } else if (id === 'data') {
      dataBytes = size === 0 || size === 0xffffffff ? bytes.length - start : end - start;
    } else if (id === 'LIST' && bytes.toString('latin1', start, start + 4) === 'INFO') {
      readInfo(bytes.subarray(start + 4, end), info);
    }
    offset = start + size + (size % 2);
  }
  if (!format || dataBytes === null) return null;
  const rate = byteRate || format.sampleRate * format.channels * (format.bitsPerSample / 8);
  return { ...format, dataBytes, durationSeconds: rate > 0 ? dataBytes / rate : 0, info };
}

function readInfo(bytes: Buffer, into: Map<string, string>): void {
  let offset = 0;
  while (offset + 8 <= bytes.length) {
    const id = bytes.toString('latin1', offset, offset + 4);
    const size = bytes.readUInt32LE(offset + 4);
    const value = bytes.subarray(offset + 8, Math.min(bytes.length, offset + 8 + size));
    into.set(id, value.toString('utf8').replace(/\0+$/, ''));
    offset += 8 + size + (size % 2);
  }
}
