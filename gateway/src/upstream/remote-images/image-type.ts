// The image types a fetched URL may hold: the four OpenAI takes (and Gemini and Bedrock with it),
// told by the bytes themselves; a server's Content-Type is only allowed to rule one out.
export type ImageType = 'image/png' | 'image/jpeg' | 'image/gif' | 'image/webp';

/** Content-Type values that do not contradict an image: the four types, the generic binary ones, jpg's alias. */
export const ACCEPTED_HEADER_TYPES = new Set(['image/png', 'image/jpeg', 'image/jpg', 'image/pjpeg', 'image/gif', 'image/webp', 'application/octet-stream', 'binary/octet-stream']);

const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** The type an image's first bytes (12 are enough) show, or null when they are none of the four. */
export function sniffImageType(head: Buffer): ImageType | null {
  if (head.length >= 8 && head.subarray(0, 8).equals(PNG)) return 'image/png';
  if (head.length >= 3 && head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) return 'image/jpeg';
  const ascii = head.subarray(0, 12).toString('latin1');
  if (ascii.startsWith('GIF87a') || ascii.startsWith('GIF89a')) return 'image/gif';
  if (ascii.startsWith('RIFF') && ascii.slice(8, 12) === 'WEBP') return 'image/webp';
  return null;
}
