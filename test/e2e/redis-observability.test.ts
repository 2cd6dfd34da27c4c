// The shared store's degraded signal end to end: a gateway in shared mode against a real
// redis-server, scraped by a real Prometheus with the shipped rules. The test kills Redis and starts
// it again, and follows the gauge, the failure-policy counter, the log lines and the dashboard and
// alert expressions that concern the shared store (observability.test.ts runs without Redis and
// leaves these to this file).
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../gateway/src/config.ts';
import { account, apiKey, newKey, plan, raw, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { startPrometheus, type RunningPrometheus } from '../helpers/prometheus.ts';
import { startRedis, type TestRedis } from '../helpers/redis.ts';
import { waitFor } from '../helpers/wait.ts';

const DASHBOARD = new URL('../../charts/tollgate/dashboards/tollgate.json', import.meta.url);
const RULES = new URL('../../charts/tollgate/alerts/tollgate.rules.yaml', import.meta.url);
const SHARED_STORE = /tollgate_shared_store_/;
const key = newKey('k', 'acme');
const grafana = (expr: string) => expr.replaceAll('$__rate_interval', '1m').replace(/\$(namespace|pod|model)\b/g, '.*');

describe('shared store degraded: gauge, log lines, dashboard and alert against real Redis and Prometheus', () => {
  let redis: TestRedis;
  let gw: TestGateway;
  let prom: RunningPrometheus;
  let alertExpr: string;

  const gauge = async () => (await prom.query('tollgate_shared_store_degraded'))[0]?.value[1];
  const scrapedGauge = async () => {
    const text = await (await fetch(`${gw.telemetry.metricsURL}/metrics`)).text();
    return /^tollgate_shared_store_degraded (\d+)$/m.exec(text)?.[1];
  };
  // A request with a per-minute limit goes through the limit store (open failure policy by default).
  const chat = () => raw(gw, 'POST', '/v1/chat/completions', { key: key.key, body: { model: 'service-test', messages: [{ role: 'user', content: 'hi' }] } });

  beforeAll(async () => {
    redis = await startRedis();
    gw = await startTestGateway([plan('pro', ['service-test'], { requestsPerMinute: 1000 }), account('acme', 'pro'), apiKey(key)], {
      redis: { ...loadConfig({ TOLLGATE_REDIS_URL: redis.url }).redis!, commandTimeoutMs: 250 },
    });
    await gw.shared!.redis.waitReady();
    prom = await startPrometheus([{ job: 'tollgate', address: new URL(gw.telemetry.metricsURL).host, labels: { namespace: 'tollgate-test', pod: 'tollgate-gateway-0' } }], [RULES.pathname]);
    const rules = (await prom.rules()).flatMap((g) => g.rules);
    alertExpr = rules.find((r) => r.name === 'TollgateSharedStoreDegraded')!.query;
  }, 60_000);

  afterAll(async () => {
    await prom?.stop();
    await gw?.stop();
    await redis?.close();
  });

  it('reads 0 while Redis answers; the alert is quiet', async () => {
    expect((await chat()).status).toBe(200);
    await prom.scraped();
    expect(await gauge()).toBe('0');
    expect(await prom.query(alertExpr)).toEqual([]);
  });

  it('flips to 1 with one log line when Redis dies, and the failure policy answers the limits', async () => {
    await redis.stop();
    await waitFor(async () => (await scrapedGauge()) === '1', 10_000, 'the gauge to read 1');
    expect((await chat()).status).toBe(200); // rate limits fail open
    await waitFor(async () => (await gauge()) === '1', 20_000, 'Prometheus to see the degraded store');
    // The alert's expression (its `for:` aside) selects this pod.
    const firing = await prom.query(alertExpr);
    expect(firing.map((s) => s.metric.pod)).toEqual(['tollgate-gateway-0']);
    const degraded = gw.logs.filter((l) => l.msg?.toString().startsWith('shared store degraded'));
    expect(degraded).toHaveLength(1);
    expect(degraded[0]).toMatchObject({ level: 40, sharedStore: 'redis' });
    const text = await (await fetch(`${gw.telemetry.metricsURL}/metrics`)).text();
    expect(Number(/^tollgate_shared_store_fallbacks_total (\d+)/m.exec(text)?.[1])).toBeGreaterThan(0);
  });

  it('evaluates every dashboard expression about the shared store with series', async () => {
    await prom.scraped();
    const dashboard = JSON.parse(await readFile(DASHBOARD, 'utf8'));
    const expressions: string[] = dashboard.panels.flatMap((p: any) => (p.targets ?? []).map((t: any) => t.expr)).filter((e: string) => SHARED_STORE.test(e));
    expect(expressions.length).toBeGreaterThanOrEqual(2);
    for (const expr of expressions) expect((await prom.query(grafana(expr))).length, expr).toBeGreaterThan(0);
  });

  it('returns to 0 with a recovery line once Redis is back', async () => {
    await redis.start();
    // The client reconnects on its own (backoff) and reports ready; a request is not needed.
    await waitFor(async () => (await scrapedGauge()) === '0', 15_000, 'the gauge to read 0 again');
    await waitFor(async () => (await gauge()) === '0', 20_000, 'Prometheus to see the store answer again');
    expect(await prom.query(alertExpr)).toEqual([]);
    const recovered = gw.logs.filter((l) => l.msg === 'shared store recovered');
    expect(recovered).toHaveLength(1);
    expect(recovered[0].degradedMs).toEqual(expect.any(Number));
    expect((await chat()).status).toBe(200);
  });
});
