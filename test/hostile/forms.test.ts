// Multipart forms inside the gateway's bounds, against a real gateway on port 0: a form's text fields
// and the file parts service-test reads back into memory count against the same in-flight memory
// budget as JSON bodies, and the forms being received or spooled share a disk budget; past either,
// 503 server_busy with Retry-After, the spool left empty, and the next request served.
import { readdir } from 'node:fs/promises';
import { request } from 'node:http';
import path from 'node:path';
import { Readable } from 'node:stream';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { account, apiKey, expectErrorShape, newKey, plan, raw, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { MB, registerLogs, registerSecret, scanLogs } from './harness.ts';

const key = newKey('k', 'acme');
registerSecret(key.key);
const MEMORY_BUDGET = 3 * MB;
const DISK_BUDGET = 8 * MB;
let gw: TestGateway;

beforeAll(async () => {
  gw = await startTestGateway([plan('pro', ['service-test'], { concurrentRequests: 100 }), account('acme', 'pro'), apiKey(key)], {
    bodyBudgetBytes: MEMORY_BUDGET,
    spoolBudgetBytes: DISK_BUDGET,
  });
  registerLogs(() => gw.logText());
});
afterAll(async () => {
  await gw?.stop();
});

/** A PNG of noise (it does not compress): about 4 bytes a pixel on the wire. */
function noisePng(width: number, height: number): Buffer {
  const png = new PNG({ width, height });
  let seed = 1;
  for (let i = 0; i < png.data.length; i++) {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    png.data[i] = i % 4 === 3 ? 255 : seed >> 16;
  }
  return PNG.sync.write(png, { colorType: 6 });
}

function editForm(image: Buffer, fields: Record<string, string> = {}): FormData {
  const form = new FormData();
  form.append('model', 'service-test');
  form.append('prompt', 'a red circle');
  form.append('response_format', 'b64_json');
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  form.append('image', new Blob([new Uint8Array(image)], { type: 'image/png' }), 'in.png');
  return form;
}

const post = (form: FormData) => raw(gw, 'POST', '/v1/images/edits', { key: key.key, body: form });

async function servesAnEdit() {
  const answer = await post(editForm(noisePng(16, 16)));
  expect(answer.status).toBe(200);
  expect(answer.json.data).toHaveLength(1);
}

async function spoolIsEmpty() {
  const left = await readdir(path.join(gw.dir, 'data', 'spool')).catch(() => []);
  expect(left).toEqual([]);
}

describe('the memory budget counts forms', () => {
  it("a form's text fields take from it: past it, 503 server_busy with Retry-After", async () => {
    // Each field is under the 1 MB field limit; together they are more than the memory budget, and
    // far less than the disk budget.
    const fields = { a: 'x'.repeat(900_000), b: 'y'.repeat(900_000), c: 'z'.repeat(900_000), d: 'w'.repeat(900_000) };
    const answer = await post(editForm(noisePng(16, 16), fields));
    expectErrorShape(answer, 503, 'server_busy');
    expect(answer.headers.get('retry-after')).toBe('1');
    await spoolIsEmpty();
    await servesAnEdit();
  });

  it('a text field over 1 MB is 400 field_too_large, naming the field', async () => {
    const answer = await post(editForm(noisePng(16, 16), { prompt: 'p'.repeat(MB + 1) }));
    const error = expectErrorShape(answer, 400, 'field_too_large');
    expect(error.param).toBe('prompt');
    await servesAnEdit();
  });

  it('an image service-test reads back from the spool takes from it too', async () => {
    // About 4.4 MB of PNG, more than the memory budget; a gateway with room on disk for it spools it,
    // and service-test's read of it back into memory is what must be refused.
    const image = noisePng(1050, 1050);
    expect(image.length).toBeGreaterThan(MEMORY_BUDGET);
    const big = await startTestGateway([plan('pro', ['service-test'], { concurrentRequests: 100 }), account('acme', 'pro'), apiKey(key)], {
      bodyBudgetBytes: MEMORY_BUDGET,
      spoolBudgetBytes: 64 * MB,
    });
    registerLogs(() => big.logText());
    try {
      const refused = await raw(big, 'POST', '/v1/images/edits', { key: key.key, body: editForm(image) });
      expectErrorShape(refused, 503, 'server_busy');
      // The same gateway edits a small picture at once: everything the refused request took came back.
      const small = await raw(big, 'POST', '/v1/images/edits', { key: key.key, body: editForm(noisePng(64, 64)) });
      expect(small.status).toBe(200);
    } finally {
      await big.stop();
    }
  });

  it('shares the budget with JSON bodies: while a large JSON body is held, a form is refused, and accepted once it is gone', async () => {
    // Leaves less room than even a small form needs.
    expect(gw.exchanges.open).toBe(0);
    const declared = MEMORY_BUDGET - 512;
    const prefix = '{"model":"service-test","messages":[{"role":"user","content":"';
    const suffix = '"}]}';
    /** A JSON body whose length is declared (and taken from the budget) but whose bytes wait. */
    const holdJson = () => {
      const answered = Promise.withResolvers<number>();
      let status = 0;
      const req = request(`${gw.url}/v1/chat/completions`, { method: 'POST', agent: false, headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json', 'content-length': String(declared) } }, (res) => {
        status = res.statusCode ?? 0;
        res.resume();
        res.once('end', () => answered.resolve(status));
      });
      req.on('error', () => {});
      req.write(prefix);
      return { req, answered: answered.promise, status: () => status };
    };
    // The gateway takes the declared length as soon as the request reaches the body reader, in the
    // same turn of the event loop in which its exchange began (everything before is synchronous
    // work and promises): once the exchange is open and one more turn has passed, it is held.
    const held = holdJson();
    while (gw.exchanges.open === 0) await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    const refused = await post(editForm(noisePng(16, 16)));
    expect(held.status()).toBe(0);
    expectErrorShape(refused, 503, 'server_busy');
    // The JSON body arrives whole; its answer closes, and the budget is free again.
    held.req.end('a'.repeat(declared - prefix.length - suffix.length) + suffix);
    expect(await held.answered).toBe(200);
    await servesAnEdit();
  });
});

describe('the disk budget bounds forms in flight', () => {
  it('a declared form larger than it: 503 server_busy before a byte is spooled', async () => {
    const answer = await post(editForm(noisePng(1500, 1500)));
    expectErrorShape(answer, 503, 'server_busy');
    expect(answer.headers.get('retry-after')).toBe('1');
    await spoolIsEmpty();
    await servesAnEdit();
  });

  it('a chunked form that grows past it: 503 server_busy, its spooled parts removed', async () => {
    const form = editForm(noisePng(1500, 1500));
    const encoded = new Response(form);
    const type = encoded.headers.get('content-type')!;
    const bytes = Buffer.from(await encoded.arrayBuffer());
    // A stream body has no Content-Length: fetch sends it chunked, so the size is known only as it arrives.
    const body = Readable.toWeb(Readable.from([bytes.subarray(0, MB), bytes.subarray(MB)])) as ReadableStream;
    const response = await fetch(`${gw.url}/v1/images/edits`, { method: 'POST', headers: { authorization: `Bearer ${key.key}`, 'content-type': type }, body, duplex: 'half' } as RequestInit);
    const json = await response.json();
    expectErrorShape({ status: response.status, headers: response.headers, json }, 503, 'server_busy');
    await spoolIsEmpty();
    await servesAnEdit();
  });
});

afterAll(() => {
  expect(scanLogs()).toEqual([]);
});
