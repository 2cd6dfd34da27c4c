// The figures of docs/reliability.md: each hostile case against a real gateway process (the pinned
// node, gateway/src/main.ts, forked with scripts/loop-monitor.mjs preloaded), measuring the time to
// the answer, the gateway's own event-loop delay (perf_hooks.monitorEventLoopDelay, max over the case)
// and its RSS (before, peak, after). Run: `npx node scripts/hostile-matrix.ts` (about two minutes).
// The suite in test/hostile/ asserts the behaviour; this only measures it.
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { account, apiKey, model, newKey, plan, toYaml, upstream } from '../test/helpers/gateway.ts';
import { startFakeUpstream, type FakeUpstream } from '../test/fakes/upstream.ts';
import { firstResponse, rawExchange, rssOf } from '../test/hostile/harness.ts';

const MAIN = fileURLToPath(new URL('../gateway/src/main.ts', import.meta.url));
const MONITOR = fileURLToPath(new URL('./loop-monitor.mjs', import.meta.url));
const MB = 1024 * 1024;
const key = newKey('k', 'acme');

interface Sample {
  maxDelayMs: number;
  p99DelayMs: number;
  peakRss: number;
  rss: number;
}

interface Gateway {
  child: ChildProcess;
  url: string;
  port: number;
  ask(message: 'reset' | 'sample'): Promise<Sample & { rss: number }>;
}

