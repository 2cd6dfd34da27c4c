import { describe, expect, it } from 'vitest';
import type { KubeObject } from '@tollgate/kube';
import { referencedSecrets, SecretIndex } from './secret-index.ts';

const secret = (name: string, data: Record<string, string>) => ({ metadata: { name, resourceVersion: '1', labels: { a: 'b' } }, type: 'Opaque', data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])) });

describe('SecretIndex', () => {
  it('keeps the data of referenced Secrets only, decodes on lookup, and trims the newline files end with', () => {
    const index = new SecretIndex();
    const held = new Map<string, KubeObject>();
    index.attach(held);
    index.reference(new Set(['provider']));
    held.set('provider', index.keep(secret('provider', { apiKey: 'sk-1\n', empty: '' })));
    held.set('operator-key', index.keep(secret('operator-key', { key: 'tg_sk_private' })));
    expect(index.lookup('provider', 'apiKey')).toBe('sk-1');
    expect(index.lookup('provider', 'empty')).toBeUndefined();
    expect(index.lookup('provider', 'missing')).toBeUndefined();
    expect(index.lookup('operator-key', 'key')).toBeUndefined();
    expect(JSON.stringify([...held.values()])).not.toContain(Buffer.from('tg_sk_private').toString('base64'));
  });

  it('asks for a relist when a Secret held without data becomes referenced, and forgets data no longer referenced', () => {
    const index = new SecretIndex();
    const held = new Map<string, KubeObject>();
    index.attach(held);
    held.set('later', index.keep(secret('later', { apiKey: 'sk-2' })));
    expect(index.reference(new Set(['later']))).toBe(true);
    held.set('later', index.keep(secret('later', { apiKey: 'sk-2' })));
    expect(index.lookup('later', 'apiKey')).toBe('sk-2');
    expect(index.reference(new Set(['later']))).toBe(false);
    expect(index.reference(new Set())).toBe(false);
    expect(index.lookup('later', 'apiKey')).toBeUndefined();
    expect(held.get('later')).toEqual({ metadata: { name: 'later', resourceVersion: '1' } });
  });

  it('reads secretRef names from raw Upstream objects, ignoring env credentials and malformed specs', () => {
    const upstreams = [
      { spec: { credentials: { secretRef: { name: 'a', key: 'k' } } } },
      { spec: { credentials: { env: 'X' } } },
      { spec: { credentials: { secretRef: { name: 7 } } } },
      {},
      { spec: { provider: 'bedrock', bedrock: { region: 'us-east-1', accessKeyId: { secretRef: { name: 'aws', key: 'id' } }, secretAccessKey: { secretRef: { name: 'aws', key: 'secret' } }, sessionToken: { secretRef: { name: 'sts', key: 'token' } } } } },
    ];
    expect([...referencedSecrets(upstreams)]).toEqual(['a', 'aws', 'sts']);
  });
});
