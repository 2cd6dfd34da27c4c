// The account page's money in standalone mode (the manifest file, one process), over raw HTTP with the
// one-time sign-in link: a priced request's spend on the page — the month's against the plan's budget,
// the key's, the spend chart's table — is exactly what GET /usage says, in the currency, to the micro.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseMoney } from '../../gateway/src/limits/money.ts';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.ts';
import { account, API, model, startTestGateway, upstream, type TestGateway } from '../helpers/gateway.ts';

process.env.TEST_UPSTREAM_KEY = 'sk-upstream-secret';

let fake: FakeUpstream;
let gateway: TestGateway;

beforeAll(async () => {
  fake = await startFakeUpstream('up');
  const priced = model('gpt-priced', [{ upstream: 'up', model: 'upstream-model' }]);
  gateway = await startTestGateway(
    [
      upstream('up', fake.url),
      { ...priced, spec: { ...priced.spec, pricing: { inputPerMillion: '200.00', outputPerMillion: '300.00' } } },
      { apiVersion: API, kind: 'Plan', metadata: { name: 'metered' }, spec: { models: ['gpt-priced'], limits: { spendPerMonth: '0.01' } } },
      account('demo', 'metered'),
    ],
    // As `npm start` runs: a demo key and a one-time sign-in link for the demo account.
    { configFileExplicit: false, bootstrapDemoKey: true },
  );
});
afterAll(async () => {
  await gateway?.stop();
  await fake?.close();
});

const text = (html: string, pattern: RegExp) => html.match(pattern)?.[1].replace(/\s+/g, ' ').trim();

describe('money on the account page (standalone)', () => {
  it('the month\'s spend, the key\'s and the spend chart\'s are GET /usage\'s, exactly, with the currency', async () => {
    const answer = await gateway.client(gateway.demoKey!).chat.completions.create({ model: 'gpt-priced', messages: [{ role: 'user', content: 'hi' }] });
    const micros = answer.usage!.prompt_tokens * 200 + answer.usage!.completion_tokens * 300;
    const usage = (await (await fetch(`${gateway.telemetry.metricsURL}/usage`)).json()) as any;
    const spend: string = usage.accounts.demo.spend;
    // Under a cent: 0.0043, which two decimals would show as 0.00.
    expect(parseMoney(spend)).toBe(micros);
    expect(usage.currency).toBe('USD');

    const link = new URL(gateway.consoleLink!);
    const signIn = await fetch(`${gateway.url}${link.pathname}${link.search}`, { redirect: 'manual' });
    const cookie = signIn.headers.get('set-cookie')!.split(';')[0];
    const html = await (await fetch(`${gateway.url}/console/accounts/demo`, { headers: { cookie } })).text();

    expect(text(html, /<dd class="spend">([\s\S]*?)<\/dd>/)).toBe(`${spend} USD of 0.01 USD (${Math.floor((micros * 100) / 10_000)}%)`);
    // The demo key's row: its spend (it has no budget of its own).
    const row = text(html, /<tr>\s*<td>demo<br>([\s\S]*?)<\/tr>/)!;
    expect(row).toContain(`<td>${usage.keys.demo.spend} USD</td>`);
    const chart = html.slice(html.indexOf('Spend per day (USD)'));
    expect(chart).toContain(`<td>gpt-priced</td><td>${usage.models['gpt-priced'].spend}</td>`);
  });
});
