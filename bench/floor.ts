// The floor: the least a Node.js proxy can do. A bare node:http server and one undici Pool; the
// client's Authorization header is replaced by the upstream credential, hop-by-hop headers are
// dropped, and bodies are piped both ways without being read. Whatever Tollgate spends beyond this
// is the cost of its features.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pool, type Dispatcher } from 'undici';

const UPSTREAM = process.env.BENCH_UPSTREAM_ORIGIN;
if (!UPSTREAM) throw new Error('BENCH_UPSTREAM_ORIGIN is required');
const AUTH = `Bearer ${process.env.BENCH_UPSTREAM_KEY ?? 'bench-upstream-secret'}`;
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'host', 'authorization']);

// As many connections as Tollgate's bench Upstream gets (maxConnections), so both queue alike.
const pool = new Pool(UPSTREAM, { connections: Number(process.env.BENCH_MAX_CONNECTIONS ?? 2000), keepAliveTimeout: 30_000, headersTimeout: 0, bodyTimeout: 0 });

const server = createServer({ keepAliveTimeout: 60_000, requestTimeout: 0 }, (req, res) => {
  const headers: Record<string, string | string[]> = { authorization: AUTH };
  for (const [name, value] of Object.entries(req.headers)) if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = value;
  const abort = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) abort.abort();
  });
  const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
  pool.request({ path: req.url ?? '/', method: req.method as Dispatcher.HttpMethod, headers, body: hasBody ? req : undefined, signal: abort.signal }).then(
    (upstream) => {
      const out: Record<string, string | string[]> = {};
      for (const [name, value] of Object.entries(upstream.headers)) if (value !== undefined && !HOP_BY_HOP.has(name)) out[name] = value;
      res.writeHead(upstream.statusCode, out);
      // Stream answers must reach the client chunk by chunk, as Tollgate sends them.
      if (String(upstream.headers['content-type'] ?? '').startsWith('text/event-stream')) res.socket?.setNoDelay(true);
      // pipe() and two listeners rather than stream.pipeline, whose clean-up creates an AbortError
      // (a DOMException with a stack trace) for every finished request: 8% of this proxy's CPU.
      upstream.body.once('error', () => res.destroy());
      res.once('close', () => {
        if (!res.writableFinished) upstream.body.destroy();
      });
      upstream.body.pipe(res);
    },
    () => {
      if (res.headersSent) return void res.destroy();
      res.writeHead(502, { 'content-type': 'application/json' });
      res.end('{"error":{"message":"floor: upstream failed","type":"server_error","param":null,"code":"upstream_unavailable"}}');
    },
  );
});
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  process.send?.({ ready: true, port });
  if (!process.send) console.log(`floor proxy on http://127.0.0.1:${port}`);
});
process.on('disconnect', () => process.exit(0));
// A normal exit, so that --cpu-prof (bench --profile) writes its profile.
process.on('SIGTERM', () => process.exit(0));
