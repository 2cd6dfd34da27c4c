// This month's usage drawn on the server as SVG (no script, nothing for the CSP to allow): stacked
// bars per day, one colour per model, for requests and for tokens — and for spend when the usage data
// carries it (prices, issue 33). Each chart has a data table beside it for screen readers.
import { formatMoney } from '../../limits/money.ts';
import type { DayUsage, MonthUsage } from '../usage-days.ts';
import { html, type Html } from './html.ts';

const PALETTE = ['#2563eb', '#16a34a', '#d97706', '#9333ea', '#dc2626', '#0891b2', '#4b5563', '#db2777', '#65a30d', '#7c3aed', '#ea580c', '#0f766e', '#6b7280'];
const WIDTH = 640;
const HEIGHT = 160;

/** `shows`: which cells the data table lists (spend: the priced ones only). */
type Measure = { title: string; value: (u: DayUsage) => number; format: (n: number) => string; shows?: (u: DayUsage) => boolean };

const MEASURES: Measure[] = [
  { title: 'Requests per day', value: (u) => u.requests, format: (n) => String(n) },
  { title: 'Tokens per day (input + output)', value: (u) => u.inputTokens + u.outputTokens, format: (n) => n.toLocaleString('en') },
];
/** Spend in micros of the currency (integers: the bars' sums are exact), shown as the money it is. */
const spendMeasure = (currency: string): Measure => ({ title: `Spend per day (${currency})`, value: (u) => u.spend ?? 0, format: formatMoney, shows: (u) => u.spend !== undefined });

export function usageCharts(usage: MonthUsage, month: string, currency: string): Html {
  const [year, monthIndex] = month.split('-').map(Number);
  const daysInMonth = new Date(Date.UTC(year, monthIndex, 0)).getUTCDate();
  const models = [...new Set([...usage.values()].flatMap((m) => [...m.keys()]))].sort();
  if (models.length === 0) return html`<p>No requests this month yet (${month}).</p>`;
  const hasSpend = [...usage.values()].some((m) => [...m.values()].some((u) => u.spend !== undefined));
  const measures = hasSpend ? [...MEASURES, spendMeasure(currency)] : MEASURES;
  const colour = (model: string) => PALETTE[models.indexOf(model) % PALETTE.length];
  return html`
<ul class="legend" aria-label="Models">
${models.map((m) => html`<li><svg width="12" height="12" aria-hidden="true"><rect width="12" height="12" fill="${colour(m)}"/></svg> ${m}</li>`)}
</ul>
${measures.map((measure) => chart(measure, usage, models, daysInMonth, colour, month))}`;
}

function chart(measure: Measure, usage: MonthUsage, models: string[], days: number, colour: (m: string) => string, month: string): Html {
  let max = 0;
  for (const day of usage.values()) max = Math.max(max, [...day.values()].reduce((sum, u) => sum + measure.value(u), 0));
  const slot = WIDTH / days;
  const bars: Html[] = [];
  for (let d = 1; d <= days; d++) {
    let y = HEIGHT;
    for (const model of models) {
      const value = measure.value(usage.get(d)?.get(model) ?? { requests: 0, inputTokens: 0, outputTokens: 0 });
      if (value <= 0 || max === 0) continue;
      const h = (value / max) * (HEIGHT - 10);
      y -= h;
      bars.push(html`<rect x="${(d - 1) * slot + 1}" y="${y.toFixed(1)}" width="${Math.max(1, slot - 2).toFixed(1)}" height="${h.toFixed(1)}" fill="${colour(model)}"><title>${month}-${String(d).padStart(2, '0')} ${model}: ${measure.format(value)}</title></rect>`);
    }
  }
  const rows = [...usage.keys()].sort((a, b) => a - b).flatMap((d) => [...usage.get(d)!.entries()].filter(([, u]) => measure.shows?.(u) ?? true).map(([model, u]) => html`<tr><td>${month}-${String(d).padStart(2, '0')}</td><td>${model}</td><td>${measure.format(measure.value(u))}</td></tr>`));
  return html`<figure class="chart">
<figcaption>${measure.title} (highest: ${measure.format(max)})</figcaption>
<svg viewBox="0 0 ${WIDTH} ${HEIGHT + 14}" role="img" aria-label="${measure.title}, ${month}">
<line x1="0" y1="${HEIGHT}" x2="${WIDTH}" y2="${HEIGHT}" stroke="#9ca3af"/>
${bars}
<text x="0" y="${HEIGHT + 12}" font-size="10" fill="#4b5563">1</text>
<text x="${WIDTH - 12}" y="${HEIGHT + 12}" font-size="10" fill="#4b5563">${days}</text>
</svg>
<details><summary>${measure.title} as a table</summary>
<table aria-label="${measure.title}"><thead><tr><th scope="col">Day</th><th scope="col">Model</th><th scope="col">Value</th></tr></thead><tbody>${rows}</tbody></table>
</details>
</figure>`;
}
