// The stateful part of the fake upstream: files, batches, threads and assistants, as an OpenAI-like
// provider keeps them for its one API key (so for every account of the gateway at once). Uploaded
// bytes are kept only when small; bigger uploads keep their size and hash.
import type { ServerResponse } from 'node:http';

export interface StoredUpload {
  id: string;
  filename: string;
  purpose: string;
  bytes: number;
  sha256: string;
  /** Kept up to 8 MB (enough for the download tests); null above. */
  content: Buffer | null;
  seq: number;
}

export interface FakeFilePart {
  field: string;
  filename: string;
  mimeType: string;
  bytes: number;
  sha256: string;
  content: Buffer | null;
}

export interface FakeForm {
  fields: Record<string, string[]>;
  files: FakeFilePart[];
}

type Json = Record<string, any>;

export class FakeStore {
  files = new Map<string, StoredUpload>();
  batches = new Map<string, Json>();
  threads = new Map<string, Json>();
  assistants = new Map<string, Json>();
  #seq = 0;
  #name: string;

  constructor(name: string) {
    this.#name = name;
  }

  #id(prefix: string): string {
    return `${prefix}${this.#name}${++this.#seq}`;
  }

  /** Answers the request if it is about stored objects; false otherwise. */
  handle(res: ServerResponse, method: string, path: string, query: URLSearchParams, json: Json, form: FakeForm | undefined): boolean {
    const parts = path.replace(/^\/v1\//, '').split('/');
    const [family, id, action] = parts;
    const send = (status: number, value: unknown) => (sendJson(res, value, status), true);
    const missing = (what: string) => send(404, { error: { message: `No such ${what}: ${id}`, type: 'invalid_request_error', param: null, code: null } });

    if (family === 'files') {
      if (method === 'POST' && !id && form) {
        const file = form.files.find((f) => f.field === 'file');
        if (!file) return send(400, { error: { message: 'no file', type: 'invalid_request_error', param: 'file', code: null } });
        const stored: StoredUpload = { id: this.#id('file-'), filename: file.filename, purpose: form.fields.purpose?.[0] ?? '', bytes: file.bytes, sha256: file.sha256, content: file.content, seq: this.#seq };
        this.files.set(stored.id, stored);
        return send(200, fileObject(stored));
      }
      if (method === 'GET' && !id) return send(200, page([...this.files.values()].sort((a, b) => b.seq - a.seq).map(fileObject), query));
      const stored = this.files.get(id);
      if (!stored) return missing('File object');
      if (method === 'DELETE') {
        this.files.delete(id);
        return send(200, { id, object: 'file', deleted: true });
      }
      if (action === 'content') {
        const content = stored.content ?? Buffer.alloc(0);
        // Labelled JSON on purpose: a download must be relayed as bytes whatever its type says.
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': content.length, 'content-disposition': `attachment; filename="${stored.filename}"` });
        res.end(content);
        return true;
      }
      return send(200, fileObject(stored));
    }

    if (family === 'batches') {
      if (method === 'POST' && !id) {
        if (!this.files.has(json.input_file_id)) return send(400, { error: { message: `Invalid input_file_id ${json.input_file_id}`, type: 'invalid_request_error', param: 'input_file_id', code: null } });
        const batch = { id: this.#id('batch_'), object: 'batch', endpoint: json.endpoint, input_file_id: json.input_file_id, completion_window: json.completion_window, status: 'validating', output_file_id: null, error_file_id: null, created_at: 1, metadata: json.metadata ?? null, seq: this.#seq };
        this.batches.set(batch.id, batch);
        return send(200, publicBatch(batch));
      }
      if (method === 'GET' && !id) return send(200, page([...this.batches.values()].sort((a, b) => b.seq - a.seq).map(publicBatch), query));
      const batch = this.batches.get(id);
      if (!batch) return missing('batch');
      if (method === 'POST' && action === 'cancel') batch.status = 'cancelling';
      else if (method === 'GET' && batch.status === 'validating') {
        // Retrieval "finishes" the batch: its output is a new file the provider issued.
        const output = Buffer.from(`{"custom_id":"1","response":{"status_code":200}}\n`);
        const file: StoredUpload = { id: this.#id('file-'), filename: 'batch_output.jsonl', purpose: 'batch_output', bytes: output.length, sha256: '', content: output, seq: this.#seq };
        this.files.set(file.id, file);
        Object.assign(batch, { status: 'completed', output_file_id: file.id });
      }
      return send(200, publicBatch(batch));
    }

    if (family === 'assistants' && method === 'POST' && !id) {
      const assistant = { id: this.#id('asst_'), object: 'assistant', model: json.model, name: json.name ?? null, created_at: 1 };
      this.assistants.set(assistant.id, assistant);
      return send(200, assistant);
    }

    if (family === 'threads') {
      if (method === 'POST' && (!id || id === 'runs')) {
        const thread = { id: this.#id('thread_'), object: 'thread', created_at: 1, metadata: {} };
        this.threads.set(thread.id, thread);
        if (id === 'runs') return send(200, { id: this.#id('run_'), object: 'thread.run', thread_id: thread.id, assistant_id: json.assistant_id, status: 'queued' });
        return send(200, thread);
      }
      const thread = this.threads.get(id);
      if (!thread) return missing('thread');
      if (method === 'DELETE') {
        this.threads.delete(id);
        return send(200, { id, object: 'thread.deleted', deleted: true });
      }
      if (action === 'runs' && method === 'POST') return send(200, { id: this.#id('run_'), object: 'thread.run', thread_id: id, assistant_id: json.assistant_id, model: json.model ?? null, status: 'queued' });
      if (action === 'messages' && method === 'POST') return send(200, { id: this.#id('msg_'), object: 'thread.message', thread_id: id, role: json.role, content: [] });
      return send(200, thread);
    }
    return false;
  }
}

function fileObject(file: StoredUpload) {
  return { id: file.id, object: 'file', bytes: file.bytes, created_at: 1, filename: file.filename, purpose: file.purpose, status: 'processed' };
}

function publicBatch(batch: Json): Json & { id: string } {
  const { seq: _seq, ...rest } = batch;
  return rest as Json & { id: string };
}

/** OpenAI's cursor pagination: `after` an id, `limit` items, `has_more`. */
function page(items: Array<{ id: string }>, query: URLSearchParams) {
  let start = 0;
  const after = query.get('after');
  if (after) start = items.findIndex((item) => item.id === after) + 1;
  const limit = Number(query.get('limit') ?? 20);
  const data = items.slice(start, start + limit);
  return { object: 'list', data, has_more: start + limit < items.length, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null };
}

export function sendJson(res: ServerResponse, value: unknown, status = 200) {
  const text = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
