// A local OTLP/HTTP trace sink for the bench: accepts every export (JSON or protobuf), reads it, and
// answers 200 with nothing in it. The gateway's exporter then does all its real work (batching,
// encoding, a POST per batch) while nothing outside the machine is involved.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

let exports = 0;
let bytes = 0;
const server = createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
  req.on('data', (chunk: Buffer) => (bytes += chunk.length));
  req.on('end', () => {
    exports++;
    const protobuf = !String(req.headers['content-type'] ?? '').includes('json');
    res.writeHead(200, { 'content-type': protobuf ? 'application/x-protobuf' : 'application/json' });
    res.end(protobuf ? undefined : '{}');
  });
});
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  process.send?.({ ready: true, port });
});
process.on('disconnect', () => process.exit(0));
process.on('SIGTERM', () => {
  process.stderr.write(`otlp sink: ${exports} exports, ${(bytes / 1024).toFixed(0)} KB\n`);
  process.exit(0);
});
