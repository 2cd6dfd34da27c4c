// The backends of one gateway, built once when the routes are registered.
import type { GatewayDeps } from '../../deps.ts';
import type { Backends } from './backend.ts';
import type { ResponseMemory } from './service-test-responses.ts';
import { createServiceTestBackend } from './service-test.ts';
import { createUpstreamBackend } from './upstream.ts';

export function createBackends(deps: GatewayDeps, memory: ResponseMemory): Backends {
  const serviceTest = createServiceTestBackend(deps, memory);
  const upstream = createUpstreamBackend(deps, memory);
  return { of: (resolved) => (resolved.kind === 'service-test' ? serviceTest : upstream) };
}
