import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request as httpRequest } from 'node:http';
import { writeFile } from 'node:fs/promises';
import { PNG } from 'pngjs';
import { account, apiKey, expectErrorShape, model, newKey, plan, raw, startTestGateway, toYaml, upstream, type TestGateway } from '../helpers/gateway.ts';

const MB = 1024 * 1024;
const key = newKey('k', 'acme');

/** Sends a request by hand so the test controls how much of the body goes out. */
function sendPartially(url: string, headers: Record<string, string | number>, chunks: () => Buffer | null) {
  return new Promise<{ status: number; body: string; bytesSent: number }>((resolve, reject) => {
    let bytesSent = 0;
    let answered = false;
    const req = httpRequest(`${url}/v1/chat/completions`, { method: 'POST', headers }, (res) => {
      answered = true;
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode!, body, bytesSent }));
    });
    req.on('error', (error) => (answered ? undefined : reject(error)));
    const pump = () => {
      while (!answered) {
        const chunk = chunks();
        if (chunk === null) return req.end();
        bytesSent += chunk.length;
        if (!req.write(chunk)) return req.once('drain', pump);
      }
    };
    pump();
  });
}

describe('request size limit (50 MB)', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway([account('acme'), apiKey(key)]);
  });
  afterAll(() => gw.stop());

  it('a 49 MB vision request with a Data URL works', async () => {
    const png = new PNG({ width: 320, height: 200 });
    png.data.fill(90);
    // A real PNG followed by padding: image readers stop at IEND, the request is still ~49 MB.
    const image = Buffer.concat([PNG.sync.write(png), Buffer.alloc(36 * MB, 7)]);
    const url = `data:image/png;base64,${image.toString('base64')}`;
    const answer = await gw.client(key.key).chat.completions.create({ model: 'service-test', messages: [{ role: 'user', content: [{ type: 'text', text: 'describe' }, { type: 'image_url', image_url: { url } }] }] });
    expect(url.length).toBeGreaterThan(48 * MB);
    expect(answer.choices[0].message.content).toContain('PNG image of 320×200 pixels');
  });

  it('a declared Content-Length over 50 MB is refused with 413 before the body is read', async () => {
    let sent = 0;
    const result = await sendPartially(
      gw.url,
      { authorization: `Bearer ${key.key}`, 'content-type': 'application/json', 'content-length': 60 * MB },
      () => (sent++ < 60 ? Buffer.alloc(MB, 32) : null),
    );
    expect(result.status).toBe(413);
    expect(JSON.parse(result.body).error.code).toBe('request_too_large');
    expect(result.bytesSent).toBeLessThan(60 * MB);
  });

  it('a chunked body is cut off at 50 MB with 413', async () => {
    let sent = 0;
    const result = await sendPartially(gw.url, { authorization: `Bearer ${key.key}`, 'content-type': 'application/json', 'transfer-encoding': 'chunked' }, () => (sent++ < 200 ? Buffer.alloc(MB, 32) : null));
    expect(result.status).toBe(413);
    expect(result.bytesSent).toBeGreaterThanOrEqual(50 * MB);
    expect(result.bytesSent).toBeLessThan(200 * MB);
  });

  it('the SDK sees 413 as an APIError for an oversized request', async () => {
    const huge = 'x'.repeat(51 * MB);
    const error = await gw.client(key.key).chat.completions.create({ model: 'service-test', messages: [{ role: 'user', content: huge }] }).catch((e) => e);
    expect(error.status).toBe(413);
    expect(error.code).toBe('request_too_large');
  });

  it('the gateway keeps serving after refusing', async () => {
    expect((await gw.client(key.key).models.list()).data).toHaveLength(1);
  });
});

