// The manifests file Tollgate runs the bench on: one Upstream (the fake), the bench Models, one Plan
// with limits set high enough never to trigger, and N ApiKeys spread over accounts of ten keys each.
// Written by hand as flow-style YAML: the `yaml` package's stringify takes seconds for 100k documents,
// and the generator's speed is not what is being measured.
import { createHash, randomBytes } from 'node:crypto';

const API = 'tollgate.dev/v1alpha1';
export const KEYS_PER_ACCOUNT = 10;
export const UPSTREAM_SECRET_ENV = 'BENCH_UPSTREAM_KEY';

/** Generous enough that the bench never meets a limit, present so that every check runs. */
export const BENCH_LIMITS = { requestsPerMinute: 1_000_000_000, tokensPerMinute: 1_000_000_000_000, concurrentRequests: 1_000_000, tokensPerMonth: 1_000_000_000_000_000 };

export interface BenchKeys {
  /** Full keys, in the order of their ApiKey documents. */
  keys: string[];
  yaml: string;
}

export function benchManifests(options: { upstreamURL: string; models: string[]; keyCount: number; maxConnections: number }): BenchKeys {
  const parts: string[] = [];
  parts.push(
    doc('Upstream', 'fake', `{ baseURL: "${options.upstreamURL}", credentials: { env: ${UPSTREAM_SECRET_ENV} }, maxConnections: ${options.maxConnections} }`),
  );
  // The same fake as an Anthropic API: the translated scenarios' models (bench-claude*) go through the
  // gateway's anthropic provider, to the fake's /v1/messages, as the bench model of the same suffix.
  const origin = new URL(options.upstreamURL).origin;
  if (options.models.some((model) => model.startsWith('bench-claude'))) parts.push(doc('Upstream', 'fake-anthropic', `{ provider: anthropic, baseURL: "${origin}", credentials: { env: ${UPSTREAM_SECRET_ENV} }, maxConnections: ${options.maxConnections} }`));
  for (const model of options.models) {
    const translated = model.startsWith('bench-claude');
    parts.push(doc('Model', model, translated ? `{ targets: [{ upstream: fake-anthropic, model: "${model.replace('bench-claude', 'bench')}" }] }` : `{ targets: [{ upstream: fake }] }`));
  }
  const limits = Object.entries(BENCH_LIMITS).map(([k, v]) => `${k}: ${v}`).join(', ');
  parts.push(doc('Plan', 'bench', `{ models: ["bench*"], limits: { ${limits} } }`));
  const accounts = Math.ceil(options.keyCount / KEYS_PER_ACCOUNT);
  for (let a = 0; a < accounts; a++) parts.push(doc('Account', `acct-${a}`, `{ plan: bench }`));
  const keys: string[] = [];
  for (let i = 0; i < options.keyCount; i++) {
    const key = `tg_sk_${randomBytes(32).toString('base64url')}`;
    keys.push(key);
    const hash = createHash('sha256').update(key).digest('hex');
    parts.push(doc('ApiKey', `key-${i}`, `{ account: acct-${Math.floor(i / KEYS_PER_ACCOUNT)}, keyHash: "sha256:${hash}" }`));
  }
  return { keys, yaml: parts.join('') };
}

function doc(kind: string, name: string, spec: string): string {
  return `---\napiVersion: ${API}\nkind: ${kind}\nmetadata: { name: ${name} }\nspec: ${spec}\n`;
}
