// The manifest file under an unlucky operator, while requests run: turned invalid, deleted,
// truncated to nothing, recreated. The last good state keeps serving through all of it, the file's
// next good version applies, and no key reaches a log line about a refused file.
import { rm, writeFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { account, apiKey, newKey, plan, startTestGateway, toYaml, type TestGateway } from '../helpers/gateway.ts';
import { waitFor } from '../helpers/wait.ts';
import { registerLogs, registerSecret, scanLogs } from './harness.ts';

const key = newKey('k', 'acme');
const second = newKey('k2', 'acme');
registerSecret(key.key);
registerSecret(second.key);
let gw: TestGateway;
const good = (keys = [key]) => toYaml([plan('pro', ['service-test']), account('acme', 'pro'), ...keys.map(apiKey)]);

beforeAll(async () => {
  gw = await startTestGateway([plan('pro', ['service-test']), account('acme', 'pro'), apiKey(key)]);
  registerLogs(() => gw.logText());
});
afterAll(async () => {
  await gw?.stop();
});

async function serves(k = key.key): Promise<number> {
  const response = await fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${k}` } });
  await response.text();
  return response.status;
}

describe('the manifest file turning bad', () => {
  it('invalid YAML, a schema error, an empty file, a deleted file: the last good state keeps serving', async () => {
    const generation = gw.store.generation;
    const bad = ['kind: [unclosed\n', toYaml([{ apiVersion: 'tollgate.dev/v1alpha1', kind: 'Plan', metadata: { name: 'p' }, spec: { models: 'no' } }]), '', '\0\0\0binary'];
    for (const text of bad) {
      await writeFile(gw.configFile, text);
      await gw.source.reload().catch(() => {});
      expect(await serves()).toBe(200);
    }
    await rm(gw.configFile);
    await gw.source.reload().catch(() => {});
    expect(await serves()).toBe(200);
    expect(gw.store.generation).toBe(generation);
    expect(gw.source.status.lastError).not.toBeNull();
  });

  it('recreated with a new key: applied without a restart (file events or the poll)', async () => {
    await writeFile(gw.configFile, good([key, second]));
    await waitFor(async () => (await serves(second.key)) === 200, 10_000, 'the recreated file to apply');
    expect(await serves()).toBe(200);
    expect(gw.source.status.lastError).toBeNull();
  });
});

afterAll(() => {
  expect(scanLogs()).toEqual([]);
});
