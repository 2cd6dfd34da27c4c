// A real Prometheus (Debian's package) for the observability suite: started on a free loopback port
// with its own temporary directory, scraping the given targets every second (OpenMetrics first, so
// exemplars are kept), with the given rule files loaded. Queried through its HTTP API.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import { freePort } from './ports.ts';
import { until } from './proxy-tools.ts';

export interface ScrapeTarget {
  job: string;
  /** host:port */
  address: string;
  /** Labels a Kubernetes service discovery would add (namespace, pod). */
  labels: Record<string, string>;
}

export interface PromSeries {
  metric: Record<string, string>;
  value: [number, string];
}

export interface RunningPrometheus {
  url: string;
  query(expr: string): Promise<PromSeries[]>;
  /** Exemplars of the series selected by `expr` over the last hour. */
  exemplars(expr: string): Promise<Array<{ seriesLabels: Record<string, string>; exemplars: Array<{ labels: Record<string, string>; value: string }> }>>;
  /** Rule groups as loaded, with each rule's health and last error. */
  rules(): Promise<Array<{ name: string; rules: Array<{ name: string; query: string; health: string; lastError?: string; type: string }> }>>;
  /** Waits until every target has been scraped successfully at least once after this call. */
  scraped(): Promise<void>;
  stop(): Promise<void>;
}

export const PROMETHEUS_BIN = process.env.PROMETHEUS_BIN ?? 'prometheus';
export const PROMTOOL_BIN = process.env.PROMTOOL_BIN ?? 'promtool';

export async function startPrometheus(targets: ScrapeTarget[], ruleFiles: string[] = []): Promise<RunningPrometheus> {
  const dir = await mkdtemp(path.join(tmpdir(), 'tollgate-prometheus-'));
  const config = {
    global: { scrape_interval: '1s', scrape_timeout: '1s', evaluation_interval: '1s' },
    rule_files: ruleFiles,
    scrape_configs: targets.map((t) => ({ job_name: t.job, static_configs: [{ targets: [t.address], labels: t.labels }] })),
  };
  const configFile = path.join(dir, 'prometheus.yml');
  await writeFile(configFile, stringify(config));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  let output = '';
  const child: ChildProcess = spawn(
    PROMETHEUS_BIN,
    [
      `--config.file=${configFile}`,
      `--storage.tsdb.path=${path.join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--enable-feature=exemplar-storage',
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  let exited = false;
  child.once('exit', () => (exited = true));

  const api = async (pathname: string, params: Record<string, string> = {}) => {
    const response = await fetch(`${url}${pathname}?${new URLSearchParams(params)}`);
    const body = (await response.json()) as { status: string; data: any; error?: string; errorType?: string };
    if (body.status !== 'success') throw new Error(`Prometheus ${pathname} ${JSON.stringify(params)}: ${body.errorType}: ${body.error}`);
    return body.data;
  };
  try {
    await until(async () => {
      if (exited) throw new Error(`prometheus exited:\n${output}`);
      return fetch(`${url}/-/ready`).then((r) => r.ok, () => false);
    }, 'prometheus to be ready', 30_000);
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }

  return {
    url,
    query: async (expr) => {
      const data = await api('/api/v1/query', { query: expr });
      return data.resultType === 'vector' ? data.result : data.resultType === 'scalar' ? [{ metric: {}, value: data.result }] : [];
    },
    exemplars: async (expr) => {
      const now = Date.now() / 1000;
      return api('/api/v1/query_exemplars', { query: expr, start: String(now - 3600), end: String(now + 60) });
    },
    rules: async () => (await api('/api/v1/rules')).groups,
    async scraped() {
      const since = Date.now();
      await until(async () => {
        const data = await api('/api/v1/targets', { state: 'active' });
        return data.activeTargets.length === targets.length && data.activeTargets.every((t: any) => t.health === 'up' && Date.parse(t.lastScrape) > since);
      }, 'a fresh scrape of every target', 20_000);
    },
    async stop() {
      child.kill('SIGTERM');
      await until(() => exited, 'prometheus to exit', 10_000).catch(() => child.kill('SIGKILL'));
      await rm(dir, { recursive: true, force: true });
    },
  };
}
