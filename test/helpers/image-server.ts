// A local web server of images for the tests of image URLs the gateway fetches: real PNGs, a page of
// HTML, a file that lies about its type, one that never ends, one that never answers, redirects (to
// itself, in a loop, to another address), and a log of every path asked for and every answer cut off.
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PNG } from 'pngjs';

export interface ImageServer {
  /** `http://127.0.0.1:<port>` (or the host it was started on). */
  origin: string;
  port: number;
  /** Paths asked for, in order. */
  hits: string[];
  /** Paths whose answer the client cut off before it was whole. */
  cut: string[];
  /** Paths whose request arrived and was left unanswered (`/hang.png`). */
  hanging: string[];
  images: Record<string, Buffer>;
  /** Where `/redirect-away` sends the client. */
  redirectAway: string;
  close(): Promise<void>;
}

export function png(width: number, height: number, pixel: (i: number) => [number, number, number, number]): Buffer {
  const image = new PNG({ width, height });
  for (let i = 0; i < width * height; i++) image.data.set(pixel(i), i * 4);
  return PNG.sync.write(image);
}

/** A PNG of random pixels: as many bytes as its pixels, whatever zlib does. */
export function noisePng(side: number): Buffer {
  const noise = randomBytes(side * side * 4);
  return png(side, side, (i) => [noise[i * 4], noise[i * 4 + 1], noise[i * 4 + 2], 255]);
}

export async function startImageServer(host = '127.0.0.1', redirectAway = ''): Promise<ImageServer> {
  const images: Record<string, Buffer> = {
    '/red.png': png(3, 2, () => [200, 20, 20, 255]),
    '/blue.png': png(2, 2, () => [20, 20, 200, 255]),
    '/noise-a.png': noisePng(120),
    '/noise-b.png': noisePng(120),
    // A JPEG's markers are enough for the type: the gateway judges bytes, the fakes count them.
    '/photo.jpg': Buffer.concat([Buffer.from('ffd8ffe000104a46494600010100000100010000', 'hex'), randomBytes(64), Buffer.from('ffd9', 'hex')]),
  };
  const hits: string[] = [];
  const cut: string[] = [];
  const hanging: string[] = [];
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    hits.push(path);
    res.on('close', () => {
      if (!res.writableFinished) cut.push(path);
    });
    const image = images[path];
    if (image) {
      // The JPEG is sent without a Content-Type (as some stores do): its bytes decide.
      res.writeHead(200, path.endsWith('.jpg') ? { 'content-length': image.length } : { 'content-type': 'image/png', 'content-length': image.length });
      res.end(image);
    } else if (path === '/page.html') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end('<!doctype html><title>not an image</title>');
    } else if (path === '/lies.png') {
      res.writeHead(200, { 'content-type': 'image/png' });
      res.end('<!doctype html><html><body>a page calling itself a PNG</body></html>');
    } else if (path === '/endless.png') {
      // A PNG's signature, then bytes for as long as the client reads: no Content-Length to refuse by.
      res.writeHead(200, { 'content-type': 'image/png' });
      res.write(Buffer.from('89504e470d0a1a0a', 'hex'));
      const piece = Buffer.alloc(16 * 1024);
      const more = () => {
        while (!res.destroyed && res.write(piece));
      };
      res.on('drain', more);
      more();
    } else if (path === '/hang.png') {
      hanging.push(path);
    } else if (path === '/redirect-ok') {
      res.writeHead(302, { location: '/red.png' });
      res.end();
    } else if (path === '/redirect-loop') {
      res.writeHead(302, { location: '/redirect-loop' });
      res.end();
    } else if (path === '/redirect-away') {
      res.writeHead(307, { location: redirectAway });
      res.end();
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    origin: `http://${host}:${port}`,
    port,
    hits,
    cut,
    hanging,
    images,
    redirectAway,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A port nothing listens on: taken from the system, then let go. */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
