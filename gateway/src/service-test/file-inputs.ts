// Files in a conversation: Chat Completions `file` parts ({file: {file_data | file_id, filename}}),
// Responses `input_file` parts (file_data, file_id or file_url) and `input_image` parts that name an
// uploaded file (file_id). service-test describes a file the way it describes an image: type, size,
// and the page count of a PDF (counted from its page objects, which is cheap and good enough).
//
// A file_id resolves only among the caller's account's files in the gateway's own store. The
// parsers are synchronous, so the route resolves every file_id of a body first (resolveFileIds),
// reading at most a bounded prefix of each file, and hands the parsers the result.
import type { JsonObject } from '../http/body.ts';
import { invalidValue } from '../http/errors.ts';
import { isObject } from '../http/params.ts';
import { describeImageBytes, type DescribedImage } from './vision.ts';

export interface DescribedFile {
  filename: string | null;
  /** Null for a remote file (file_url), which service-test does not fetch. */
  mimeType: string | null;
  bytes: number | null;
  /** Pages of a PDF; null for other types or when the PDF was too large to read whole. */
  pages: number | null;
  url: string | null;
}

/** An uploaded file a request names, read up to READ_LIMIT bytes. */
export interface StoredFileContent {
  filename: string;
  contentType: string;
  bytes: number;
  head: Buffer;
}

/** Only the caller's account's files are in here: a file_id of another account is simply absent. */
export type FileLookup = ReadonlyMap<string, StoredFileContent>;
export const NO_FILES: FileLookup = new Map();

/** Enough for any image header and for counting the pages of most PDFs, without holding big files. */
const READ_LIMIT = 8 * 1024 * 1024;
/** A body names a handful of files; more distinct ids than this are refused rather than all opened. */
const MAX_FILE_IDS = 32;
const DATA_URL = /^data:([a-zA-Z0-9.+-]+\/[a-zA-Z0-9.+-]+)?((?:;[a-zA-Z0-9-]+=[^;,]*)*);base64,/;
const BASE64_BODY = /^[A-Za-z0-9+/]*={0,2}$/;

export interface FileSource {
  openContent(account: string, id: string): Promise<{ record: { bytes: number; filename: string }; contentType: string; head(limit: number): Promise<Buffer>; close(): Promise<void> } | undefined>;
}

/** Every string under a `file_id` key in the body, opened among `account`'s files. Unknown ids are left out. */
export async function resolveFileIds(body: JsonObject, account: string, files: FileSource): Promise<FileLookup> {
  const ids = new Set<string>();
  const stack: unknown[] = [body.messages, body.input];
  while (stack.length > 0) {
    const value = stack.pop();
    // One push per element: a spread of a huge array would overflow the call's argument limit.
    if (Array.isArray(value)) for (const element of value) stack.push(element);
    else if (isObject(value)) {
      for (const [key, child] of Object.entries(value)) {
        if (key === 'file_id' && typeof child === 'string') ids.add(child);
        else if (typeof child === 'object') stack.push(child);
      }
    }
  }
  if (ids.size === 0) return NO_FILES;
  if (ids.size > MAX_FILE_IDS) throw invalidValue('file_id', `A request may name at most ${MAX_FILE_IDS} distinct files; this one names ${ids.size}.`);
  const found = new Map<string, StoredFileContent>();
  for (const id of ids) {
    const opened = await files.openContent(account, id);
    if (!opened) continue;
    try {
      found.set(id, { filename: opened.record.filename, contentType: opened.contentType, bytes: opened.record.bytes, head: await opened.head(READ_LIMIT) });
    } finally {
      await opened.close();
    }
  }
  return found;
}

export function unknownFile(id: string, param: string): never {
  throw invalidValue(param, `No file with id '${id.length > 80 ? `${id.slice(0, 80)}…` : id}' in this account. Upload it with POST /v1/files first; a file is visible only to the account that uploaded it.`);
}

/** A file given inline as a Data URL (`data:application/pdf;base64,…`). */
export function describeFileData(value: unknown, filename: unknown, param: string): DescribedFile {
  if (typeof value !== 'string' || value === '') throw invalidValue(param, `Invalid '${param}': expected a Data URL (data:<mime_type>;base64,<data>).`);
  const header = DATA_URL.exec(value.slice(0, 256));
  let mimeType = 'application/octet-stream';
  let body = value;
  if (header) {
    mimeType = (header[1] ?? mimeType).toLowerCase();
    body = value.slice(header[0].length);
  }
  // OpenAI also accepts bare base64 for file_data; the filename then tells the type.
  if (body.length === 0 || body.length % 4 === 1 || !BASE64_BODY.test(body)) throw invalidValue(param, `Invalid '${param}': the data is not valid base64.`);
  const data = Buffer.from(body, 'base64');
  const name = typeof filename === 'string' && filename !== '' ? filename : null;
  if (!header && name?.toLowerCase().endsWith('.pdf')) mimeType = 'application/pdf';
  return { filename: name, mimeType, bytes: data.length, pages: pdfPages(mimeType, data, data.length), url: null };
}

export function describeStoredFile(file: StoredFileContent): DescribedFile {
  const mimeType = file.contentType || 'application/octet-stream';
  const pdf = mimeType === 'application/pdf' || file.filename.toLowerCase().endsWith('.pdf');
  return { filename: file.filename, mimeType: pdf ? 'application/pdf' : mimeType, bytes: file.bytes, pages: pdfPages(pdf ? 'application/pdf' : mimeType, file.head, file.bytes), url: null };
}

export function describeRemoteFile(url: unknown, param: string): DescribedFile {
  if (typeof url !== 'string' || !/^https?:\/\//i.test(url)) throw invalidValue(param, `Invalid '${param}': expected an http(s) URL.`);
  return { filename: null, mimeType: null, bytes: null, pages: null, url };
}

/** An input_image that names an uploaded file instead of giving a URL. */
export function describeStoredImage(file: StoredFileContent, param: string): DescribedImage {
  return describeImageBytes(file.head, file.contentType, file.bytes, param);
}

/** Page objects of a PDF (`/Type /Page`, not `/Pages`); null unless the whole file was read. */
function pdfPages(mimeType: string, data: Buffer, totalBytes: number): number | null {
  if (mimeType !== 'application/pdf' || data.length < totalBytes || data.toString('latin1', 0, 5) !== '%PDF-') return null;
  const matches = data.toString('latin1').match(/\/Type\s*\/Page(?![a-zA-Z])/g);
  return matches ? matches.length : null;
}

export function describeFileForHumans(file: DescribedFile, index: number): string {
  const name = file.filename ? `'${file.filename}'` : 'without a name';
  if (file.url !== null) return `File ${index} is a remote file at ${file.url} (service-test does not fetch remote URLs).`;
  const pages = file.pages === null ? '' : `, ${file.pages} page${file.pages === 1 ? '' : 's'}`;
  return `File ${index} ${name} is ${file.mimeType} (${file.bytes!.toLocaleString('en-US')} bytes${pages}).`;
}
