// Decoding the PNGs a client uploads to /v1/images/edits (in the image worker, image-worker.ts; the
// request checks the header itself first, to refuse early). The header is checked before inflating a
// byte: a small PNG can claim billions of pixels, and decoding it would take the process down.
import { PNG, type PNGWithMetadata } from 'pngjs';
import { invalidRequest } from '../http/errors.ts';

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
/** 4096 x 4096: twice the largest output side, and 64 MB of RGBA once decoded. */
export const MAX_INPUT_PIXELS = 4096 * 4096;

/** What a PNG's header says, checked before anything is decoded. */
export interface PngHeader {
  width: number;
  height: number;
  /** Whether its pixels carry alpha (colour types 4 and 6, as pngjs reports `alpha`). */
  alpha: boolean;
  /** Bytes of RGBA once decoded. */
  decodedBytes: number;
}

/** The header of an uploaded PNG, refused (400) when it is not one or claims too many pixels. */
export function readPngHeader(bytes: Buffer, param: string, filename: string): PngHeader {
  const described = `The file '${filename}' in '${param}'`;
  if (bytes.length < 33 || !bytes.subarray(0, 8).equals(PNG_SIGNATURE) || bytes.toString('latin1', 12, 16) !== 'IHDR') {
    throw invalidRequest(`${described} is not a PNG image. service-test edits PNG images only.`, param, 'invalid_image_format');
  }
  const width = bytes.readUInt32BE(16);
  const height = bytes.readUInt32BE(20);
  if (width === 0 || height === 0 || width * height > MAX_INPUT_PIXELS) {
    throw invalidRequest(`${described} is ${width}x${height} pixels; images up to ${MAX_INPUT_PIXELS} pixels (e.g. 4096x4096) are accepted.`, param, 'invalid_image_size');
  }
  return { width, height, alpha: (bytes[25] & 4) !== 0, decodedBytes: width * height * 4 };
}

export function decodePng(bytes: Buffer, param: string, filename: string): PNGWithMetadata {
  const described = `The file '${filename}' in '${param}'`;
  readPngHeader(bytes, param, filename);
  try {
    return PNG.sync.read(bytes);
  } catch (error) {
    throw invalidRequest(`${described} could not be decoded as PNG: ${(error as Error).message}.`, param, 'invalid_image');
  }
}
