// First start on the embedded default: seed the manifest file from the bundled example, and when the
// file holds no ApiKey at all, mint one for the demo account. The full key is returned once for the
// caller to print; only its hash is written.
import { copyFile, mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { API_VERSION, type Account, type ApiKey } from '@tollgate/crds';
import { BUNDLED_EXAMPLE, type GatewayConfig } from '../config.ts';
import { generateKey, hashKey } from './keys.ts';
import { appendDocuments, readResources } from './manifest-file.ts';

export const DEMO_ACCOUNT = 'demo';

export async function prepareConfigFile(config: GatewayConfig): Promise<void> {
  if (config.configFileExplicit) return;
  await mkdir(path.dirname(config.configFile), { recursive: true });
  try {
    await readFile(config.configFile);
  } catch {
    await copyFile(BUNDLED_EXAMPLE, config.configFile);
  }
}

/** Returns the new full key when one was created, otherwise null. */
export async function ensureDemoKey(config: GatewayConfig): Promise<string | null> {
  if (!config.bootstrapDemoKey) return null;
  const documents = (await readResources(config.configFile)) as Array<{ kind?: string; metadata?: { name?: string } }>;
  if (documents.some((d) => d.kind === 'ApiKey')) return null;
  const created: Array<Account | ApiKey> = [];
  if (!documents.some((d) => d.kind === 'Account' && d.metadata?.name === DEMO_ACCOUNT)) {
    created.push({ apiVersion: API_VERSION, kind: 'Account', metadata: { name: DEMO_ACCOUNT }, spec: {} });
  }
  const key = generateKey(config.keyPrefix);
  created.push({ apiVersion: API_VERSION, kind: 'ApiKey', metadata: { name: 'demo' }, spec: { account: DEMO_ACCOUNT, keyHash: hashKey(key) } });
  await appendDocuments(config.configFile, created);
  return key;
}
