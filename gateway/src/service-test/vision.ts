// Images in a conversation. Data URLs are decoded and described (type, size, pixel dimensions);
// remote URLs are described but not fetched, because fetching arbitrary URLs from the gateway is a
// server-side request forgery risk that an operator should opt into deliberately.
import { imageSize } from 'image-size';
import { invalidValue } from '../http/errors.ts';

export interface DescribedImage {
  source: 'data' | 'remote';
  mimeType: string | null;
  bytes: number | null;
  width: number | null;
  height: number | null;
  url: string | null;
}

const DATA_URL = /^data:([a-zA-Z0-9.+-]+\/[a-zA-Z0-9.+-]+)?((?:;[a-zA-Z0-9-]+=[^;,]*)*);base64,/;
const BASE64_BODY = /^[A-Za-z0-9+/]*={0,2}$/;
const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/jpg', 'image/gif', 'image/webp']);

/** `param` is the wire path of the url, e.g. messages[1].content[0].image_url.url, for the 400. */
export function describeImageUrl(url: unknown, param: string): DescribedImage {
  if (typeof url !== 'string' || url === '') throw invalidValue(param, `Invalid '${param}': expected a URL or a Data URL string.`);
  if (url.startsWith('data:')) return describeDataUrl(url, param);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw invalidValue(param, `Invalid image URL in '${param}': it is neither an http(s) URL nor a Data URL (data:<mime_type>;base64,<data>).`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw invalidValue(param, `Invalid image URL in '${param}': only http, https and data URLs are accepted.`);
  }
  return { source: 'remote', mimeType: null, bytes: null, width: null, height: null, url };
}

function describeDataUrl(url: string, param: string): DescribedImage {
  const header = DATA_URL.exec(url.slice(0, 256));
  if (!header) throw invalidValue(param, `Invalid Data URL in '${param}': expected data:<mime_type>;base64,<data>.`);
  const declared = (header[1] ?? '').toLowerCase();
  if (!IMAGE_TYPES.has(declared)) {
    throw invalidValue(param, `Invalid Data URL in '${param}': '${declared || 'no type'}' is not a supported image type (png, jpeg, gif, webp).`);
  }
  const body = url.slice(header[0].length);
  if (body.length === 0 || body.length % 4 === 1 || !BASE64_BODY.test(body)) {
    throw invalidValue(param, `Invalid Data URL in '${param}': the data is not valid base64.`);
  }
  const data = Buffer.from(body, 'base64');
  let size: { width?: number; height?: number; type?: string };
  try {
    size = imageSize(data);
  } catch {
    throw invalidValue(param, `Invalid Data URL in '${param}': the data is not a readable ${declared} image.`);
  }
  return { source: 'data', mimeType: declared === 'image/jpg' ? 'image/jpeg' : declared, bytes: data.length, width: size.width ?? null, height: size.height ?? null, url: null };
}

/** An uploaded image file (input_image with a file_id): `head` is its start, `bytes` its whole size. */
export function describeImageBytes(head: Buffer, contentType: string, bytes: number, param: string): DescribedImage {
  let size: { width?: number; height?: number; type?: string };
  try {
    size = imageSize(head);
  } catch {
    throw invalidValue(param, `Invalid '${param}': the file is not a readable image (png, jpeg, gif, webp).`);
  }
  const type = size.type === 'jpg' ? 'jpeg' : size.type;
  const mimeType = type && IMAGE_TYPES.has(`image/${type}`) ? `image/${type}` : contentType;
  if (!IMAGE_TYPES.has(mimeType)) throw invalidValue(param, `Invalid '${param}': '${mimeType}' is not a supported image type (png, jpeg, gif, webp).`);
  return { source: 'data', mimeType, bytes, width: size.width ?? null, height: size.height ?? null, url: null };
}

export function describeForHumans(image: DescribedImage, index: number): string {
  if (image.source === 'remote') return `Image ${index} is a remote image at ${image.url} (service-test does not fetch remote URLs).`;
  const kind = image.mimeType!.split('/')[1].toUpperCase();
  return `Image ${index} is a ${kind} image of ${image.width}×${image.height} pixels (${image.bytes!.toLocaleString('en-US')} bytes).`;
}
