// Account: does its plan exist (ResolvedRefs; without one the account is on the free tier), and how
// much has it used this month, summed over every gateway replica (status.usage)? With a monthly token
// budget: what remains, when it resets, and BudgetExhausted once it is used up.
import { condition, readyFrom, type ConditionInput } from '../conditions.ts';
import { keyOf, type Obj } from '../informers.ts';
import { formatMicros, microsOf, nextMonthStart } from '../usage.ts';
import type { Evaluation, ReconcileContext } from './types.ts';

export function evaluateAccount(account: Obj, context: ReconcileContext): Evaluation {
  const planName = account.spec?.plan as string | undefined;
  const refs = planName ? [keyOf('Plan', planName)] : [];
  const plan = planName ? context.informers.get('Plan', planName) : undefined;
  const resolved = !planName
    ? condition('ResolvedRefs', 'True', 'NoPlan', 'no spec.plan: the free tier (service-test only)')
    : plan
      ? condition('ResolvedRefs', 'True', 'Resolved', `plan ${planName}`)
      : condition('ResolvedRefs', 'False', 'PlanNotFound', `Plan "${planName}" (spec.plan) does not exist; the account's keys get the free tier (service-test only) until it is created or spec.plan is fixed`);
  const budget = plan?.spec?.limits?.tokensPerMonth as number | undefined;
  const figures = context.usage();
  const now = context.now();
  const month = figures?.month ?? now.toISOString().slice(0, 7);
  const counted = figures?.accounts[account.metadata.name] ?? { inputTokens: 0, outputTokens: 0, requests: 0 };
  const used = counted.inputTokens + counted.outputTokens;
  const resetsAt = nextMonthStart(month);
  const spendBudget = plan?.spec?.limits?.spendPerMonth as string | undefined;
  const spent = microsOf(counted.spend);
  const usage = figures
    ? {
        month,
        inputTokens: counted.inputTokens,
        outputTokens: counted.outputTokens,
        requests: counted.requests,
        spend: `${formatMicros(spent)} ${figures.currency}`,
        ...(spendBudget ? { spendRemaining: `${spent > microsOf(spendBudget) ? '-' : ''}${formatMicros(spent > microsOf(spendBudget) ? spent - microsOf(spendBudget) : microsOf(spendBudget) - spent)} ${figures.currency}` } : {}),
        ...(budget || spendBudget ? { resetsAt } : {}),
        ...(budget ? { budgetRemaining: budget - used } : {}),
        summary: budget ? `${compact(used)}/${compact(budget)} tokens (${Math.floor((used / budget) * 100)}%)` : `${compact(used)} tokens, ${compact(counted.requests)} req`,
      }
    : account.status?.usage;
  let exhausted: ConditionInput;
  if (!budget) exhausted = condition('BudgetExhausted', 'False', 'NoBudget', planName ? `plan ${planName} sets no limits.tokensPerMonth` : 'the free tier sets no monthly token budget here');
  else if (!figures) exhausted = condition('BudgetExhausted', 'Unknown', 'UsageUnknown', 'no gateway replica has reported usage yet');
  else if (used >= budget) exhausted = condition('BudgetExhausted', 'True', 'BudgetUsedUp', `used ${used} of ${budget} tokens in ${month}; the gateway answers 429 until ${resetsAt}, or raise the plan's limits.tokensPerMonth`);
  else exhausted = condition('BudgetExhausted', 'False', 'WithinBudget', `used ${used} of ${budget} tokens in ${month}`);
  const own = [resolved, exhausted];
  const ready = readyFrom(own, { ResolvedRefs: 'True', BudgetExhausted: 'False' }, planName ? `on plan ${planName}` : 'on the free tier');
  // BudgetExhausted Unknown (no usage yet) does not make the account unready.
  const readyCondition = ready.status === 'Unknown' && exhausted.status === 'Unknown' && resolved.status === 'True' ? condition('Ready', 'True', 'Ready', `on plan ${planName}`) : ready;
  // The month ends: the budget resets, re-evaluate then even if no usage arrives.
  const requeueAfterMs = budget || spendBudget ? Math.max(1000, Date.parse(resetsAt) - now.getTime()) : undefined;
  return { fields: { usage }, conditions: [readyCondition, ...own], refs, requeueAfterMs };
}

function compact(n: number): string {
  if (n >= 1e9) return `${(n / 1e9).toFixed(1).replace(/\.0$/, '')}G`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(1).replace(/\.0$/, '')}M`;
  if (n >= 1e4) return `${(n / 1e3).toFixed(1).replace(/\.0$/, '')}k`;
  return String(n);
}
