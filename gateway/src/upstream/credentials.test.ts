import { describe, expect, it } from 'vitest';
import type { Upstream } from '@tollgate/crds';
import { Credentials } from './credentials.ts';
import { settingsOf, upstreamPath } from './settings.ts';

const API = 'tollgate.dev/v1alpha1';
const upstream = (spec: Record<string, unknown>): Upstream => ({ apiVersion: API, kind: 'Upstream', metadata: { name: 'u' }, spec: { baseURL: 'http://u.test/v1', ...spec } }) as Upstream;

describe('Credentials', () => {
  it('reads an env credential once per Upstream object: a new object (a changed manifest) reads it again', () => {
    const env: NodeJS.ProcessEnv = { KEY: 'first' };
    const credentials = new Credentials(env);
    const before = upstream({ credentials: { env: 'KEY' } });
    expect(credentials.for(before)).toBe('first');
    env.KEY = 'second';
    expect(credentials.for(before)).toBe('first');
    expect(credentials.for(upstream({ credentials: { env: 'KEY' } }))).toBe('second');
  });

  it('a missing env credential is undefined, and found once it exists', () => {
    const env: NodeJS.ProcessEnv = {};
    const credentials = new Credentials(env);
    const u = upstream({ credentials: { env: 'LATER' } });
    expect(credentials.for(u)).toBeUndefined();
    env.LATER = 'now';
    expect(credentials.for(u)).toBe('now');
    expect(credentials.for(upstream({}))).toBeNull();
  });

  it('looks a Secret up on every call, so a rotated Secret applies to the next request', () => {
    let value = 'first';
    const credentials = new Credentials({}, (name, key) => (name === 's' && key === 'k' ? value : undefined));
    const u = upstream({ credentials: { secretRef: { name: 's', key: 'k' } } });
    expect(credentials.for(u)).toBe('first');
    value = 'rotated';
    expect(credentials.for(u)).toBe('rotated');
  });
});

describe('settingsOf', () => {
  it('is worked out once per Upstream object, with a base path that ends in a slash', () => {
    const u = upstream({ baseURL: 'http://u.test/openai/v1', timeouts: { totalMs: 5 } });
    const settings = settingsOf(u);
    expect(settingsOf(u)).toBe(settings);
    expect(settings.totalMs).toBe(5);
    expect(upstreamPath(settings, '/chat/completions', '?x=1')).toBe('/openai/v1/chat/completions?x=1');
    expect(upstreamPath(settingsOf(upstream({ baseURL: 'http://u.test' })), 'models')).toBe('/models');
  });
});
