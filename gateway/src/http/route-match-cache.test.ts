import Router from '@koa/router';
import Koa from 'koa';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { cacheStaticRouteMatches } from './route-match-cache.ts';

function routes(): Router {
  const router = new Router({ sensitive: true });
  router.post('/v1/chat/completions', (ctx) => (ctx.body = { route: 'chat' }));
  router.get('/v1/files/:id', (ctx) => (ctx.body = { route: 'file', id: ctx.params.id }));
  router.get('/v1/files', (ctx) => (ctx.body = { route: 'files' }));
  return router;
}

const layerPaths = (match: ReturnType<Router['match']>) => ({ route: match.route, path: match.path.map((l) => l.path), pathAndMethod: match.pathAndMethod.map((l) => l.path) });

describe('cacheStaticRouteMatches', () => {
  it('answers every path and method as the router does', () => {
    const plain = routes();
    const cached = routes();
    cacheStaticRouteMatches(cached);
    const cases: Array<[string, string]> = [
      ['/v1/chat/completions', 'POST'],
      ['/v1/chat/completions', 'GET'],
      ['/v1/chat/completions/', 'POST'],
      ['/V1/chat/completions', 'POST'],
      ['/v1/files', 'GET'],
      ['/v1/files/file-abc', 'GET'],
      ['/v1/nothing', 'GET'],
    ];
    for (let round = 0; round < 2; round++) {
      for (const [path, method] of cases) expect(layerPaths(cached.match(path, method)), `${method} ${path}`).toEqual(layerPaths(plain.match(path, method)));
    }
  });

  it('keeps the answer for fixed paths only: not for paths with parameters, nor for paths no route matches', () => {
    const router = routes();
    cacheStaticRouteMatches(router);
    expect(router.match('/v1/chat/completions', 'POST')).toBe(router.match('/v1/chat/completions', 'POST'));
    expect(router.match('/v1/files/file-abc', 'GET')).not.toBe(router.match('/v1/files/file-abc', 'GET'));
    expect(router.match('/v1/nothing', 'GET')).not.toBe(router.match('/v1/nothing', 'GET'));
    // Another method on the same path is its own answer.
    expect(router.match('/v1/chat/completions', 'GET').route).toBe(false);
  });

  it('hands out a kept answer frozen, so that no request can change what the next one gets', () => {
    const router = routes();
    cacheStaticRouteMatches(router);
    const match = router.match('/v1/files', 'GET');
    expect(Object.isFrozen(match.path)).toBe(true);
    expect(() => (match.path as unknown[]).push('x')).toThrow(TypeError);
  });

  it('routes requests of a running app, fixed and with parameters, as before', async () => {
    const router = routes();
    cacheStaticRouteMatches(router);
    const app = new Koa();
    app.use(router.routes());
    app.use(router.allowedMethods());
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    try {
      for (let i = 0; i < 3; i++) {
        const chat = await request(`${origin}/v1/chat/completions`, { method: 'POST' });
        expect(await chat.body.json()).toEqual({ route: 'chat' });
        const file = await request(`${origin}/v1/files/file-${i}`);
        expect(await file.body.json()).toEqual({ route: 'file', id: `file-${i}` });
        const wrongMethod = await request(`${origin}/v1/chat/completions`);
        await wrongMethod.body.dump();
        expect(wrongMethod.statusCode).toBe(405);
        expect(wrongMethod.headers.allow).toBe('POST');
      }
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