async function startGateway(dir: string, fake: FakeUpstream, extraEnv: Record<string, string> = {}): Promise<Gateway> {
  const configFile = path.join(dir, 'tollgate.yaml');
  await writeFile(configFile, toYaml([upstream('up', fake.url, 'MATRIX_UPSTREAM_KEY'), model('m', [{ upstream: 'up' }]), plan('pro', ['m', 'service-test']), account('acme', 'pro'), apiKey(key)]));
  const child = fork(MAIN, [], {
    execArgv: ['--import', MONITOR],
    env: { PATH: process.env.PATH, PORT: '0', HOST: '127.0.0.1', TOLLGATE_CONFIG: configFile, TOLLGATE_DATA_DIR: path.join(dir, 'data'), TOLLGATE_BOOTSTRAP_KEY: 'false', TOLLGATE_METRICS_PORT: 'off', MATRIX_UPSTREAM_KEY: 'sk-matrix-credential', TOLLGATE_BODY_IDLE_TIMEOUT_MS: '2000', TOLLGATE_HEADERS_TIMEOUT_MS: '2000', ...extraEnv },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  let out = '';
  child.stdout!.on('data', (chunk) => (out += chunk));
  child.stderr!.on('data', (chunk) => (out += chunk));
  const port = await new Promise<number>((resolve, reject) => {
    const started = Date.now();
    const poll = setInterval(async () => {
      const match = /"url":"http:\/\/127\.0\.0\.1:(\d+)"/.exec(out);
      if (match) {
        clearInterval(poll);
        resolve(Number(match[1]));
      } else if (Date.now() - started > 30_000) {
        clearInterval(poll);
        reject(new Error(`the gateway did not start: ${out}`));
      }
    }, 50);
  });
  const ask = (message: 'reset' | 'sample') =>
    new Promise<Sample>((resolve) => {
      child.once('message', (reply) => resolve(reply as Sample));
      child.send(message);
    });
  return { child, url: `http://127.0.0.1:${port}`, port, ask };
}

interface Row {
  name: string;
  expected: string;
  observed: string;
  ms: number;
  sample: Sample;
  rssBefore: number;
}

const rows: Row[] = [];

async function measure(gw: Gateway, name: string, expected: string, work: () => Promise<string>): Promise<void> {
  const before = await gw.ask('reset');
  const started = performance.now();
  let observed: string;
  try {
    observed = await work();
  } catch (error) {
    observed = `threw: ${(error as Error).message}`;
  }
  const ms = performance.now() - started;
  // RSS "after": once the case's memory had a moment to be collected.
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const sample = await gw.ask('sample');
  rows.push({ name, expected, observed, ms, sample, rssBefore: before.rss });
  process.stderr.write(`${name}: ${observed} (${ms.toFixed(0)} ms, loop max ${sample.maxDelayMs.toFixed(1)} ms)\n`);
}

async function post(gw: Gateway, pathname: string, body: string | Buffer, headers: Record<string, string> = {}): Promise<string> {
  const response = await fetch(`${gw.url}${pathname}`, { method: 'POST', headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : new Uint8Array(body) });
  const text = await response.text();
  let code = '';
  try {
    code = JSON.parse(text).error?.code ?? '';
  } catch {}
  return `${response.status}${code ? ` ${code}` : ''}`;
}

function padded(size: number): Buffer {
  const head = '{"model":"service-test","messages":[{"role":"user","content":"hi"}],"padding":"';
  return Buffer.concat([Buffer.from(head), Buffer.alloc(size - head.length - 2, 'a'), Buffer.from('"}')]);
}

const chat = (content: string) => JSON.stringify({ model: 'service-test', messages: [{ role: 'user', content }] });
const authLine = () => `Authorization: Bearer ${key.key}\r\n`;

async function main() {
  const dir = await mkdtemp(path.join(tmpdir(), 'tollgate-matrix-'));
  const fake = await startFakeUpstream('up');
  const gw = await startGateway(dir, fake);
  const sdk = new OpenAI({ apiKey: key.key, baseURL: `${gw.url}/v1`, maxRetries: 0, timeout: 60_000 });
  try {
    await measure(gw, 'normal chat request (baseline)', '200', () => post(gw, '/v1/chat/completions', chat('hi')));
    await measure(gw, 'truncated JSON', '400 invalid_json', () => post(gw, '/v1/chat/completions', '{"model":"service-test","mess'));
    await measure(gw, '5000-deep JSON with a repeated key', '400 json_too_deep', () => post(gw, '/v1/chat/completions', `{"model":"service-test","messages":[],"user":"a","user":"b","x":${'['.repeat(5000)}${']'.repeat(5000)}}`));
    await measure(gw, '1 MB `role` value', '400, message clipped', async () => {
      const r = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'service-test', messages: [{ role: 'r'.repeat(MB), content: 'hi' }] }) });
      return `${r.status}, ${(await r.text()).length} bytes answered`;
    });
    await measure(gw, "160,000 × 'a' in one message (free tier)", '200, loop not blocked', () => post(gw, '/v1/chat/completions', chat('a'.repeat(160_000))));
    await measure(gw, 'charset=utf-16 body', '415', () => post(gw, '/v1/chat/completions', chat('hi'), { 'content-type': 'application/json; charset=utf-16' }));
    await measure(gw, 'body just under 50 MB (declared)', 'read, 400 unknown parameter', () => post(gw, '/v1/chat/completions', padded(50 * MB - 1024)));
    // Large bodies parsed off the event loop (docs/adr/0021). The fake upstream reads the first MB of
    // a body as JSON; for these it answers without reading them.
    fake.behave({
      respond: (req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        const usage = { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 };
        res.end(JSON.stringify(req.url!.endsWith('/embeddings')
          ? { object: 'list', model: 'm', data: [{ object: 'embedding', index: 0, embedding: [0.1] }], usage }
          : { id: 'chatcmpl-big', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: 'read' } }], usage }));
      },
    });
    const messageOf = (size: number, model: string, fill = 'a') => Buffer.concat([Buffer.from(`{"model":"${model}","messages":[{"role":"user","content":"`), Buffer.alloc(size, fill), Buffer.from('"}]}')]);
    await measure(gw, '49 MB chat body to an upstream model', '200, relayed as sent, loop not blocked', () => post(gw, '/v1/chat/completions', messageOf(49 * MB, 'm')));
    await measure(gw, '4 million token ids (27 MB) to upstream embeddings', '200, relayed as sent, loop not blocked', () => post(gw, '/v1/embeddings', JSON.stringify({ model: 'm', input: [Array.from({ length: 4_000_000 }, (_, i) => i % 100_000)] })));
    fake.behave({});
    await measure(gw, '45 MB message to service-test', '200, read whole in pieces, loop not blocked', () => post(gw, '/v1/chat/completions', messageOf(45 * MB, 'service-test', 'word ')));
    await measure(gw, 'body just over 50 MB (declared)', '413 before reading', () => post(gw, '/v1/chat/completions', padded(50 * MB + 1024)));
    await measure(gw, '12 concurrent 20 MB uploads', 'some 503 server_busy + Retry-After, no crash', async () => {
      const body = padded(20 * MB);
      const answers = await Promise.all(Array.from({ length: 12 }, () => post(gw, '/v1/chat/completions', body)));
      const counts = new Map<string, number>();
      for (const a of answers) counts.set(a, (counts.get(a) ?? 0) + 1);
      return [...counts].map(([a, n]) => `${n}× ${a}`).join(', ');
    });
    await measure(gw, 'body stops after 20 of 200 declared bytes', '408 request_timeout after the idle timeout (2 s here)', async () => {
      const r = await rawExchange(gw.port, [`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n${authLine()}Content-Type: application/json\r\nContent-Length: 200\r\n\r\n{"model":"service-te`], { quietMs: 5000 });
      const a = firstResponse(r.text);
      return `${a.status} ${a.json?.error?.code ?? ''}, closed: ${r.closed}`;
    });
    await measure(gw, 'slowloris headers (1 byte / 50 ms)', 'closed after the headers timeout (2 s here)', async () => {
      const r = await rawExchange(gw.port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: '.split('').concat(Array(200).fill('a')), { gapMs: 50, quietMs: 8000 });
      return `${firstResponse(r.text).status || 'no answer'}, closed: ${r.closed}`;
    });
    await measure(gw, '300 idle keep-alive connections, then a request', '200', async () => {
      const sockets: Socket[] = Array.from({ length: 300 }, () => connect(gw.port, '127.0.0.1').on('error', () => {}));
      await Promise.all(sockets.map((s) => new Promise((resolve) => s.once('connect', resolve))));
      const answer = await post(gw, '/v1/chat/completions', chat('hi'));
      for (const s of sockets) s.destroy();
      return answer;
    });
    await measure(gw, '500 requests with random keys', 'all 401', async () => {
      const statuses = new Set<number>();
      for (let i = 0; i < 10; i++) {
        const batch = await Promise.all(Array.from({ length: 50 }, () => fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${newKey('x', 'y').key}` } }).then(async (r) => (await r.text(), r.status))));
        for (const s of batch) statuses.add(s);
      }
      return [...statuses].join(',');
    });
    await measure(gw, 'a file plus 9,999 form fields', '400 too_many_parts', async () => {
      const b = 'matrix';
      const field = (n: string) => `--${b}\r\nContent-Disposition: form-data; name="${n}"\r\n\r\nx\r\n`;
      const form = `--${b}\r\nContent-Disposition: form-data; name="file"; filename="a.jsonl"\r\n\r\n{}\r\n${field('purpose')}${Array.from({ length: 9999 }, (_, i) => field(`f${i}`)).join('')}--${b}--\r\n`;
      return post(gw, '/v1/files', form, { 'content-type': `multipart/form-data; boundary=${b}` });
    });
    await measure(gw, 'Content-Length + Transfer-Encoding (smuggling)', '400 malformed_request, closed, one answer', async () => {
      const r = await rawExchange(gw.port, [`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n${authLine()}Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n`]);
      return `${firstResponse(r.text).status}, answers: ${r.text.match(/(^|\r\n)HTTP\/1\.1 \d{3} /g)?.length ?? 0}, closed: ${r.closed}`;
    });
    await measure(gw, 'upstream answers 503 (no target left)', '503 in the error shape', async () => {
      fake.behave({ status: 503 });
      const e = await sdk.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }).catch((error) => error);
      fake.behave({});
      return `${e.status} ${e.code ?? ''}`;
    });
    await measure(gw, 'upstream resets mid-stream', 'in-band error the SDK raises', async () => {
      fake.behave({ chunks: 10, resetAfterChunks: 3 });
      try {
        for await (const _ of await sdk.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: true }));
        return 'ended without error';
      } catch (error) {
        return `raised: ${(error as Error).message.slice(0, 60)}…`;
      } finally {
        fake.behave({});
      }
    });
    await measure(gw, 'upstream sends one 120 MB event', 'in-band error upstream_event_too_large; RSS bounded', async () => {
      const chunk = Buffer.alloc(256 * 1024, 'y');
      fake.behave({
        respond: async (_req, res) => {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.write('data: {"choices":[{"index":0,"delta":{"content":"');
          for (let i = 0; i < 480 && !res.destroyed; i++) if (!res.write(chunk)) await new Promise((r) => res.once('drain', r));
          res.end('"}}]}\n\n');
        },
      });
      try {
        for await (const _ of await sdk.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: true }));
        return 'ended without error';
      } catch (error) {
        return `raised: ${(error as Error).message.slice(0, 60)}…`;
      } finally {
        fake.behave({});
      }
    });
    await measure(gw, 'stream client that never reads (5000 × 4 KB events)', 'upstream paused by backpressure; RSS bounded', async () => {
      fake.behave({ chunks: 5000, chunkPadding: 4096 });
      const socket = connect(gw.port, '127.0.0.1');
      const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: true });
      socket.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n${authLine()}Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
      socket.pause();
      const deadline = Date.now() + 10_000;
      while (!fake.blocked && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      const sent = fake.sent;
      socket.destroy();
      fake.behave({});
      return `upstream blocked: ${fake.blocked}, ${(sent / MB).toFixed(1)} MB written of ${((5000 * 4200) / MB).toFixed(0)} MB`;
    });
    await measure(gw, '50 concurrent 40 MB uploads to service-test, then idle', 'some 503 server_busy; RSS back within 64 MB of before', async () => {
      const body = messageOf(40 * MB, 'service-test', 'word ');
      const before = rssOf(gw.child.pid!);
      const answers = await Promise.all(Array.from({ length: 50 }, () => post(gw, '/v1/chat/completions', body)));
      const counts = new Map<string, number>();
      for (const a of answers) counts.set(a, (counts.get(a) ?? 0) + 1);
      const idle = performance.now();
      while (rssOf(gw.child.pid!) > before + 64 * MB && performance.now() - idle < 60_000) await new Promise((r) => setTimeout(r, 100));
      const back = ((performance.now() - idle) / 1000).toFixed(1);
      return `${[...counts].map(([k, v]) => `${v}× ${k}`).join(', ')}; RSS back to ${(rssOf(gw.child.pid!) / MB).toFixed(0)} MB ${back} s after the last answer`;
    });
    await measure(gw, 'normal chat request after all of the above', '200', () => post(gw, '/v1/chat/completions', chat('hi')));
  } finally {
    gw.child.kill('SIGKILL');
    await fake.close();
    await rm(dir, { recursive: true, force: true });
  }
  const mb = (bytes: number) => (bytes / MB).toFixed(0);
  console.log('| Case | Expected | Observed | Time to answer | Event-loop delay max (p99) | RSS before → peak → after (MB) |');
  console.log('|---|---|---|---|---|---|');
  for (const row of rows) {
    console.log(`| ${row.name} | ${row.expected} | ${row.observed.replaceAll('|', '/')} | ${row.ms.toFixed(0)} ms | ${row.sample.maxDelayMs.toFixed(1)} ms (${row.sample.p99DelayMs.toFixed(1)}) | ${mb(row.rssBefore)} → ${mb(row.sample.peakRss)} → ${mb(row.sample.rss)} |`);
  }
}

await main();