describe('the file source: hot reload and refusal', () => {
  let gw: TestGateway;
  const good = (planName?: string) => [upstream('openai', 'https://api.openai.com/v1'), model('gpt-4o', [{ upstream: 'openai' }]), plan('pro', ['gpt-4o']), account('acme', planName), apiKey(key)];

  beforeAll(async () => {
    gw = await startTestGateway(good());
  });
  afterAll(() => gw.stop());

  async function catalogue() {
    return (await gw.client(key.key).models.list()).data.map((m) => m.id);
  }

  /** Waits on the condition, bounded: the brief promises a change within 2 seconds. */
  async function within(ms: number, condition: () => Promise<boolean>) {
    const deadline = Date.now() + ms;
    while (Date.now() < deadline) {
      if (await condition()) return true;
      await new Promise((resolve) => setImmediate(resolve));
    }
    return condition();
  }

  it('applies an edit to the file within 2 seconds, without a restart', async () => {
    expect(await catalogue()).toEqual(['service-test']);
    await writeFile(gw.configFile, toYaml(good('pro')));
    expect(await within(2000, async () => (await catalogue()).includes('gpt-4o'))).toBe(true);
  });

  it('refuses an invalid file with a log line naming the document and field; the last good snapshot keeps serving', async () => {
    const before = await catalogue();
    const broken = good('pro');
    (broken[1] as { spec: { targets: unknown } }).spec.targets = [{ upstream: 'Not A Name' }];
    const generation = gw.store.generation;
    await writeFile(gw.configFile, toYaml(broken));
    await gw.source.reload();
    expect(gw.store.generation).toBe(generation);
    expect(await catalogue()).toEqual(before);
    const refusal = gw.logs.find((l) => typeof l.msg === 'string' && l.msg.includes('config refused'));
    expect(refusal?.msg).toContain('document 2');
    expect(refusal?.msg).toContain('Model gpt-4o');
    expect(refusal?.msg).toContain('spec.targets[0].upstream');
    expect(gw.source.status.lastError).not.toBeNull();
  });

  it('refuses YAML syntax errors and duplicate names, and recovers when fixed', async () => {
    await writeFile(gw.configFile, 'apiVersion: tollgate.dev/v1alpha1\nkind: [unclosed\n');
    await gw.source.reload();
    expect(gw.source.status.lastError?.[0]).toMatch(/document 1 \(line 1\): YAML syntax/);
    await writeFile(gw.configFile, toYaml([...good('pro'), account('acme')]));
    await gw.source.reload();
    expect(gw.source.status.lastError?.[0]).toContain('duplicates document');
    expect(await catalogue()).toContain('gpt-4o');
    await gw.writeManifests(good());
    expect(await catalogue()).toEqual(['service-test']);
    expect(gw.source.status.lastError).toBeNull();
  });

  it('a request never sees a half-applied change', async () => {
    const seen = new Set<string>();
    let running = true;
    const readers = Array.from({ length: 4 }, async () => {
      while (running) seen.add((await catalogue()).join(','));
    });
    for (let i = 0; i < 10; i++) await gw.writeManifests(good(i % 2 === 0 ? 'pro' : undefined));
    running = false;
    await Promise.all(readers);
    for (const catalogueSeen of seen) expect(['service-test', 'service-test,gpt-4o']).toContain(catalogueSeen);
  });

  it('refuses to start on an invalid file', async () => {
    await expect(startTestGateway([{ apiVersion: 'tollgate.dev/v1alpha1', kind: 'Plan', metadata: { name: 'p' }, spec: { models: 'not-a-list' } }])).rejects.toThrow(/spec.models/);
  });
});

describe('access log', () => {
  it('writes one JSON line per request with route, model, status, duration and request id', async () => {
    const gw = await startTestGateway([account('acme'), apiKey(key)]);
    try {
      const response = await raw(gw, 'POST', '/v1/chat/completions', { key: key.key, body: { model: 'service-test', messages: [{ role: 'user', content: 'log me' }] } });
      expect(response.status).toBe(200);
      const id = response.headers.get('x-service-request-id');
      const deadline = Date.now() + 2000;
      while (!gw.logs.some((l) => l.requestId === id) && Date.now() < deadline) await new Promise((r) => setImmediate(r));
      const lines = gw.logs.filter((l) => l.requestId === id);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatchObject({ method: 'POST', route: '/v1/chat/completions', model: 'service-test', status: 200 });
      expect(typeof lines[0].durationMs).toBe('number');
      expect(typeof lines[0].time).toBe('number');
      expect(gw.logText()).not.toContain(key.key);
      expectErrorShape(await raw(gw, 'POST', '/v1/chat/completions', { key: key.key, body: '{' }), 400, 'invalid_json');
    } finally {
      await gw.stop();
    }
  });
});
