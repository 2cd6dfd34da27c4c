// `tollgate usage`: this month's usage from a gateway's metrics port (GET /usage), as tables: per
// account, per API key and per model, each with tokens, requests and spend in the gateway's currency.
// In shared mode one replica's answer is the cluster's; otherwise it is that replica's own counts.
import { parseCommand, stringOption } from './args.ts';
import { CliError } from './errors.ts';
import { printHelp, type CliIO } from './io.ts';
import { USAGE_REPORT_USAGE } from './usage.ts';

interface Counts {
  inputTokens: number;
  outputTokens: number;
  requests: number;
  spend?: string;
  account?: string;
}

interface Report {
  replica: string;
  scope: 'replica' | 'cluster';
  month: string;
  currency?: string;
  accounts: Record<string, Counts>;
  keys?: Record<string, Counts>;
  models?: Record<string, Counts>;
}

export async function usageReport(args: string[], io: CliIO): Promise<number> {
  const { values, help } = parseCommand(args, { url: { type: 'string' }, output: { type: 'string', short: 'o' } }, USAGE_REPORT_USAGE, { min: 0, max: 0 });
  if (help) return printHelp(io, USAGE_REPORT_USAGE);
  const base = (stringOption(values, 'url') ?? io.env.TOLLGATE_METRICS_URL ?? `http://127.0.0.1:${io.env.TOLLGATE_METRICS_PORT ?? '9464'}`).replace(/\/+$/, '');
  let report: Report;
  try {
    const response = await fetch(`${base}/usage`, { signal: AbortSignal.timeout(10_000) });
    if (!response.ok) throw new Error(`GET ${base}/usage answered HTTP ${response.status}`);
    report = (await response.json()) as Report;
  } catch (error) {
    throw new CliError(`cannot read usage from ${base}/usage: ${(error as Error).message}`);
  }
  if (stringOption(values, 'output') === 'json') {
    io.out(`${JSON.stringify(report, null, 2)}\n`);
    return 0;
  }
  const currency = report.currency ?? 'USD';
  const scope = report.scope === 'cluster' ? 'the whole cluster' : `replica ${report.replica} only (sum every replica's for the total)`;
  io.out(`Usage in ${report.month} (UTC), ${scope}; spend in ${currency}\n\n`);
  io.out(table('ACCOUNT', report.accounts, false));
  if (report.keys && Object.keys(report.keys).length > 0) io.out(`\n${table('API KEY', report.keys, true)}`);
  if (report.models && Object.keys(report.models).length > 0) io.out(`\n${table('MODEL', report.models, false)}`);
  return 0;
}

function table(title: string, rows: Record<string, Counts>, withAccount: boolean): string {
  const header = [title, ...(withAccount ? ['ACCOUNT'] : []), 'REQUESTS', 'INPUT TOKENS', 'OUTPUT TOKENS', 'SPEND'];
  const lines = Object.entries(rows)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, c]) => [name, ...(withAccount ? [c.account ?? ''] : []), String(c.requests), String(c.inputTokens), String(c.outputTokens), c.spend ?? '0.00']);
  const all = [header, ...lines];
  const widths = header.map((_, column) => Math.max(...all.map((row) => row[column].length)));
  // Names left-aligned, figures right-aligned so their digits line up.
  return all.map((row) => row.map((cell, column) => (column === 0 || (withAccount && column === 1) ? cell.padEnd(widths[column]) : cell.padStart(widths[column]))).join('   ')).join('\n') + '\n';
}
