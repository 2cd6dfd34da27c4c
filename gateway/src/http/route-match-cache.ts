// @koa/router finds a request's routes by testing every route's pattern in turn, with a debug() call
// for each: on a proxied chat request that was the largest single allocation of the whole request.
// What it finds depends only on the method and the path, so for the paths that name no parameter (the
// API's own fixed paths: /v1/chat/completions, /v1/embeddings …) the answer is kept and reused. Paths
// with parameters (/v1/files/{id}) and paths that match no route are not kept: what is kept is bounded
// by the routes registered, whatever clients send.
import type Router from '@koa/router';

type Match = ReturnType<Router['match']>;

export function cacheStaticRouteMatches(router: Router): void {
  const match = router.match.bind(router);
  const byMethod = new Map<string, Map<string, Match>>();
  router.match = (path: string, method: string): Match => {
    const kept = byMethod.get(method)?.get(path);
    if (kept) return kept;
    const found = match(path, method);
    if (found.route && found.path.every((layer) => layer.paramNames.length === 0)) {
      // Shared by every request on this path: frozen, so that a router that would add to it
      // (nested routers push onto ctx.matched) fails loudly instead of changing later requests.
      Object.freeze(found.path);
      Object.freeze(found.pathAndMethod);
      let paths = byMethod.get(method);
      if (!paths) byMethod.set(method, (paths = new Map()));
      paths.set(path, Object.freeze(found) as Match);
    }
    return found;
  };
}
